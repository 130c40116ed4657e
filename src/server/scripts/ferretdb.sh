# kvperf server script: FerretDB (MongoDB wire protocol) on 127.0.0.1; after common.sh.
# Data dir: ferretdb.pid, ferretdb.log, state/, sqlite/ (the sqlite handler's files).
# Settings: KVPERF_FERRETDB_HANDLER   sqlite (default) | postgresql
#           KVPERF_FERRETDB_PG_URL    PostgreSQL URL, required for HANDLER=postgresql
#                                     (e.g. postgres://postgres@127.0.0.1:5432/kvperf)
#           KVPERF_FERRETDB_DEBUG_PORT  port of the debug/metrics HTTP listener on 127.0.0.1 (default: disabled)
#           KVPERF_FERRETDB_PG_ID_INDEX  none (default: stock FerretDB) | gin: before FerretDB starts, add an
#                             event trigger to the PostgreSQL database that gives every collection FerretDB
#                             creates a GIN (jsonb_path_ops) index on _jsonb->'_id'. FerretDB 1.24 looks
#                             records up by `_jsonb->'_id' @> $1` (backends/postgresql/query.go,
#                             filterEqual), which its own btree _id index cannot serve: without it every
#                             find or update by _id scans the whole collection (171 ms per read at 40 k
#                             records vs 1.0 ms with it). Needs a superuser in KVPERF_FERRETDB_PG_URL.
# Environment only: KVPERF_FERRETDB_VERSION (Go module version, default v1.24.0).
# Install: built with Go from the Go module proxy into $KVPERF_CACHE/servers/ferretdb-<version>/bin.

PROCESS=ferretdb
VERSION=${KVPERF_FERRETDB_VERSION:-v1.24.0}
INST=$CACHE/servers/ferretdb-$VERSION
BIN=$INST/bin/ferretdb

