#!/usr/bin/env bash
# The source build (KVPERF_ROCKSDB=source: RocksDB compiled from the
# librocksdb-sys crate's sources) kept working, as CI checks it after the
# tests: it builds the RocksDB-only kvperf in its own cache
# (~/.cache/kvperf/target-source), checks that `kvperf --version` names a
# source build, and loads and reads a small store with it (the same code
# paths as the release library's build).
#
#   scripts/source-build-check.sh [MINUTES_ALREADY_SPENT]
#
# A first source build takes about 21 minutes on 2 cores (bench/RESULTS.md).
# When its cache is empty and MINUTES_ALREADY_SPENT (CI's time so far) is
# above 40, it does not start one, so CI stays inside its 90 minutes, and
# says so on one line: the next run, with the cache, builds it.
set -euo pipefail
cd "$(dirname "$0")/.."
spent=${1:-0}
export KVPERF_ROCKSDB=source
. scripts/rocksdb-release.sh --export
export CARGO_TARGET_DIR=$KVPERF_DEFAULT_TARGET_DIR
if ! compgen -G "$CARGO_TARGET_DIR/release/build/librocksdb-sys-*/out/librocksdb.a" >/dev/null && [ "$spent" -gt 40 ]; then
  echo "source build: NOT BUILT in this run: its cache $CARGO_TARGET_DIR holds no compiled RocksDB, a first build takes ~21 min and this run has spent $spent min of its 90" >&2
  exit 0
fi
cargo build --release --locked --no-default-features --features rocksdb
kvperf=$CARGO_TARGET_DIR/release/kvperf
version=$("$kvperf" --version)
case $version in
  *"source build"*) ;;
  *) echo "source build: kvperf --version does not name a source build: $version" >&2; exit 1 ;;
esac
store=$(mktemp -d /tmp/kvperf-source-check.XXXXXX)
trap 'rm -rf "$store"' EXIT
# Their stderr (a too-short window's warnings) is kept for a failure.
"$kvperf" load --engine rocksdb --db "$store/db" -P workloads/workloadc -p recordcount=2000 \
  >"$store/load.txt" 2>"$store/load.err" || { cat "$store/load.err" >&2; exit 1; }
"$kvperf" run --engine rocksdb --db "$store/db" -P workloads/workloadc -p recordcount=2000 \
  -p operationcount=5000 >"$store/run.txt" 2>"$store/run.err" || { cat "$store/run.err" >&2; exit 1; }
grep -q '^\[READ\], Return=OK, 5000$' "$store/run.txt" || {
  echo "source build: the run did not read 5000 records OK:" >&2
  grep '^\[READ\]\|^\[OVERALL\]' "$store/run.txt" >&2
  exit 1
}
echo "source build: ok ($version; loaded 2000 records and read 5000)"
