/*
 * kvperf's flat C face of WiredTiger. WiredTiger's API is tables of
 * function pointers inside its handle structs (conn->open_session,
 * cursor->search...) with variadic set_key/get_value; these functions call
 * them so that Rust needs only opaque pointers and plain signatures.
 *
 * Every function returns WiredTiger's return code (0, a WT_* code or an
 * errno). Errors WiredTiger reports through its event handler are kept per
 * thread for kvperf_wt_last_error() instead of being printed, so kvperf can
 * show them as one line; errors raised on WiredTiger's own threads
 * (eviction, checkpoint server), which never run this file's functions,
 * are printed on stderr as WiredTiger would.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wiredtiger.h>

static __thread int capture; /* set once this thread has called the shim */
static __thread char last_error[1024];

#define BEGIN do { capture = 1; last_error[0] = '\0'; } while (0)

/* Drops WiredTiger's "[secs:usecs][pid:tid], " prefix. */
static const char *strip_prefix(const char *m) {
    while (m[0] == '[') {
        const char *end = strchr(m, ']');
        if (end == NULL)
            break;
        m = end + 1;
    }
    if (m[0] == ',')
        m++;
    while (m[0] == ' ')
        m++;
    return m;
}

static int on_error(WT_EVENT_HANDLER *h, WT_SESSION *s, int error, const char *message) {
    (void)h; (void)s; (void)error;
    if (!capture) {
        fprintf(stderr, "wiredtiger: %s\n", message);
        return 0;
    }
    /* Keep the first error of a call: later ones are usually its echoes. */
    if (last_error[0] == '\0')
        snprintf(last_error, sizeof last_error, "%s", strip_prefix(message));
    return 0;
}

static int on_message(WT_EVENT_HANDLER *h, WT_SESSION *s, const char *message) {
    (void)h; (void)s;
    /* Informational (verbose) messages: stderr, never kvperf's stdout. */
    fprintf(stderr, "wiredtiger: %s\n", message);
    return 0;
}

static WT_EVENT_HANDLER handler = { on_error, on_message, NULL, NULL };

const char *kvperf_wt_last_error(void) { return last_error; }
const char *kvperf_wt_strerror(int r) { return wiredtiger_strerror(r); }
const char *kvperf_wt_version(void) { return wiredtiger_version(NULL, NULL, NULL); }

int kvperf_wt_open(const char *home, const char *config, WT_CONNECTION **conn) {
    BEGIN;
    *conn = NULL;
    return wiredtiger_open(home, &handler, config, conn);
}

/* Checks a wiredtiger_open configuration without opening anything. */
int kvperf_wt_config_validate(const char *config) {
    BEGIN;
    return wiredtiger_config_validate(NULL, &handler, "wiredtiger_open", config);
}

/*
 * WiredTiger's own reading of a configuration string, one level of it at a
 * time (a structure's value is read again with a parser of its own): kvperf
 * checks the paths in it as WiredTiger will read them, every quoting and
 * separator included.
 */
int kvperf_wt_config_parser_open(const char *config, size_t len, WT_CONFIG_PARSER **parser) {
    BEGIN;
    *parser = NULL;
    return wiredtiger_config_parser_open(NULL, config, len, parser);
}

int kvperf_wt_config_parser_next(WT_CONFIG_PARSER *parser, const char **key, size_t *key_len,
  const char **value, size_t *value_len, int *structure) {
    WT_CONFIG_ITEM k, v;
    int r;
    BEGIN;
    if ((r = parser->next(parser, &k, &v)) != 0)
        return r;
    *key = k.str;
    *key_len = k.len;
    *value = v.str;
    *value_len = v.len;
    *structure = v.type == WT_CONFIG_ITEM_STRUCT;
    return 0;
}

int kvperf_wt_config_parser_close(WT_CONFIG_PARSER *parser) {
    BEGIN;
    return parser->close(parser);
}

int kvperf_wt_close(WT_CONNECTION *conn, const char *config) {
    BEGIN;
    return conn->close(conn, config);
}

int kvperf_wt_open_session(WT_CONNECTION *conn, const char *config, WT_SESSION **session) {
    BEGIN;
    *session = NULL;
    return conn->open_session(conn, NULL, config, session);
}

int kvperf_wt_session_close(WT_SESSION *s) {
    BEGIN;
    return s->close(s, NULL);
}

int kvperf_wt_create(WT_SESSION *s, const char *uri, const char *config) {
    BEGIN;
    return s->create(s, uri, config);
}

int kvperf_wt_checkpoint(WT_SESSION *s, const char *config) {
    BEGIN;
    return s->checkpoint(s, config);
}

int kvperf_wt_compact(WT_SESSION *s, const char *uri, const char *config) {
    BEGIN;
    return s->compact(s, uri, config);
}

int kvperf_wt_begin(WT_SESSION *s, const char *config) {
    BEGIN;
    return s->begin_transaction(s, config);
}

int kvperf_wt_commit(WT_SESSION *s, const char *config) {
    BEGIN;
    return s->commit_transaction(s, config);
}

/* Keeps the thread's last error, as kvperf_wt_reset does. */
int kvperf_wt_rollback(WT_SESSION *s) {
    return s->rollback_transaction(s, NULL);
}

