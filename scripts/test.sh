#!/usr/bin/env bash
# The whole test suite (what CI runs), on RocksDB's release library
# (scripts/rocksdb-release.sh); KVPERF_ROCKSDB=source runs it on RocksDB
# compiled from source (about 20 more minutes on 2 cores). Release mode, in
# the build cache `scripts/quickstart.sh` uses, outside the clone. Ends
# with the number of tests that skipped a case and why (each appends its
# SKIPPED line to KVPERF_SKIP_LOG; cargo test hides a passing test's output).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/test-env.sh
# The Redfish service tests/bmc.rs reads power from (PyPI, into the cache).
scripts/sushy-tools.sh >/dev/null
KVPERF_SKIP_LOG=$(mktemp "${TMPDIR:-/tmp}/kvperf-skips.XXXXXX")
export KVPERF_SKIP_LOG
trap 'rm -f "$KVPERF_SKIP_LOG"' EXIT
status=0
cargo test --release --locked "$@" || status=$?
skipped=$(grep -c '^SKIPPED' "$KVPERF_SKIP_LOG" || true)
echo "kvperf: $skipped tests skipped a case${CI:+ (CI=$CI)}" >&2
sort "$KVPERF_SKIP_LOG" | sed 's/^/  /' >&2
exit "$status"
