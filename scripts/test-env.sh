# The environment the test suite builds in, sourced by scripts/test.sh and
# .ci/run (so CI's lints and tests share one build cache): what the tests
# need installed, RocksDB's release library (scripts/rocksdb-release.sh;
# KVPERF_ROCKSDB=source builds it from source) and the build cache outside
# the clone, unless CARGO_TARGET_DIR names one.
scripts/ensure-deps.sh --with-chromium
. scripts/rocksdb-release.sh --export
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$KVPERF_DEFAULT_TARGET_DIR}"
