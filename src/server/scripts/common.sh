#!/usr/bin/env bash
# kvperf server scripts, the shared part. src/server/mod.rs runs one string:
#   this file + the server's script (scripts/NAME.sh) + `dispatch "$@"`
# as `bash -c STRING NAME.sh install|start|stop|status`.
# The server's script defines do_install and do_start; for the default do_stop/do_status
# (one server process with a pid file) also PROCESS, answers and stop_server. It may override
# any function below (bash keeps the last definition), as cassandra.sh does for its nodes.
# Environment (set by kvperf for every server):
#   KVPERF_DIR            data dir (required for start/stop/status)
#   KVPERF_PORT           the server's port
#   KVPERF_NODES          node count (only servers that run as a cluster read it)
#   KVPERF_START_TIMEOUT  seconds to wait for the server (each node) to answer
#   KVPERF_CACHE          install cache root (default $HOME/.cache/kvperf)
#   KVPERF_<SETTING>      the server's settings (`kvperf server start NAME -p setting=value`)
# Answers: stdout's last line is the one-line summary ("NAME: started pid=... addr=..."; kvperf
# parses its key=value words); stderr: progress and notes ("kvperf-server NAME: ..."), and on
# failure one "kvperf-server NAME: error: ..." line, which kvperf shows.
# Exit codes: 0 ok; 1 error; 64 refused (the user's files or input: kvperf exits 2); status: 0
# running+answering, 3 not running.
# shellcheck disable=SC2016  # single-quoted bash -c bodies expand in the child on purpose
set -eEu
name=${0##*/}; name=${name%.sh}
# This script's own state, never the caller's environment: LAUNCHED=1 there made verified() trust
# every pid file (a stale one naming a reused pid was "already running" and recorded).
unset LAUNCHED EXITED
trap 'echo "kvperf-server $name: error: command failed (exit $?): $BASH_COMMAND" >&2' ERR
die() { trap - ERR; echo "kvperf-server $name: error: $*" >&2; exit 1; }
# refuse: the user's input or files stand in the way (kvperf exits 2, a bad input, not a failure).
refuse() { trap - ERR; echo "kvperf-server $name: error: $*" >&2; exit 64; }
note() { echo "kvperf-server $name: note: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

CACHE=${KVPERF_CACHE:-${HOME:-/root}/.cache/kvperf}
[ -n "${KVPERF_PORT:-}" ] || die "KVPERF_PORT (the server's port) is not set"
PORT=$KVPERF_PORT
TIMEOUT=${KVPERF_START_TIMEOUT:-60}
HOST=127.0.0.1

# own_cache_file PATH: PATH, a file of kvperf's in the cache (a lock, a log), is absent or a plain file:
# opened to write, a link there led the write into a user's file (pass 5 found it for RocksDB's).
# A file there with other names (hard links) is a user's too: the write went into every name of it.
own_cache_file() {
    if [ -L "$1" ] || { [ -e "$1" ] && [ ! -f "$1" ]; }; then
        refuse "'$1' is not kvperf's (a link, or not a file); move it away, kvperf writes its own file there"
    fi
    if [ -f "$1" ] && [ "$(stat -c %h -- "$1")" -gt 1 ]; then
        refuse "'$1' is not kvperf's (a file with other names: hard links); move it away, kvperf writes its own file there"
    fi
}

# own_install_dir DIR NAME...: DIR, where an install goes (removed or replaced when it is not complete),
# is absent or a directory holding only the NAMEs the install puts there; anything else is a user's.
own_install_dir() {
    local dir=$1 entry known; shift
    if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -d "$dir" ]; }; then
        refuse "'$dir' is not a directory kvperf made (a link, or not a directory); move it away, kvperf installs $name there"
    fi
    [ -d "$dir" ] || return 0
    for entry in "$dir"/* "$dir"/.[!.]* "$dir"/..?*; do
        [ -e "$entry" ] || [ -L "$entry" ] || continue
        for known in "$@"; do [ "${entry##*/}" != "$known" ] || continue 2; done
        refuse "'$dir' holds '${entry##*/}', which kvperf did not put there; move it away, kvperf installs $name there"
    done
}

apt_install() { # apt_install LOG PKG...
    local log=$1; shift
    own_cache_file "$log"
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

# The data directory and the files in it; dir_layout names them (default: NAME.pid, NAME.log).
need_dir() {
    [ -n "${KVPERF_DIR:-}" ] || die "KVPERF_DIR (the server data dir) is not set"
    DIR=$KVPERF_DIR
    dir_layout
}
dir_layout() { PIDF=$DIR/$name.pid; LOG=$DIR/$name.log; }

# alive PID: the process exists and is not a zombie (exited servers are reaped by pid 1, sometimes late)
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

port_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null; }

# verified PID: PID is this directory's server. kvperf sets KVPERF_VERIFIED to the pids it recorded
# when it started the server and has checked since (start time and executable), or "none": until
# this script launches a server itself (LAUNCHED=1), a pid file naming any other pid is stale (its pid
# may now be another process's, even another server of the same kind).
verified() {
    [ -n "${LAUNCHED:-}" ] || [ -z "${KVPERF_VERIFIED+x}" ] || [[ ",$KVPERF_VERIFIED," == *",$1,"* ]]
}

# The pid in $PIDF if that process is alive, verified and its command line names $PROCESS.
running_pid() {
    local p
    [ -f "$PIDF" ] || return 1
    p=$(head -n 1 "$PIDF" 2>/dev/null) || return 1
    [ -n "$p" ] && alive "$p" && verified "$p" || return 1
    tr '\0' ' ' < "/proc/$p/cmdline" | grep -q "$PROCESS" || return 1
    echo "$p"
}

# After stop_server: SIGKILL if the server has not exited within 30 s; forget_pid: remove its pid file.
kill_stuck() { kill -KILL "$1" 2>/dev/null || true; sleep 0.5; }
forget_pid() { rm -f "$PIDF"; }

do_stop() {
    need_dir
    local p t0
    if ! p=$(running_pid); then forget_pid; echo "$name: not running"; return 0; fi
    t0=$(now)
    stop_server "$p"
    for _ in $(seq 1 300); do alive "$p" || break; sleep 0.1; done
    if alive "$p"; then kill_stuck "$p"; fi
    alive "$p" && die "pid $p did not exit, see $LOG"
    forget_pid
    echo "$name: stopped pid=$p elapsed=$(since "$t0")s"
}

# RUNNING_FACTS: key=value words a server adds to its "running" line (e.g. " db=kvperf").
do_status() {
    need_dir
    local p
    if p=$(running_pid); then
        if answers; then echo "$name: running pid=$p addr=$HOST:$PORT${RUNNING_FACTS:-}"; return 0; fi
        echo "$name: running pid=$p but not answering on $HOST:$PORT"; trap - ERR; exit 1
    fi
    echo "$name: not running"; trap - ERR; exit 3
}

dispatch() {
    case ${1:-} in
        install) do_install ;;
        start) do_start ;;
        stop) do_stop ;;
        status) do_status ;;
        *) die "usage: $name.sh install|start|stop|status" ;;
    esac
}
