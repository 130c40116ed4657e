#!/usr/bin/env bash
# A whole single-node Kubernetes on this Debian machine, for the kubernetes
# launcher's pods and the test suite (tests/kubernetes.rs): the control
# plane of scripts/k8s-apiserver.sh (etcd, kube-apiserver,
# kube-controller-manager), plus kube-scheduler, a kubelet and Debian's
# containerd and runc. Pods run on the host network only (no CNI plugin
# sets up a pod network: a pod that is not on the host network gets only a
# loopback interface). No registry: images are built here from files on
# the machine and imported with `ctr`. Run it as root:
#
#   scripts/k8s-node.sh                   # start (builds the binaries first if needed); waits until the node is Ready
#   scripts/k8s-node.sh image NAME KVPERF # an image NAME with the program KVPERF as kvperf on its PATH
#   scripts/k8s-node.sh stop              # ends the pods' containers, stops the node, then the control plane
#   scripts/k8s-node.sh status            # one line: running or not
#
# Then: export KUBECONFIG=/var/lib/kvperf-k8s/kubeconfig; kubectl get nodes
#
# What it adds to scripts/k8s-apiserver.sh, each part only when needed:
# - apt-get installs containerd, runc and containernetworking-plugins
#   (their services are not started);
# - a containerd of its own: config, root, state and socket in
#   STATE/containerd (the system's containerd, if any, is not touched), its
#   CRI plugin's sandbox (pause) image kvperf.local/pause:1, built here
#   from a 20-line static C program (cc -static) as a one-layer image and
#   imported; the CNI configuration is a loopback network in STATE/cni, so
#   that the runtime reports its network ready;
# - kube-scheduler (127.0.0.1:26259) and a kubelet: node `localhost` (the
#   name the API server reaches it at), listening on 127.0.0.1 (port 26250,
#   healthz 26248), cgroupfs on cgroup v1 (which
#   kubelet 1.34 still accepts, with a warning), its pods' cgroups under
#   /kvperf-k8s in each v1 hierarchy (made here and removed on stop), its
#   root directory and the pods' logs in STATE, no swap check, eviction
#   only when a disk is 99% full (a shared test machine), API server
#   requests authenticated by the client certificate k8s-apiserver.sh made;
# - waits (bounded) until the node is Ready.
# Every failure is one line on stderr and a non-zero exit.
set -euo pipefail

# shellcheck disable=SC2034 # read by k8s-common.sh
TAG=k8s-node
here=$(cd "$(dirname "$0")" && pwd)
. "$here/k8s-common.sh"

# The node's name is also the address the API server reaches the kubelet at
# (logs, exec): "localhost", since the kubelet listens on 127.0.0.1 only
# and refuses a loopback --node-ip.
NODE=localhost
KUBELET_PORT=26250
KUBELET_HEALTHZ_PORT=26248
SCHEDULER_PORT=26259
PAUSE_IMAGE=kvperf.local/pause:1
CGROUP=kvperf-k8s
CTRD=$STATE/containerd
SOCK=$CTRD/containerd.sock

ctr_() { ctr --address "$SOCK" --namespace k8s.io "$@"; }

# The v1 hierarchies (cpu, memory, ... and name=systemd), not the unified one.
cgroup_dirs() {
  awk '$3 == "cgroup" { print $2 }' /proc/mounts
}

# An image archive (docker save's layout, which `ctr images import` reads)
# of one layer: the directory ROOT, with ENTRYPOINT and PATH in its config.
# Written to OUT.
image_archive() {
  local name=$1 root=$2 out=$3; shift 3
  local entrypoint work diff config
  entrypoint=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
  work=$(mktemp -d "${TMPDIR:-/tmp}/kvperf-image.XXXXXX")
  tar -C "$root" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$work/layer.tar" .
  diff=sha256:$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  jq -n --argjson ep "$entrypoint" --arg diff "$diff" '{
      architecture: "amd64", os: "linux", created: "1970-01-01T00:00:00Z",
      config: { Entrypoint: $ep, Env: ["PATH=/usr/local/bin:/usr/bin:/bin"], WorkingDir: "/" },
      rootfs: { type: "layers", diff_ids: [$diff] } }' >"$work/config.json"
  config=$(sha256sum "$work/config.json" | cut -d' ' -f1).json
  mv "$work/config.json" "$work/$config"
  jq -n --arg c "$config" --arg n "$name" '[{ Config: $c, RepoTags: [$n], Layers: ["layer.tar"] }]' >"$work/manifest.json"
  tar -C "$work" -cf "$out" manifest.json "$config" layer.tar
  rm -rf "$work"
}

