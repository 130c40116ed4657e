#!/usr/bin/env bash
# Installs what building kvperf needs beyond Rust: clang and libclang for
# bindgen (the rocksdb crate), a C++ compiler, and WiredTiger's header and
# library for the wiredtiger engine (libwiredtiger-dev, which brings
# libwiredtiger0 with its snappy and zlib extensions), fio, which the
# README's `kvperf device corners --with-fio` runs beside kvperf, and Maven
# and unzip, which fetch RocksDB's release library (unless KVPERF_ROCKSDB=source).
# Debian/Ubuntu only.
# With --with-chromium (the test suite's deps), also Debian's Chromium, which
# the test suite uses to check that HTML reports render, and Debian's
# prometheus package for promtool, with which it lints the `--metrics-addr`
# endpoint (tests/metrics.rs); its server is not started. And what the
# suite's other tests need so that none skips: shellcheck (tests/deploy.rs),
# OpenIPMI's BMC simulator ipmi_sim and ipmitool (tests/bmc.rs; openipmi's
# init script is not started), openssl and Python's venv for sushy-tools'
# Redfish service (scripts/sushy-tools.sh installs it from PyPI into the
# cache), util-linux's losetup (tests/device.rs), and kubectl
# (tests/kubernetes.rs; the `kubectl` package of the apt source that has
# one: Kubernetes' pkgs.k8s.io or Google's cloud SDK; Debian 12 itself has
# only kubernetes-client 1.20, too old for the v1.34 node).
set -euo pipefail

missing=()
if [ "${1:-}" = "--with-chromium" ]; then
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
  command -v ipmi_sim >/dev/null 2>&1 || missing+=(openipmi)
  command -v ipmitool >/dev/null 2>&1 || missing+=(ipmitool)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  command -v losetup >/dev/null 2>&1 || missing+=(util-linux)
  command -v kubectl >/dev/null 2>&1 || missing+=(kubectl)
  python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
fi
command -v clang >/dev/null 2>&1 || missing+=(clang)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)
command -v c++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
[ -e /usr/include/wiredtiger.h ] || missing+=(libwiredtiger-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v fio >/dev/null 2>&1 || missing+=(fio)
# RocksDB's release library comes from Maven Central (scripts/rocksdb-release.sh).
if [ "${KVPERF_ROCKSDB:-release}" = release ]; then
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  command -v unzip >/dev/null 2>&1 || missing+=(unzip)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "kvperf: installing ${missing[*]} (needed to build RocksDB, run the tests and the README's commands)" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "kvperf: need root or sudo to apt-get install ${missing[*]}" >&2; exit 2; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# No package's service is started (prometheus ships one).
. "$(dirname "$0")/apt-without-services.sh"
$sudo apt-get update -qq
apt_install_without_services ensure-deps -y -qq "${missing[@]}" >/dev/null
