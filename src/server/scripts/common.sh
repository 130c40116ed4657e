#!/usr/bin/env bash
# kvperf server scripts, the shared part. src/server/mod.rs runs one string:
#   this file + the server's script (scripts/NAME.sh) + `dispatch "$@"`
# as `bash -c STRING NAME.sh install|check|start|stop|status`.
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

# own_cache_file PATH: PATH, a file of kvperf's in the cache (a lock, a log) or below a server directory
# (a configuration kvperf writes at each start), is absent or a plain file: opened to write, a link
# there led the write into a user's file (pass 5 found it for RocksDB's; pass 12 for Cassandra's
# node1/conf/cassandra.yaml and PostgreSQL's pgdata/kvperf.conf: kvperf checks only a server
# directory's top level). A file there with other names (hard links) is a user's too: the write
# went into every name of it.
own_cache_file() {
    if [ -L "$1" ] || { [ -e "$1" ] && [ ! -f "$1" ]; }; then
        refuse "'$1' is not kvperf's (a link, or not a file); move it away, kvperf writes its own file there"
    fi
    if [ -f "$1" ] && [ "$(stat -c %h -- "$1")" -gt 1 ]; then
        refuse "'$1' is not kvperf's (a file with other names: hard links); move it away, kvperf writes its own file there"
    fi
}

# own_install_dir DIR: DIR, where an install goes, holds no finished install (the caller checked): it
# must be absent. kvperf builds each install whole in a directory of its own (new_install_dir) and
# renames it to DIR (place_install), so an install cut short is never at DIR; whatever is there is
# not kvperf's (checked by name only, `rm -rf` took a user's `lib/my-notes.txt`): never removed.
own_install_dir() {
    if [ -e "$1" ] || [ -L "$1" ]; then
        refuse "'$1' is there but holds no finished $name install, and kvperf did not make it (it installs whole, by one rename); move it away (an older kvperf's install cut short may be removed), kvperf installs $name there"
    fi
}

# new_install_dir DIR: a fresh, empty directory of kvperf's (mktemp) beside DIR, for the install.
new_install_dir() { mktemp -d "$(dirname "$1")/.kvperf-install-${1##*/}.XXXXXX"; }

# place_install NEW DIR: renames NEW, a finished install, to DIR; never over anything there (a user's
# directory made meanwhile, even an empty one): mv -n renames with RENAME_NOREPLACE.
place_install() {
    mv -nT -- "$1" "$2"
    [ ! -e "$1" ] || { rm -rf -- "$1"; own_install_dir "$2"; die "cannot rename '$1' to '$2'"; }
}

# own_dirs DIR...: each DIR, below a server directory, is absent or a directory, not a link: a file
# kvperf writes in a linked one went into a user's directory.
own_dirs() {
    local d
    for d in "$@"; do
        if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then
            refuse "'$d' is not kvperf's (a link, or not a directory); move it away, kvperf keeps its own files there"
        fi
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
    # A FIFO at the pid file left the launcher blocked for good, to start an unrecorded server
    # whenever something read it (pass 13); a link there led the write elsewhere.
    own_cache_file "$PIDF"
    own_cache_file "$LOG"
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

# is_program PID PROGRAM: PID runs PROGRAM: the file name of its argv[0]'s first word (redis-server
# retitles itself "redis-server 127.0.0.1:P") or of its executable, exactly; or it is a java whose
# main class is PROGRAM. A word anywhere in its command line is not (`tail -f my-redis-server-notes.txt`
# passed that check). As server/mod.rs's `runs`.
is_program() {
    local a0 exe
    a0=$(tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null | head -n 1); a0=${a0%% *}; a0=${a0##*/}
    exe=$(readlink "/proc/$1/exe" 2>/dev/null) || exe=; exe=${exe##*/}
    if [ "$a0" = "$2" ] || [ "$exe" = "$2" ]; then return 0; fi
    { [ "$a0" = java ] || [ "$exe" = java ]; } && tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null | grep -qxF -- "$2"
}

# The pid in $PIDF if that process is alive, verified and runs $PROCESS.
running_pid() {
    local p
    [ -f "$PIDF" ] || return 1
    p=$(head -n 1 "$PIDF" 2>/dev/null) || return 1
    [ -n "$p" ] && alive "$p" && verified "$p" || return 1
    is_program "$p" "$PROCESS" || return 1
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

# do_check: before a start makes anything, refuse what stands in the way (a server may say more).
do_check() { :; }

dispatch() {
    case ${1:-} in
        install) do_install ;;
        check) do_check ;;
        start) do_start ;;
        stop) do_stop ;;
        status) do_status ;;
        *) die "usage: $name.sh install|check|start|stop|status" ;;
    esac
}
