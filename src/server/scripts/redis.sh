#!/usr/bin/env bash
# kvperf server script: Redis on 127.0.0.1 (Debian package redis-server).
# Usage: bash redis.sh install|start|stop|status
# Environment (all optional unless marked):
#   KVPERF_DIR          data dir (required for start/stop/status); pid, log, AOF go inside
#   KVPERF_PORT         TCP port (default 6379)
#   KVPERF_PERSIST      0 (default): --save '' --appendonly no; 1: appendonly yes, appendfsync everysec
#   KVPERF_CACHE        install cache root (default $HOME/.cache/kvperf; only holds the apt log here)
#   KVPERF_START_TIMEOUT  seconds to wait for PING (default 30)
# Exit codes: 0 ok; 1 error; status: 0 running+answering, 3 not running.
# shellcheck disable=SC2016  # single-quoted bash -c bodies expand in the child on purpose
set -eEu
name=redis
trap 'echo "kvperf-server $name: error: command failed (exit $?): $BASH_COMMAND" >&2' ERR
die() { trap - ERR; echo "kvperf-server $name: error: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

action=${1:-}
CACHE=${KVPERF_CACHE:-${HOME:-/root}/.cache/kvperf}
PORT=${KVPERF_PORT:-6379}
HOST=127.0.0.1
TIMEOUT=${KVPERF_START_TIMEOUT:-30}

version() { redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p'; }

apt_install() { # apt_install LOG PKG...
    local log=$1; shift
    [ "$(id -u)" = 0 ] || die "$* missing and not root: run 'apt-get install -y $*' as root"
    command -v apt-get >/dev/null 2>&1 || die "$* missing and apt-get not found"
    mkdir -p "$(dirname "$log")"
    local opt=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=600)
    export DEBIAN_FRONTEND=noninteractive
    # policy-rc.d may block the package's service start (wanted: kvperf starts the server itself)
    if ! apt-get install "${opt[@]}" "$@" >"$log" 2>&1; then
        apt-get update -q >>"$log" 2>&1 || true
        apt-get install "${opt[@]}" "$@" >>"$log" 2>&1 || die "apt-get install $* failed, see $log"
    fi
}

do_install() {
    if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
        echo "$name: installed version=$(version) (already present)"; return 0
    fi
    local t0; t0=$(now)
    apt_install "$CACHE/servers/redis-apt.log" redis-server
    command -v redis-server >/dev/null 2>&1 || die "redis-server still not on PATH after apt-get install"
    echo "$name: installed version=$(version) elapsed=$(since "$t0")s"
}

need_dir() { [ -n "${KVPERF_DIR:-}" ] || die "KVPERF_DIR (the server data dir) is not set"; DIR=$KVPERF_DIR; PIDF=$DIR/redis.pid; LOG=$DIR/redis.log; }

running_pid() {
    local p
    [ -f "$PIDF" ] || return 1
    p=$(cat "$PIDF" 2>/dev/null) || return 1
    [ -n "$p" ] && [ -r "/proc/$p/cmdline" ] || return 1
    tr '\0' ' ' < "/proc/$p/cmdline" | grep -q redis-server || return 1
    echo "$p"
}

# alive PID: the process exists and is not a zombie (exited servers are reaped by pid 1, sometimes late)
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

port_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null; }
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
    DIR=$(cd "$DIR" && pwd)   # redis needs absolute paths once daemonized
    PIDF=$DIR/redis.pid; LOG=$DIR/redis.log
    case ${KVPERF_PERSIST:-0} in
        1) persist=(--appendonly yes --appendfsync everysec --appenddirname appendonlydir) ;;
        0) persist=(--appendonly no) ;;
        *) die "KVPERF_PERSIST must be 0 or 1" ;;
    esac
    rm -f "$PIDF"
    t0=$(now)
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

do_stop() {
    need_dir
    local p t0
    if ! p=$(running_pid); then rm -f "$PIDF"; echo "$name: not running"; return 0; fi
    t0=$(now)
    # NOSAVE: skip the RDB snapshot; with appendonly the AOF is still flushed on shutdown
    timeout 10 redis-cli -h "$HOST" -p "$PORT" SHUTDOWN NOSAVE >/dev/null 2>&1 || kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 1 300); do alive "$p" || break; sleep 0.1; done
    if alive "$p"; then kill -KILL "$p" 2>/dev/null || true; sleep 0.5; fi
    alive "$p" && die "pid $p did not exit"
    rm -f "$PIDF"
    echo "$name: stopped pid=$p elapsed=$(since "$t0")s"
}

do_status() {
    need_dir
    local p
    if p=$(running_pid); then
        if answers; then echo "$name: running pid=$p addr=$HOST:$PORT"; return 0; fi
        echo "$name: running pid=$p but not answering PING on $HOST:$PORT"; trap - ERR; exit 1
    fi
    echo "$name: not running"; trap - ERR; exit 3
}

case $action in
    install) do_install ;;
    start) do_start ;;
    stop) do_stop ;;
    status) do_status ;;
    *) die "usage: redis.sh install|start|stop|status" ;;
esac