int kvperf_wt_open_cursor(WT_SESSION *s, const char *uri, const char *config, WT_CURSOR **c) {
    BEGIN;
    *c = NULL;
    return s->open_cursor(s, uri, NULL, config, c);
}

int kvperf_wt_cursor_close(WT_CURSOR *c) {
    BEGIN;
    return c->close(c);
}

/* Keeps the thread's last error: it runs after a failed call, before the
 * caller reads that call's message. */
int kvperf_wt_reset(WT_CURSOR *c) {
    return c->reset(c);
}

static void set_key(WT_CURSOR *c, const void *k, size_t kl) {
    WT_ITEM key;
    memset(&key, 0, sizeof key);
    key.data = k;
    key.size = kl;
    c->set_key(c, &key);
}

static void set_value(WT_CURSOR *c, const void *v, size_t vl) {
    WT_ITEM value;
    memset(&value, 0, sizeof value);
    value.data = v;
    value.size = vl;
    c->set_value(c, &value);
}

/* The value under a positioned cursor; valid until the cursor moves. */
int kvperf_wt_value(WT_CURSOR *c, const void **v, size_t *vl) {
    WT_ITEM value;
    int r;
    BEGIN;
    if ((r = c->get_value(c, &value)) != 0)
        return r;
    *v = value.data;
    *vl = value.size;
    return 0;
}

/* The key and value under a positioned cursor; valid until the cursor moves. */
int kvperf_wt_entry(WT_CURSOR *c, const void **k, size_t *kl, const void **v, size_t *vl) {
    WT_ITEM key;
    int r;
    BEGIN;
    if ((r = c->get_key(c, &key)) != 0)
        return r;
    *k = key.data;
    *kl = key.size;
    return kvperf_wt_value(c, v, vl);
}

/* search: positions the cursor on `k` and returns its value. */
int kvperf_wt_search(WT_CURSOR *c, const void *k, size_t kl, const void **v, size_t *vl) {
    int r;
    BEGIN;
    set_key(c, k, kl);
    if ((r = c->search(c)) != 0)
        return r;
    return kvperf_wt_value(c, v, vl);
}

/* Positions the cursor on the first key >= `k`: WT_NOTFOUND when there is none. */
int kvperf_wt_seek(WT_CURSOR *c, const void *k, size_t kl) {
    int r, exact;
    BEGIN;
    set_key(c, k, kl);
    if ((r = c->search_near(c, &exact)) != 0)
        return r;
    return exact < 0 ? c->next(c) : 0;
}

/* Positions the cursor on the first key of all (after a reset). */
int kvperf_wt_first(WT_CURSOR *c) {
    int r;
    BEGIN;
    if ((r = c->reset(c)) != 0)
        return r;
    return c->next(c);
}

int kvperf_wt_next(WT_CURSOR *c) {
    BEGIN;
    return c->next(c);
}

/* insert (overwrites with an overwrite=true cursor) */
int kvperf_wt_insert(WT_CURSOR *c, const void *k, size_t kl, const void *v, size_t vl) {
    BEGIN;
    set_key(c, k, kl);
    set_value(c, v, vl);
    return c->insert(c);
}

/* update of the record the cursor is positioned on (after a search) */
int kvperf_wt_update_here(WT_CURSOR *c, const void *v, size_t vl) {
    BEGIN;
    set_value(c, v, vl);
    return c->update(c);
}

/* remove: WT_NOTFOUND for a missing key when the cursor has overwrite=false */
int kvperf_wt_remove(WT_CURSOR *c, const void *k, size_t kl) {
    BEGIN;
    set_key(c, k, kl);
    return c->remove(c);
}

/* The connection statistics kvperf's engine events read, in this order
 * (kvperf_wt_event_stats); the Rust side names them in the same order. */
static const int event_stats[] = {
    WT_STAT_CONN_TXN_CHECKPOINT_RUNNING,      /* a checkpoint runs now (0/1) */
    WT_STAT_CONN_TXN_CHECKPOINT,              /* checkpoints taken */
    WT_STAT_CONN_BLOCK_BYTE_WRITE_CHECKPOINT, /* bytes written for checkpoints */
    WT_STAT_CONN_CACHE_EVICTION_APP,          /* pages evicted by application threads */
    WT_STAT_CONN_CACHE_BYTES_INUSE,
    WT_STAT_CONN_CACHE_BYTES_DIRTY,
    WT_STAT_CONN_CACHE_BYTES_MAX,
};

int kvperf_wt_event_stats_count(void) {
    return (int)(sizeof event_stats / sizeof event_stats[0]);
}

/* Reads event_stats into values[0..n) through a statistics cursor (the
 * connection must be open with statistics enabled). */
int kvperf_wt_event_stats(WT_SESSION *s, int64_t *values, int n) {
    WT_CURSOR *c;
    const char *desc, *pvalue;
    int i, r, closed;
    BEGIN;
    if (n > kvperf_wt_event_stats_count())
        return EINVAL;
    if ((r = s->open_cursor(s, "statistics:", NULL, NULL, &c)) != 0)
        return r;
    for (i = 0; i < n; i++) {
        c->set_key(c, event_stats[i]);
        if ((r = c->search(c)) != 0)
            break;
        if ((r = c->get_value(c, &desc, &pvalue, &values[i])) != 0)
            break;
    }
    closed = c->close(c);
    return r != 0 ? r : closed;
}
