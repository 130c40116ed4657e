# kvperf server script: PostgreSQL on 127.0.0.1 (Debian package postgresql); after common.sh.
# Data dir: pgdata/ (the cluster, owned by the server user, mode 700; postmaster.pid inside),
#   pgsocket/ (unix socket directory), postgres.log (server log).
# Settings: KVPERF_PG_SHARED_BUFFERS (default 128MB), KVPERF_PG_MAX_CONNECTIONS (default 100),
#   KVPERF_PG_SYNC_COMMIT on|off|local|remote_write|remote_apply (default on), KVPERF_PG_FSYNC on|off
#   (default on), KVPERF_PG_EXTRA_CONF (extra postgresql.conf lines, newline separated, applied at each start).
# Environment only: KVPERF_PG_BIN (PostgreSQL bin dir, default: newest /usr/lib/postgresql/*/bin),
#   KVPERF_PG_OS_USER (OS user that runs the server when we are root; default postgres, else kvperf-pg is created).
# Superuser `postgres`, database `kvperf`, trust auth from 127.0.0.1/32 (and the unix socket) only.

PROCESS=postgres
DB=kvperf
RUNNING_FACTS=" db=$DB"

find_bin() {
    if [ -n "${KVPERF_PG_BIN:-}" ]; then PGBIN=$KVPERF_PG_BIN; [ -x "$PGBIN/initdb" ]; return; fi
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ]
}
version() { "$PGBIN/postgres" --version | awk '{ print $3 }'; }

do_install() {
    if find_bin && command -v psql >/dev/null 2>&1; then
        echo "$name: installed version=$(version) bin=$PGBIN (already present)"; return 0
    fi
    [ -n "${KVPERF_PG_BIN:-}" ] && die "KVPERF_PG_BIN=$KVPERF_PG_BIN has no initdb"
    local t0; t0=$(now)
    apt_install "$CACHE/servers/postgres-apt.log" postgresql postgresql-client
    find_bin || die "no /usr/lib/postgresql/*/bin/initdb after apt-get install postgresql"
    echo "$name: installed version=$(version) bin=$PGBIN elapsed=$(since "$t0")s"
}

# as_user CMD...: run CMD as the server's OS user (root may not run initdb/postgres)
as_user() { if [ -n "$OSUSER" ]; then runuser -u "$OSUSER" -- "$@"; else "$@"; fi; }

setup_user() {
    OSUSER=
    [ "$(id -u)" = 0 ] || return 0
    OSUSER=${KVPERF_PG_OS_USER:-postgres}
    if ! id "$OSUSER" >/dev/null 2>&1; then
        [ -z "${KVPERF_PG_OS_USER:-}" ] || die "OS user $OSUSER does not exist"
        OSUSER=kvperf-pg
        id "$OSUSER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$OSUSER" \
            || die "cannot create the unprivileged OS user $OSUSER"
    fi
}

