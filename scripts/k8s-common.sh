# Sourced by scripts/k8s-apiserver.sh and scripts/k8s-node.sh: where the
# local Kubernetes keeps its binaries and state, and how its daemons are
# started, waited for and stopped. The caller sets TAG (its name in
# messages) before sourcing.
# shellcheck shell=bash

K8S_VERSION=v1.34.0
GO=${GO:-/usr/local/go/bin/go}
CACHE=${KVPERF_K8S_CACHE:-$HOME/.cache/kvperf/k8s}
BIN=$CACHE/bin-$K8S_VERSION
STATE=${KVPERF_K8S_STATE:-/var/lib/kvperf-k8s}
WAIT=${K8S_SETUP_WAIT:-90}        # seconds for each wait
# Everything a node needs, built by one `go build` (scripts/k8s-apiserver.sh build).
NODE_BINARIES="kube-apiserver kube-controller-manager kube-scheduler kubelet"

die() { echo "$TAG: $*" >&2; exit 1; }
say() { echo "$TAG: $*" >&2; }

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { [ -s "$1" ] && tr -dc 0-9 <"$1" || true; }

# The pid of a daemon these scripts started, if it still runs as that program.
running() {
  local name=$1 pid
  pid=$(pid_of "$STATE/run/$name.pid")
  alive "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "${name:0:15}" ] && echo "$pid"
}

built() {
  local cmd
  for cmd in $NODE_BINARIES; do [ -x "$BIN/$cmd" ] || return 1; done
}

# name, then the command; a session leader, so the caller's Ctrl-C or the
# end of a test binary does not take it down.
start_daemon() {
  local name=$1 pid; shift
  if pid=$(running "$name"); then return 0; fi
  setsid "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$STATE/run/$name.pid"
  say "started $name (pid $pid; log $STATE/logs/$name.log)"
}

# Waits until `check` succeeds, while `name` runs.
wait_until() {
  local name=$1 what=$2; shift 2
  for _ in $(seq 1 $((WAIT * 2))); do
    "$@" >/dev/null 2>&1 && return 0
    running "$name" >/dev/null || die "$name stopped: $(tail -1 "$STATE/logs/$name.log")"
    sleep 0.5
  done
  die "$what within ${WAIT}s (see $STATE/logs/$name.log)"
}

# Stops the named daemons, in the order given, each within WAIT seconds.
stop_daemons() {
  local name pid
  for name in "$@"; do
    pid=$(running "$name" || true)
    if [ -n "$pid" ]; then
      kill "$pid"
      for _ in $(seq 1 $((WAIT * 5))); do alive "$pid" || break; sleep 0.2; done
      alive "$pid" && die "$name (pid $pid) did not stop within ${WAIT}s"
      say "stopped $name (pid $pid)"
    fi
    rm -f "$STATE/run/$name.pid"
  done
}
