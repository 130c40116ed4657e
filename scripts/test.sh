#!/usr/bin/env bash
# The whole test suite (what CI runs). Release mode on purpose: the bundled
# RocksDB then builds once (about 21 minutes on 2 cores) and is shared with
# `scripts/quickstart.sh`; the build cache lives outside the clone.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh --with-chromium
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kvperf/target}"
cargo test --release --locked "$@"