# The server's OS user must pass (search, x) every directory on the way to DIR. kvperf changes no
# directory it did not make (it did `chmod o+x` a user's parent, said in a note): one it cannot pass
# is refused, naming it, before anything is made (do_check) and again at the start. The user
# setup_user would make does not exist yet: it would have no rights of its own, as nobody.
ensure_traversable() {
    [ "$(id -u)" = 0 ] || return 0
    local who=${OSUSER:-${KVPERF_PG_OS_USER:-postgres}} d=/ comp rest
    id "$who" >/dev/null 2>&1 || who=nobody
    rest=$(realpath -s -m -- "$DIR"); rest=${rest#/}
    while [ -d "$d" ]; do
        runuser -u "$who" -- test -x "$d" \
            || refuse "'$d' does not let $who, the OS user PostgreSQL runs as, pass to $DIR (search permission), and kvperf changes no directory it did not make: give a --dir it can reach (the default is /var/lib/kvperf/servers/postgres), or let it pass yourself (chmod o+x '$d', or setfacl -m u:$who:x '$d')"
        [ -n "$rest" ] || break
        comp=${rest%%/*}; rest=${rest#"$comp"}; rest=${rest#/}
        d=${d%/}/$comp
    done
}
do_check() { need_dir; ensure_traversable; }

dir_layout() { PGDATA_DIR=$DIR/pgdata; PIDF=$PGDATA_DIR/postmaster.pid; SOCK=$DIR/pgsocket; LOG=$DIR/postgres.log; }
# postmaster.pid is PostgreSQL's own lock on its data directory: never removed here
forget_pid() { :; }
# SIGKILL would leave the postmaster's backends and shared memory behind
kill_stuck() { :; }

answers() {
    [ -n "${PGBIN:-}" ] || find_bin || die "PostgreSQL binaries not found"
    PGCONNECT_TIMEOUT=5 "$PGBIN/pg_isready" -q -h "$HOST" -p "$PORT" -d postgres -U postgres
}

psql_() { PGCONNECT_TIMEOUT=5 psql -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PORT" -U postgres "$@"; }

write_conf() {
    local sockdir=$SOCK
    # unix socket paths are limited to 107 bytes; go TCP-only if DIR is too deep
    if [ $(( ${#SOCK} + 18 )) -gt 107 ]; then sockdir=; note "DIR too long for a unix socket; TCP only"; fi
    own_cache_file "$PGDATA_DIR/kvperf.conf"
    {
        echo "# written by kvperf at each start; overrides postgresql.conf"
        echo "listen_addresses = '$HOST'"
        echo "port = $PORT"
        echo "unix_socket_directories = '$sockdir'"
        echo "shared_buffers = '${KVPERF_PG_SHARED_BUFFERS:-128MB}'"
        echo "max_connections = ${KVPERF_PG_MAX_CONNECTIONS:-100}"
        echo "synchronous_commit = '${KVPERF_PG_SYNC_COMMIT:-on}'"
        echo "fsync = '${KVPERF_PG_FSYNC:-on}'"
        [ -z "${KVPERF_PG_EXTRA_CONF:-}" ] || printf '%s\n' "$KVPERF_PG_EXTRA_CONF"
    } > "$PGDATA_DIR/kvperf.conf"
    [ -z "$OSUSER" ] || chown "$OSUSER" "$PGDATA_DIR/kvperf.conf"
}

init_cluster() {
    if [ -f "$PGDATA_DIR/PG_VERSION" ]; then
        local have want
        have=$(cat "$PGDATA_DIR/PG_VERSION"); want=$(version | cut -d. -f1)
        [ "$have" = "$want" ] || die "$PGDATA_DIR is a PostgreSQL $have cluster but the server is $want; remove $DIR to re-create it"
        return 0
    fi
    if [ -d "$PGDATA_DIR" ] && [ -n "$(ls -A "$PGDATA_DIR")" ]; then
        die "$PGDATA_DIR exists and is not a cluster (failed initdb?); remove it"
    fi
    # Made whole in $NEW, then renamed: an interrupted start (its initdb stopped after PG_VERSION)
    # left a cluster without kvperf's settings, on port 5432, and the next start waited 120 s.
    # $NEW and its log are fresh names (mktemp): at a fixed name, `rm -rf` took a user's directory
    # and `>` overwrote a user's initdb.log (pass 14). One an interrupted start left stays.
    local NEW ILOG
    NEW=$(mktemp -d "$DIR/pgdata.kvperf-initdb.XXXXXX")
    ILOG=$NEW.log
    ( set -C; : > "$ILOG" ) 2>/dev/null || { rmdir "$NEW"; die "cannot make initdb's log $ILOG (something is there)"; }
    [ -z "$OSUSER" ] || chown "$OSUSER:" "$NEW"
    chmod 700 "$NEW"
    if ! as_user "$PGBIN/initdb" -D "$NEW" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >>"$ILOG" 2>&1; then
        rm -rf "$NEW"; die "initdb failed, see $ILOG"
    fi
    rm -f "$ILOG"
    printf '# written by kvperf: trust, local socket and 127.0.0.1 only\nlocal all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n' \
        > "$NEW/pg_hba.conf"
    echo "include_if_exists = 'kvperf.conf'" >> "$NEW/postgresql.conf"
    [ -z "$OSUSER" ] || chown "$OSUSER:" "$NEW/pg_hba.conf"
    rmdir "$PGDATA_DIR" 2>/dev/null || true
    mv -nT "$NEW" "$PGDATA_DIR"   # never over a directory made meanwhile
    [ ! -e "$NEW" ] || die "cannot rename $NEW to $PGDATA_DIR (something is there)"
}

do_start() {
    need_dir
    local p t0 t1 inited=no
    find_bin || do_install >/dev/null
    find_bin || die "PostgreSQL binaries not found"
    if p=$(running_pid); then
        answers || die "already running (pid $p) but not answering on $HOST:$PORT, see $LOG"
        echo "$name: already running pid=$p addr=$HOST:$PORT db=$DB"; return 0
    fi
    port_open "$HOST" "$PORT" && die "port $HOST:$PORT is already in use by another process"
    setup_user
    mkdir -p "$DIR"
    DIR=$(cd -P "$DIR" && pwd -P); dir_layout
    ensure_traversable
    t0=$(now)
    [ -f "$PGDATA_DIR/PG_VERSION" ] || inited=yes
    init_cluster
    mkdir -p "$SOCK"; touch "$LOG"
    [ -z "$OSUSER" ] || chown "$OSUSER:" "$SOCK" "$LOG"
    write_conf
    t1=$(now)
    LAUNCHED=1
    as_user "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$LOG" -w -t "$TIMEOUT" start >/dev/null 2>&1 \
        || die "pg_ctl start failed, see $LOG: $(tail -n 1 "$LOG")"
    while ! answers; do
        sleep 0.2
        [ "$(since "$t1" | cut -d. -f1)" -lt "$TIMEOUT" ] || die "not answering on $HOST:$PORT after ${TIMEOUT}s, see $LOG"
    done
    if [ -z "$(psql_ -d postgres -tAc "select 1 from pg_database where datname = '$DB'")" ]; then
        psql_ -d postgres -c "CREATE DATABASE $DB" >/dev/null || die "CREATE DATABASE $DB failed"
    fi
    p=$(running_pid) || die "server answers but $PGDATA_DIR/postmaster.pid names no live postgres"
    echo "$name: started pid=$p addr=$HOST:$PORT db=$DB user=postgres initdb=$inited version=$(version) elapsed=$(since "$t0")s"
}

stop_server() {
    find_bin || die "PostgreSQL binaries not found"
    setup_user
    # pg_ctl returns once postmaster.pid is gone, a moment before the process itself exits
    as_user "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 60 stop >/dev/null 2>&1 || kill -INT "$1" 2>/dev/null || true   # SIGINT = fast shutdown
}
