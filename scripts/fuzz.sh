#!/usr/bin/env bash
# Fuzzes each reader of user input with cargo-fuzz (libFuzzer) for a
# bounded time, starting from the seed inputs src/fuzzing/corpus_replay.rs replays.
# Needs a nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz
#
#   scripts/fuzz.sh                       # every target, 60 s each
#   SECONDS_EACH=600 TARGETS="plan results" scripts/fuzz.sh
#
# Env: SECONDS_EACH (default 60), TARGETS (default all five), TARGET_DIR
# (the build, default ~/.cache/kvperf/fuzz-target), CORPUS (where new inputs go, default
# ~/.cache/kvperf/fuzz-corpus/TARGET; never inside the repository).
# Prints one line per target: executions, seconds, corpus size, and either
# "no crash" or where libFuzzer saved the crashing input; exits 1 on a crash.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_EACH=${SECONDS_EACH:-60}
TARGETS=${TARGETS:-"workload_properties plan command_line results histogram"}
CORPUS=${CORPUS:-$HOME/.cache/kvperf/fuzz-corpus}
# Beside kvperf's own build cache, not in the clone (it builds kvperf again
# with coverage and AddressSanitizer).
TARGET_DIR=${TARGET_DIR:-$HOME/.cache/kvperf/fuzz-target}

cargo +nightly fuzz --help >/dev/null 2>&1 || {
  echo "fuzz: needs nightly Rust and cargo-fuzz (rustup toolchain install nightly; cargo install cargo-fuzz)" >&2
  exit 2
}

seeds_of() {
  case $1 in
    workload_properties) echo "$repo/workloads" ;;
    plan) echo "$repo/plans" ;;
    *) echo "$repo/fuzz/seeds/$1" ;;
  esac
}

cd "$repo/fuzz"
failed=0
for target in $TARGETS; do
  corpus=$CORPUS/$target
  mkdir -p "$corpus"
  log=$(mktemp "/tmp/kvperf-fuzz-$target.XXXXXX")
  # New inputs go to the first directory; the seeds are read only.
  if cargo +nightly fuzz run --target-dir "$TARGET_DIR" "$target" "$corpus" "$(seeds_of "$target")" -- \
    -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$CORPUS/crash-$target-" >"$log" 2>&1; then
    verdict="no crash"
  else
    verdict="CRASH: $(grep -m1 -o "saved to [^ ]*\|Test unit written to [^ ]*" "$log" || echo "see $log")"
    failed=1
  fi
  # libFuzzer's last words: "Done N runs in S second(s)"; a crash ends
  # before them, so the last status line ("#N ...") counts instead.
  runs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -n 1 | awk '{print $2 " executions in " $5 " s"}')
  [ -n "$runs" ] || runs="$(grep -o '^#[0-9][0-9]*' "$log" | tail -n 1 | tr -d '#') executions"
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | awk '{print $2}')
  echo "$target: $runs, ${cov:-?} coverage points, corpus $(ls "$corpus" | wc -l) inputs, $verdict (log $log)"
done
exit "$failed"
