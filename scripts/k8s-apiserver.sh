#!/usr/bin/env bash
# A real Kubernetes control plane on this Debian machine, in parts: etcd,
# kube-apiserver and kube-controller-manager; scripts/k8s-node.sh adds a
# scheduler, a kubelet and a container runtime to it. For trying the
# kubernetes launcher's Jobs and for the test suite (tests/kubernetes.rs).
# Run it as root:
#
#   scripts/k8s-apiserver.sh            # build (first time only), start; waits until Jobs get pods
#   scripts/k8s-apiserver.sh build      # only build (and cache) the four binaries (the node's too)
#   scripts/k8s-apiserver.sh built      # exit 0 when all four are cached (prints where)
#   scripts/k8s-apiserver.sh stop       # stops the daemons this script started
#   scripts/k8s-apiserver.sh status     # one line: running or not, and the kubeconfig
#
# Then: export KUBECONFIG=/var/lib/kvperf-k8s/kubeconfig; kubectl get ns
#
# What it does, each part only when needed (a second run is a no-op):
# - builds kube-apiserver, kube-controller-manager, kube-scheduler and
#   kubelet v1.34.0, in one `go build`, with Go
#   (GO, default /usr/local/go/bin/go, at least 1.24) from the Go module
#   proxy, in a wrapper module under KVPERF_K8S_CACHE (default
#   ~/.cache/kvperf/k8s, outside any clone) that requires k8s.io/kubernetes
#   v1.34.0 and pins its staging modules (k8s.io/api, k8s.io/apiserver,
#   k8s.io/client-go...) at v0.34.0: kubernetes' own go.mod points them at
#   ./staging with replace directives, which do not apply to a module that
#   depends on it. 24 minutes for all four on 2 cores shared with other
#   builds (nice 15, load average 8-12, 2026-11-28, modules downloaded
#   included); the binaries are cached in KVPERF_K8S_CACHE/bin-v1.34.0;
# - apt-get installs Debian's etcd-server when there is no etcd (the
#   package's service is not started: policy-rc.d);
# - in STATE (KVPERF_K8S_STATE, default /var/lib/kvperf-k8s; a directory
#   this script made, with its marker file, or none: any other is refused):
#   a self-signed certificate for 127.0.0.1 (openssl), a service-account
#   key, a static token file (one admin token, group system:masters), and
#   a kubeconfig (context kvperf-local) with that token, and a client CA
#   with the API server's client certificate for kubelets;
# - starts etcd (127.0.0.1:12379, data in STATE/etcd), kube-apiserver
#   (https://127.0.0.1:16443, etcd as its store, token authentication,
#   RBAC) and kube-controller-manager (127.0.0.1 only, no leader election),
#   each a session leader with its log in STATE/logs, and waits (bounded)
#   until the API server is ready and the controller-manager has made the
#   default namespace's service account (so a Job's pods can be created).
# Alone, pods are created by the Job controller and stay Pending: nothing
# schedules or runs them (scripts/k8s-node.sh does).
# Every failure is one line on stderr and a non-zero exit.
set -euo pipefail

STAGING_VERSION=v0.34.0
ETCD_PORT=12379
ETCD_PEER_PORT=12380
API_PORT=16443
CONTEXT=kvperf-local

# shellcheck disable=SC2034 # read by k8s-common.sh
TAG=k8s-apiserver
. "$(dirname "$0")/k8s-common.sh"
MARKER=$STATE/.written-by-kvperf-k8s-apiserver

# The staging modules of k8s.io/kubernetes v1.34.0 (its go.mod's replace
# directives to ./staging/src/k8s.io/...).
STAGING="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
  cloud-provider cluster-bootstrap code-generator component-base component-helpers
  controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation
  endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy
  kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission
  sample-apiserver sample-cli-plugin sample-controller"

