#!/usr/bin/env bash
# The whole test suite (what CI runs), on RocksDB's release library
# (scripts/rocksdb-release.sh); KVPERF_ROCKSDB=source runs it on RocksDB
# compiled from source (about 20 more minutes on 2 cores). Release mode, in
# the build cache `scripts/quickstart.sh` uses, outside the clone.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/test-env.sh
cargo test --release --locked "$@"