# Imports the archive as NAME, replacing an image of that name.
import_image() {
  local name=$1 archive=$2 out
  out=$(ctr_ images import --no-unpack=false "$archive" 2>&1) || die "ctr could not import $name: $(tail -1 <<<"$out")"
  # (grep reads to the end: with -q, ctr's SIGPIPE would fail the pipe)
  ctr_ images ls -q | grep -x "docker.io/library/$name\|$name" >/dev/null || die "ctr imported no image named $name: $(tail -1 <<<"$out")"
}

# The pause image: a static program that sleeps until a signal ends it.
pause_image() {
  ctr_ images ls -q 2>/dev/null | grep -x "$PAUSE_IMAGE" >/dev/null && return 0
  command -v cc >/dev/null 2>&1 || die "needs a C compiler for the pause image (apt-get install gcc)"
  local work; work=$(mktemp -d "${TMPDIR:-/tmp}/kvperf-pause.XXXXXX")
  mkdir -p "$work/root"
  cat >"$work/pause.c" <<'C'
/* The pod sandbox's process (kvperf's scripts/k8s-node.sh): waits for a
   signal; SIGINT and SIGTERM end it, and it reaps orphans as PID 1 must. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void quit(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
  struct sigaction q = { .sa_handler = quit }, r = { .sa_handler = reap, .sa_flags = SA_NOCLDSTOP };
  sigaction(SIGINT, &q, NULL);
  sigaction(SIGTERM, &q, NULL);
  sigaction(SIGCHLD, &r, NULL);
  for (;;) pause();
}
C
  cc -static -Os -o "$work/root/pause" "$work/pause.c" || die "cc -static could not build the pause program (needs libc6-dev)"
  image_archive "$PAUSE_IMAGE" "$work/root" "$work/pause.tar" /pause
  import_image "$PAUSE_IMAGE" "$work/pause.tar"
  rm -rf "$work"
  say "built and imported $PAUSE_IMAGE"
}

# An image NAME with PROGRAM as /usr/local/bin/kvperf and the shared
# libraries it links (ldd), an empty /tmp, and nothing else.
kvperf_image() {
  local name=$1 program=$2 work lib
  [ -x "$program" ] || die "no program at $program"
  work=$(mktemp -d "${TMPDIR:-/tmp}/kvperf-image.XXXXXX")
  install -D -m 755 "$program" "$work/root/usr/local/bin/kvperf"
  install -d -m 1777 "$work/root/tmp"
  for lib in $(ldd "$program" | grep -o '/[^ ]*'); do
    install -D -m 755 "$(readlink -f "$lib")" "$work/root$lib"
  done
  image_archive "$name" "$work/root" "$work/image.tar" kvperf
  import_image "$name" "$work/image.tar"
  say "built and imported $name ($(du -sh "$work/image.tar" | cut -f1), $program and its libraries)"
  rm -rf "$work"
}

# Replaces FILE with stdin when they differ, in one rename (containerd
# watches its CNI directory and would read a half-written file).
write_file() {
  local file=$1 text
  text=$(cat)
  [ -e "$file" ] && [ "$(cat "$file")" = "$text" ] && return 0
  printf '%s\n' "$text" >"$file.tmp.$$"
  mv "$file.tmp.$$" "$file"
}

# Whether this process lacks CAP_SYS_RESOURCE (bit 24 of its capabilities).
without_sys_resource() {
  local eff
  eff=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
  [ $(( 0x$eff >> 24 & 1 )) -eq 0 ]
}

write_configs() {
  local restrict_oom=false
  without_sys_resource && restrict_oom=true
  install -d -m 700 "$CTRD" "$STATE/cni" "$STATE/kubelet" "$STATE/pod-logs"
  write_file "$CTRD/config.toml" <<EOF
# Written by kvperf's scripts/k8s-node.sh: a containerd of its own.
version = 2
root = "$CTRD/root"
state = "$CTRD/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # Without CAP_SYS_RESOURCE (a container or VM may withhold it, as this
  # test machine does), runc cannot lower a process's oom_score_adj, which
  # the kubelet asks for the sandbox (-998): keep it at containerd's own.
  restrict_oom_score_adj = $restrict_oom
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
EOF
  write_file "$STATE/cni/10-kvperf-loopback.conflist" <<'EOF'
{ "cniVersion": "1.0.0", "name": "kvperf-loopback", "plugins": [ { "type": "loopback" } ] }
EOF
  write_file "$STATE/kubelet/config.yaml" <<EOF
# Written by kvperf's scripts/k8s-node.sh.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
readOnlyPort: 0
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP
failCgroupV1: false
failSwapOn: false
podLogsDir: $STATE/pod-logs
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: $STATE/pki/client-ca.crt }
authorization: { mode: Webhook }
evictionHard: { memory.available: "10Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%" }
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
staticPodPath: ""
EOF
}

# /kvperf-k8s in every v1 hierarchy (the kubelet's cgroupRoot must exist),
# each listed in STATE/run/cgroups, the cpuset one with its parent's CPUs;
# runc makes the pods' cgroups in the unified hierarchy too (listed, to be
# removed on stop).
make_cgroups() {
  local d
  touch "$STATE/run/cgroups"
  for d in $(awk '$3 == "cgroup2" { print $2 }' /proc/mounts); do
    [ -d "$d/$CGROUP" ] || grep -qxF "$d/$CGROUP" "$STATE/run/cgroups" || echo "$d/$CGROUP" >>"$STATE/run/cgroups"
  done
  for d in $(cgroup_dirs); do
    [ -d "$d/$CGROUP" ] && continue
    mkdir "$d/$CGROUP"
    echo "$d/$CGROUP" >>"$STATE/run/cgroups"
    if [ -e "$d/cpuset.cpus" ]; then
      cat "$d/cpuset.cpus" >"$d/$CGROUP/cpuset.cpus"
      cat "$d/cpuset.mems" >"$d/$CGROUP/cpuset.mems"
    fi
  done
}

install_runtime() {
  local missing=()
  command -v containerd >/dev/null 2>&1 || missing+=(containerd)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
  command -v jq >/dev/null 2>&1 || missing+=(jq)
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "needs ${missing[*]} and there is no apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-cache show containerd >/dev/null 2>&1 || apt-get update -qq || die "apt-get update failed"
  . "$here/apt-without-services.sh"
  say "installing ${missing[*]}"
  apt_install_without_services k8s-node -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
}

kubectl_() { kubectl --kubeconfig "$STATE/kubeconfig" --request-timeout=10s "$@"; }

node_ready() {
  [ "$(kubectl_ get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

start() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (containerd, runc and the kubelet need it)"
  command -v kubectl >/dev/null 2>&1 || die "needs kubectl (scripts/ensure-deps.sh --with-chromium installs it)"
  local started_at; started_at=$(date +%s.%N)
  "$here/k8s-apiserver.sh" || die "the control plane did not start (scripts/k8s-apiserver.sh, above)"
  install_runtime
  write_configs
  make_cgroups
  start_daemon containerd containerd --config "$CTRD/config.toml"
  wait_until containerd "containerd did not answer on $SOCK" ctr_ version
  pause_image
  start_daemon kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig="$STATE/kubeconfig" --authentication-kubeconfig="$STATE/kubeconfig" \
    --authorization-kubeconfig="$STATE/kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" --leader-elect=false
  start_daemon kubelet "$BIN/kubelet" --config="$STATE/kubelet/config.yaml" \
    --kubeconfig="$STATE/kubeconfig" --root-dir="$STATE/kubelet/root" --cert-dir="$STATE/kubelet/pki" \
    --hostname-override="$NODE"
  wait_until kubelet "node $NODE was not Ready" node_ready
  local elapsed
  elapsed=$(awk -v a="$started_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  say "node $NODE ready in ${elapsed}s: KUBECONFIG=$STATE/kubeconfig"
}

# Unmounts what the kubelet and containerd left mounted under STATE.
unmount_state() {
  local m
  for m in $(awk -v s="$STATE/" 'index($2, s) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" || say "could not unmount $m"
  done
}

stop() {
  [ -d "$STATE/run" ] || { say "nothing to stop (no $STATE/run)"; return 0; }
  stop_daemons kubelet kube-scheduler
  if running containerd >/dev/null; then
    # The kubelet leaves its pods' containers running: end them first.
    local task
    for task in $(ctr_ tasks ls -q 2>/dev/null); do
      ctr_ tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
    done
    sleep 1
    for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks rm -f "$task" >/dev/null 2>&1 || true; done
    ctr_ containers ls -q 2>/dev/null | xargs -r ctr --address "$SOCK" --namespace k8s.io containers rm >/dev/null 2>&1 || true
  fi
  stop_daemons containerd
  unmount_state
  if [ -s "$STATE/run/cgroups" ]; then
    # Leaf first: the pods' and QoS classes' cgroups the kubelet made inside.
    local d
    while read -r d; do
      [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$d" ] && say "could not remove cgroup $d (a process still in it?)"
    done <"$STATE/run/cgroups"
    rm -f "$STATE/run/cgroups"
  fi
  "$here/k8s-apiserver.sh" stop
}

case "${1:-start}" in
  start) start ;;
  image)
    [ $# -eq 3 ] || die "usage: $0 image NAME PROGRAM"
    running containerd >/dev/null || die "containerd is not running (start the node first: $0)"
    kvperf_image "$2" "$3" ;;
  stop) stop ;;
  status)
    if running kubelet >/dev/null && running kube-scheduler >/dev/null && running containerd >/dev/null \
       && "$here/k8s-apiserver.sh" status >/dev/null; then
      echo "running: node $NODE, KUBECONFIG=$STATE/kubeconfig"
    else
      echo "not running"; exit 1
    fi ;;
  *) die "usage: $0 [start|image NAME PROGRAM|stop|status]" ;;
esac