build() {
  [ -x "$GO" ] || die "no Go at $GO (set GO=/path/to/go; Go 1.24 or later builds Kubernetes $K8S_VERSION)"
  local src=$CACHE/build-$K8S_VERSION m cmd t0 ldflags p
  mkdir -p "$src" "$BIN"
  {
    echo "// Written by kvperf's scripts/k8s-apiserver.sh: builds Kubernetes $K8S_VERSION's binaries."
    echo "module kvperf.local/k8s-build"
    echo
    echo "go 1.24.0"
    echo
    echo "godebug default=go1.24"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    for m in $STAGING; do echo "	k8s.io/$m => k8s.io/$m $STAGING_VERSION"; done
    echo ")"
  } >"$src/go.mod"
  # What `kubectl version` and /version report (kubernetes' hack/lib/version.sh).
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=34 -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  # One `go build` of all the missing commands: they share most packages,
  # so building them together costs little more than the largest alone.
  local missing="" pkgs=""
  for cmd in $NODE_BINARIES; do
    [ -x "$BIN/$cmd" ] && continue
    missing="$missing $cmd"; pkgs="$pkgs k8s.io/kubernetes/cmd/$cmd"
  done
  [ -n "$missing" ] || return 0
  say "building$missing $K8S_VERSION with $("$GO" version | awk '{print $3}') (about 25 min on 2 cores at nice 15; log in $CACHE/build.log)"
  t0=$(date +%s)
  rm -rf "$BIN/.tmp"; mkdir -p "$BIN/.tmp"
  # shellcheck disable=SC2086 # $pkgs is a list of package paths
  if ! (cd "$src" && GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
        nice -n 15 "$GO" build -trimpath -ldflags "$ldflags" -o "$BIN/.tmp/" $pkgs) \
        >"$CACHE/build.log" 2>&1; then
    die "building$missing failed: $(tail -1 "$CACHE/build.log") (see $CACHE/build.log)"
  fi
  for cmd in $missing; do mv "$BIN/.tmp/$cmd" "$BIN/$cmd"; done
  rmdir "$BIN/.tmp"
  say "built$missing in $(( $(date +%s) - t0 )) s: $BIN"
}

stop() {
  [ -d "$STATE/run" ] || { say "nothing to stop (no $STATE/run)"; return 0; }
  # The reverse of starting.
  stop_daemons kube-controller-manager kube-apiserver etcd
}

case "${1:-start}" in
  start) ;;
  build) build; exit 0 ;;
  built)
    if built; then echo "$BIN: $NODE_BINARIES"; exit 0; fi
    echo "not built: not all of $NODE_BINARIES in $BIN (scripts/k8s-apiserver.sh build)"; exit 1 ;;
  stop) stop; exit 0 ;;
  status)
    if running kube-apiserver >/dev/null && running kube-controller-manager >/dev/null && running etcd >/dev/null; then
      echo "running: https://127.0.0.1:$API_PORT, KUBECONFIG=$STATE/kubeconfig"
    else
      echo "not running"; exit 1
    fi
    exit 0 ;;
  *) die "usage: $0 [start|build|built|stop|status]" ;;
esac

[ "$(id -u)" -eq 0 ] || die "must run as root (it installs etcd-server and keeps its state in $STATE)"
command -v openssl >/dev/null 2>&1 || die "needs openssl (apt-get install openssl)"
command -v curl >/dev/null 2>&1 || die "needs curl (apt-get install curl)"
started_at=$(date +%s.%N)

# --- state directory: ours or none ------------------------------------------
if [ -e "$STATE" ] && [ ! -e "$MARKER" ]; then
  die "$STATE exists and was not made by this script (no $(basename "$MARKER")); refusing to touch it"
fi
install -d -m 700 "$STATE" "$STATE/pki" "$STATE/logs" "$STATE/run"
[ -e "$MARKER" ] || echo "made by kvperf scripts/k8s-apiserver.sh; it may rewrite or remove this directory" >"$MARKER"

# --- binaries ---------------------------------------------------------------
built || build

# --- etcd -------------------------------------------------------------------
if ! command -v etcd >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || die "no etcd and no apt-get to install etcd-server"
  export DEBIAN_FRONTEND=noninteractive
  apt-cache show etcd-server >/dev/null 2>&1 || apt-get update -qq || die "apt-get update failed"
  # Keep the package from starting its own etcd service (on 2379): this
  # script starts etcd.
  . "$(dirname "$0")/apt-without-services.sh"
  say "installing etcd-server"
  apt_install_without_services k8s-apiserver -y -qq --no-install-recommends etcd-server >/dev/null \
    || die "apt-get install etcd-server failed"
  command -v etcd >/dev/null 2>&1 || die "etcd-server installed no etcd program"
fi

# --- certificate, keys, token, kubeconfig -------------------------------------
pki=$STATE/pki
if [ ! -s "$pki/apiserver.crt" ] || [ ! -s "$pki/apiserver.key" ]; then
  # Self-signed, CA:TRUE so that it is its own trust root in the kubeconfig.
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kvperf-k8s-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.crt" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" \
    -addext "extendedKeyUsage=serverAuth" >/dev/null 2>&1 || die "openssl could not make the certificate"
  say "made a self-signed certificate for 127.0.0.1 in $pki"
