#!/usr/bin/env bash
# The main job at a small scale: install what is missing, build kvperf on
# RocksDB's release library, run the shipped quickstart plan (RocksDB, a
# paced load, YCSB A-F for 12 s each at 1-2 threads) through `kvperf plan
# run`, and write its report (Markdown, CSV, HTML).
#
#   scripts/quickstart.sh                       # reports/quickstart-<time>/
#   scripts/quickstart.sh --set recordcount=1000000 --set threads=[1,4,16]
#   KVPERF_ROCKSDB=source scripts/quickstart.sh  # RocksDB compiled from source (~20 min more)
#
# Arguments are passed to `kvperf plan run` (e.g. --set, --scale).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh
# RocksDB's own release library, fetched once into ~/.cache/kvperf/rocksdb/;
# KVPERF_ROCKSDB=source compiles RocksDB from source instead (~20 minutes).
. scripts/rocksdb-release.sh --export
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$KVPERF_DEFAULT_TARGET_DIR}"
# Only the engine the quickstart plan runs: the other engines' drivers and
# shims (Cassandra, MongoDB, PostgreSQL, Redis, WiredTiger, SQLite, ...) were
# 11 of a first build's 36 minutes here. `cargo build --release` adds them.
cargo build --release --locked --no-default-features --features rocksdb
kvperf="$CARGO_TARGET_DIR/release/kvperf"

out="reports/quickstart-$(date +%Y%m%d-%H%M%S)"
"$kvperf" plan run plans/quickstart.toml --results "$out/results.jsonl" \
  --report "$out" --db rocksdb="$out/db" "$@"
echo
head -n 60 "$out/report.md"
echo
echo "Report: $out/report.md, $out/report.html, $out/report.csv (raw results: $out/results.jsonl)"
echo "This kvperf ($kvperf) has RocksDB only; \`cargo build --release --locked\` builds every engine."