installed() { [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -q "version: $VERSION"; }

do_install() {
    if installed; then echo "$name: installed version=$VERSION bin=$BIN (cached)"; return 0; fi
    own_cache_file "$CACHE/servers/.ferretdb-$VERSION.lock"
    own_cache_file "$CACHE/servers/ferretdb-$VERSION-build.log"
    command -v go >/dev/null 2>&1 || die "the Go toolchain (go) is not on PATH; it is needed to build FerretDB $VERSION"
    mkdir -p "$CACHE/servers"
    exec 9>>"$CACHE/servers/.ferretdb-$VERSION.lock"
    flock 9
    if installed; then echo "$name: installed version=$VERSION bin=$BIN (built concurrently)"; exec 9>&-; return 0; fi
    # built whole in $tmp, then renamed to $INST: nothing at $INST (a binary of another version, a
    # user's bin/ferretdb.tmp) is ever replaced
    own_install_dir "$INST"
    local t0 tmp log
    t0=$(now)
    tmp=$(new_install_dir "$INST")
    log=$CACHE/servers/ferretdb-$VERSION-build.log
    # `go install ...@VERSION` is refused by the module proxy (403 on the version list), so build
    # through a wrapper module; `go mod vendor` lets us supply build/version/version.txt, without
    # which the binary panics at start.
    if ! (
        set -e
        mkdir "$tmp/build"; cd "$tmp/build"
        export GOFLAGS=-buildvcs=false GOWORK=off GO111MODULE=on
        go mod init kvperf.local/ferretdb-build
        printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/FerretDB/FerretDB/cmd/ferretdb"\n' > tools.go
        go get "github.com/FerretDB/FerretDB@$VERSION"
        go mod tidy
        go mod vendor
        echo "$VERSION" > vendor/github.com/FerretDB/FerretDB/build/version/version.txt
        mkdir "$tmp/bin"
        go build -mod=vendor -trimpath -o "$tmp/bin/ferretdb" github.com/FerretDB/FerretDB/cmd/ferretdb
        "$tmp/bin/ferretdb" --version | grep -q "version: $VERSION"
    ) >"$log" 2>&1; then
        rm -rf "$tmp"
        die "build of FerretDB $VERSION failed, see $log"
    fi
    rm -rf "$tmp/build"; chmod 755 "$tmp"
    place_install "$tmp" "$INST"
    exec 9>&-   # release the lock (a server started by this shell must not inherit it)
    echo "$name: installed version=$VERSION bin=$BIN elapsed=$(since "$t0")s"
}

# Send an OP_MSG {hello: 1, $db: "admin"} and check that the reply header carries opcode 2013 (OP_MSG).
answers() {
    local reply
    reply=$(timeout 5 bash -c '
        exec 3<>"/dev/tcp/$0/$1" || exit 1
        printf "\x34\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\xdd\x07\x00\x00\x00\x00\x00\x00\x00\x1f\x00\x00\x00\x10hello\x00\x01\x00\x00\x00\x02\$db\x00\x06\x00\x00\x00admin\x00\x00" >&3
        head -c 16 <&3 | od -An -tx1' "$HOST" "$PORT" 2>/dev/null) || return 1
    # shellcheck disable=SC2116,SC2086 # squeeze whitespace
    reply=$(echo $reply)
    [ "${reply##* dd 07 00 00}" = "" ] && [ "${#reply}" -eq 47 ]
}

# The event trigger of KVPERF_FERRETDB_PG_ID_INDEX=gin (idempotent). It must exist before FerretDB
# starts: FerretDB's pooled connections keep the plans they prepared without the index.
add_pg_id_index() {
    command -v psql >/dev/null || die "KVPERF_FERRETDB_PG_ID_INDEX=gin needs psql (package postgresql-client)"
    # The password goes in PGPASSWORD, not on psql's command line (ps shows it); the userinfo ends at
    # the last @. psql refuses pgx pool parameters such as ?pool_max_conns=: no query string either.
    local url=$KVPERF_FERRETDB_PG_URL scheme rest user pw=
    scheme=${url%%://*}; rest=${url#*://}
    if [[ $rest == *@* ]]; then
        user=${rest%@*}; rest=${rest##*@}
        if [[ $user == *:* ]]; then pw=${user#*:}; user=${user%%:*}; fi
        # libpq decodes a URL's %XX escapes; PGPASSWORD is taken as it is
        pw=${pw//\\/\\\\}; printf -v pw '%b' "${pw//%/\\x}"
        url="$scheme://$user@${rest%%\?*}"
    else
        url="$scheme://${rest%%\?*}"
    fi
    # a connect timeout: a PostgreSQL that accepts and never answers held the start to its limit
    PGCONNECT_TIMEOUT=5 PGPASSWORD=$pw psql "$url" -q -v ON_ERROR_STOP=1 >>"$LOG" 2>&1 <<'SQL' || die "cannot add the _id index trigger to PostgreSQL (see $LOG)"
CREATE OR REPLACE FUNCTION kvperf_ferretdb_id_gin() RETURNS event_trigger LANGUAGE plpgsql AS $f$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.objid, i.indrelid::regclass AS tbl
           FROM pg_event_trigger_ddl_commands() c JOIN pg_index i ON i.indexrelid = c.objid
           WHERE c.command_tag = 'CREATE INDEX'
             AND pg_get_indexdef(c.objid) LIKE '%USING btree (((_jsonb -> ''_id''::text)))'
             AND i.indrelid::regclass::text NOT LIKE '%_ferretdb_database_metadata%'
  LOOP
    EXECUTE format('CREATE INDEX %I ON %s USING gin ((_jsonb -> ''_id'') jsonb_path_ops)',
                   'kvperf_id_gin_' || r.objid, r.tbl);
  END LOOP;
END $f$;
DROP EVENT TRIGGER IF EXISTS kvperf_ferretdb_id_gin;
CREATE EVENT TRIGGER kvperf_ferretdb_id_gin ON ddl_command_end WHEN TAG IN ('CREATE INDEX')
  EXECUTE FUNCTION kvperf_ferretdb_id_gin();
SQL
}

do_start() {
    need_dir
    local p t0 handler dbg args
    if p=$(running_pid); then
        answers || die "already running (pid $p) but not answering on $HOST:$PORT, see $LOG"
        echo "$name: already running pid=$p addr=$HOST:$PORT"; return 0
    fi
    installed || do_install >/dev/null
    port_open "$HOST" "$PORT" && die "port $HOST:$PORT is already in use by another process"
    handler=${KVPERF_FERRETDB_HANDLER:-sqlite}
    # FerretDB rewrites state/state.json at every start, through a link there (pass 12 part B).
    own_dirs "$DIR/state"
    own_cache_file "$DIR/state/state.json"
    mkdir -p "$DIR/state"
    args=(--listen-addr="$HOST:$PORT" --state-dir="$DIR/state" --telemetry=disable --log-level=info)
    case $handler in
        sqlite) own_dirs "$DIR/sqlite"; mkdir -p "$DIR/sqlite"; args+=(--handler=sqlite --sqlite-url="file:$DIR/sqlite/") ;;
        postgresql)
            [ -n "${KVPERF_FERRETDB_PG_URL:-}" ] || die "KVPERF_FERRETDB_HANDLER=postgresql needs KVPERF_FERRETDB_PG_URL"
            # FerretDB starts even when PostgreSQL is down (then every request fails): check it first
            # host:port follows the last @ (a password may hold @, : and /) and ends at / or ?
            local hp h pp
            hp=${KVPERF_FERRETDB_PG_URL#*://}; hp=${hp##*@}; hp=${hp%%[/?]*}
            h=${hp%:*}; pp=${hp##*:}; [ "$pp" != "$hp" ] || pp=5432
            if [ -n "$h" ] && ! port_open "$h" "$pp"; then die "PostgreSQL at $h:$pp (KVPERF_FERRETDB_PG_URL) is not reachable"; fi
            case ${KVPERF_FERRETDB_PG_ID_INDEX:-none} in
                none) ;;
                gin) add_pg_id_index ;;
                *) die "unknown KVPERF_FERRETDB_PG_ID_INDEX '$KVPERF_FERRETDB_PG_ID_INDEX' (none|gin)" ;;
            esac
            # The URL may hold a password: FerretDB reads it from its environment, which ps does not show.
            export FERRETDB_POSTGRESQL_URL=$KVPERF_FERRETDB_PG_URL
            args+=(--handler=postgresql) ;;
        *) die "unknown KVPERF_FERRETDB_HANDLER '$handler' (sqlite|postgresql)" ;;
    esac
    dbg=${KVPERF_FERRETDB_DEBUG_PORT:-}
    if [ -n "$dbg" ]; then args+=(--debug-addr="$HOST:$dbg"); else args+=(--debug-addr=-); fi
    t0=$(now)
    : > "$LOG"
    LAUNCHED=1
    # setsid: detach from the caller's session; the inner bash writes its own pid then execs ferretdb,
    # so the pid file holds the server pid. stdio go to the log so the caller's pipes are released.
    setsid bash -c 'echo $$ > "$0"; exec "$@"' "$PIDF" "$BIN" "${args[@]}" >>"$LOG" 2>&1 </dev/null &
    while :; do
        sleep 0.2
        if ! p=$(running_pid); then
            [ -s "$PIDF" ] || continue
            sleep 0.5; running_pid >/dev/null || die "exited during start, see $LOG: $(tail -n 1 "$LOG")"
        fi
        answers && break
        [ "$(since "$t0" | cut -d. -f1)" -lt "$TIMEOUT" ] || die "not answering on $HOST:$PORT after ${TIMEOUT}s, see $LOG"
    done
    echo "$name: started pid=$p addr=$HOST:$PORT handler=$handler version=$VERSION elapsed=$(since "$t0")s"
}

stop_server() { kill -TERM "$1" 2>/dev/null || true; }
