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
# cargo test's output is kept too: a failing test's reason (its panic's
# place and first line) is repeated at the very end, where a log cut to its
# head and tail still shows it.
KVPERF_TEST_LOG=$(mktemp "${TMPDIR:-/tmp}/kvperf-tests.XXXXXX")
trap 'rm -f "$KVPERF_SKIP_LOG" "$KVPERF_TEST_LOG"' EXIT
status=0
cargo test --release --locked "$@" 2>&1 | tee "$KVPERF_TEST_LOG" || status=$?
skipped=$(grep -c '^SKIPPED' "$KVPERF_SKIP_LOG" || true)
echo "kvperf: $skipped tests skipped a case${CI:+ (CI=$CI)}" >&2
sort "$KVPERF_SKIP_LOG" | sed 's/^/  /' >&2
if [ "$status" -ne 0 ]; then
    echo "kvperf: why each failing test failed (its panic's place and first line):" >&2
    awk '
        /^---- .* stdout ----$/ { name = $2; next }
        name != "" && /panicked at / { place = $0; sub(/.*panicked at /, "", place); want = 1; next }
        want && NF { printf "  %s: %s %s\n", name, place, substr($0, 1, 400); want = 0; name = "" }
    ' "$KVPERF_TEST_LOG" >&2
fi
exit "$status"
