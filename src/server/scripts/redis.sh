# kvperf server script: Redis on 127.0.0.1 (Debian package redis-server); after common.sh.
# Data dir: redis.pid, redis.log and the append-only files.
# Settings: KVPERF_PERSIST  0 (default): --save '' --appendonly no; 1: appendonly yes, appendfsync everysec
# Install: apt-get install redis-server (its log in $KVPERF_CACHE/servers/redis-apt.log).

PROCESS=redis-server

version() { redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p'; }

do_install() {
    if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
        echo "$name: installed version=$(version) (already present)"; return 0
    fi
    local t0; t0=$(now)
    apt_install "$CACHE/servers/redis-apt.log" redis-server
    command -v redis-server >/dev/null 2>&1 || die "redis-server still not on PATH after apt-get install"
    echo "$name: installed version=$(version) elapsed=$(since "$t0")s"
}

answers() { [ "$(timeout 5 redis-cli -h "$HOST" -p "$PORT" PING 2>/dev/null)" = PONG ]; }

do_start() {
    need_dir
    local p t0 persist
    if p=$(running_pid); then
        answers || die "already running (pid $p) but not answering PING on $HOST:$PORT, see $LOG"
        echo "$name: already running pid=$p addr=$HOST:$PORT"; return 0
    fi
    command -v redis-server >/dev/null 2>&1 || do_install >/dev/null
    port_open "$HOST" "$PORT" && die "port $HOST:$PORT is already in use by another process"
    mkdir -p "$DIR"
    DIR=$(cd -P "$DIR" && pwd -P)   # redis needs absolute paths once daemonized
    dir_layout
    case ${KVPERF_PERSIST:-0} in
        1) persist=(--appendonly yes --appendfsync everysec --appenddirname appendonlydir) ;;
        0) persist=(--appendonly no) ;;
        *) die "KVPERF_PERSIST must be 0 or 1" ;;
    esac
    rm -f "$PIDF"
    t0=$(now)
    LAUNCHED=1
    redis-server --bind "$HOST" --port "$PORT" --protected-mode yes \
        --daemonize yes --pidfile "$PIDF" --logfile "$LOG" --dir "$DIR" \
        --save '' "${persist[@]}" </dev/null >/dev/null 2>&1 \
        || die "redis-server failed to start, see $LOG: $(tail -n 1 "$LOG" 2>/dev/null)"
    while ! answers; do
        sleep 0.1
        if ! running_pid >/dev/null && [ "$(since "$t0" | cut -d. -f1)" -ge 3 ]; then
            die "redis-server is not running, see $LOG: $(tail -n 1 "$LOG" 2>/dev/null)"
        fi
        [ "$(since "$t0" | cut -d. -f1)" -lt "$TIMEOUT" ] || die "no PONG on $HOST:$PORT after ${TIMEOUT}s, see $LOG: $(tail -n 1 "$LOG" 2>/dev/null)"
    done
    p=$(running_pid) || die "answers PING but pid file $PIDF is missing"
    echo "$name: started pid=$p addr=$HOST:$PORT persist=${KVPERF_PERSIST:-0} version=$(version) elapsed=$(since "$t0")s"
}

stop_server() {
    # NOSAVE: skip the RDB snapshot; with appendonly the AOF is still flushed on shutdown
    timeout 10 redis-cli -h "$HOST" -p "$PORT" SHUTDOWN NOSAVE >/dev/null 2>&1 || kill -TERM "$1" 2>/dev/null || true
}