fi
# The API server's client certificate for the kubelet (logs, exec), signed
# by a CA of its own (the serving certificate above is for servers only),
# which the kubelet trusts (scripts/k8s-node.sh).
if [ ! -s "$pki/client-ca.crt" ] || [ ! -s "$pki/client-ca.key" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kvperf-k8s-client-ca" \
    -keyout "$pki/client-ca.key" -out "$pki/client-ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" >/dev/null 2>&1 \
    || die "openssl could not make the client CA"
  rm -f "$pki/kubelet-client.crt"
fi
if [ ! -s "$pki/kubelet-client.crt" ] || [ ! -s "$pki/kubelet-client.key" ]; then
  openssl req -new -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
    -keyout "$pki/kubelet-client.key" -out "$pki/kubelet-client.csr" >/dev/null 2>&1 \
    && openssl x509 -req -in "$pki/kubelet-client.csr" -CA "$pki/client-ca.crt" -CAkey "$pki/client-ca.key" \
      -CAcreateserial -days 3650 -out "$pki/kubelet-client.crt" \
      -extfile <(printf 'extendedKeyUsage=clientAuth\n') >/dev/null 2>&1 \
    || die "openssl could not make the API server's client certificate for the kubelet"
  rm -f "$pki/kubelet-client.csr"
fi
if [ ! -s "$pki/sa.key" ]; then
  openssl genrsa -out "$pki/sa.key" 2048 >/dev/null 2>&1 || die "openssl could not make the service-account key"
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" >/dev/null 2>&1 || die "openssl could not write the service-account public key"
fi
if [ ! -s "$STATE/tokens.csv" ]; then
  token=$(openssl rand -hex 24)
  (umask 077; echo "$token,kvperf-admin,kvperf-admin,\"system:masters\"" >"$STATE/tokens.csv")
fi
token=$(cut -d, -f1 "$STATE/tokens.csv")
kubeconfig=$(cat <<EOF
# Written by kvperf's scripts/k8s-apiserver.sh for its local API server.
apiVersion: v1
kind: Config
clusters:
- name: $CONTEXT
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 <"$pki/apiserver.crt")
users:
- name: kvperf-admin
  user:
    token: $token
contexts:
- name: $CONTEXT
  context:
    cluster: $CONTEXT
    user: kvperf-admin
    namespace: default
current-context: $CONTEXT
EOF
)
if [ ! -e "$STATE/kubeconfig" ] || [ "$(cat "$STATE/kubeconfig")" != "$kubeconfig" ]; then
  (umask 077; printf '%s\n' "$kubeconfig" >"$STATE/kubeconfig.tmp.$$")
  mv "$STATE/kubeconfig.tmp.$$" "$STATE/kubeconfig"
fi

# --- daemons ----------------------------------------------------------------
start_daemon etcd etcd --name kvperf --data-dir "$STATE/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "kvperf=http://127.0.0.1:$ETCD_PEER_PORT"
wait_until etcd "etcd did not answer on 127.0.0.1:$ETCD_PORT" \
  curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

start_daemon kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
  --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --token-auth-file="$STATE/tokens.csv" --authorization-mode=Node,RBAC \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 --allow-privileged=true \
  --kubelet-client-certificate="$pki/kubelet-client.crt" --kubelet-client-key="$pki/kubelet-client.key" \
  --kubelet-preferred-address-types=Hostname
wait_until kube-apiserver "the API server was not ready" \
  curl -fsS --cacert "$pki/apiserver.crt" -H "Authorization: Bearer $token" "https://127.0.0.1:$API_PORT/readyz"

start_daemon kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$STATE/kubeconfig" --authentication-kubeconfig="$STATE/kubeconfig" \
  --authorization-kubeconfig="$STATE/kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/apiserver.crt" \
  --use-service-account-credentials=false
# The service-account controller makes `default` in every namespace; pods
# (a Job's included) are refused until it exists.
wait_until kube-controller-manager "the controller-manager made no default service account" \
  curl -fsS --cacert "$pki/apiserver.crt" -H "Authorization: Bearer $token" \
  "https://127.0.0.1:$API_PORT/api/v1/namespaces/default/serviceaccounts/default"

elapsed=$(awk -v a="$started_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
say "ready in ${elapsed}s: https://127.0.0.1:$API_PORT, KUBECONFIG=$STATE/kubeconfig (context $CONTEXT)"
