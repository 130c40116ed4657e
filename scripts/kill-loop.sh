#!/usr/bin/env bash
# kill -9 anywhere: runs two small plans (YCSB on RocksDB with a
# precondition, a load and runs that insert; db_bench with a fill and
# reads while writing) and kills `kvperf plan run` with all its children
# (SIGKILL to the whole process group) at random points, KILLS times per
# plan, resuming each time with the same command; then lets it finish and
# checks:
#   - every step is in the results file exactly once, and none failed;
#   - every line is a valid kvperf result (`kvperf report` reads them all);
#   - each record's fixed fields (step id, config, kind, workload, threads,
#     repeat, data directory) equal those of an uninterrupted run;
#   - no kvperf process of the run is left after any kill.
#
#   KVPERF=~/.cache/kvperf/target/release/kvperf KILLS=20 scripts/kill-loop.sh
#
# Environment: KVPERF (binary), KILLS (kills per plan, default 10), SEED
# (for the random kill times), WORK (scratch directory; default a new one
# under /tmp, removed at the end unless KEEP=1). Prints one line per kill
# and a summary; exits non-zero on the first check that fails.
set -euo pipefail

KVPERF=${KVPERF:-$HOME/.cache/kvperf/target/release/kvperf}
KILLS=${KILLS:-10}
SEED=${SEED:-$$}
WORK=${WORK:-$(mktemp -d /tmp/kvperf-kill-loop.XXXXXX)}
RANDOM=$SEED
[ -x "$KVPERF" ] || { echo "kill-loop: no kvperf at $KVPERF (set KVPERF)" >&2; exit 2; }
mkdir -p "$WORK"
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT

fail() { echo "kill-loop: FAILED: $*" >&2; exit 1; }

write_plans() {
  cat >"$WORK/ycsb.toml" <<EOF
name = "kill-loop-ycsb"
driver = "ycsb"
engine = "rocksdb"
[properties]
recordcount = 100000
operationcount = 300000
[precondition]
fill = "64MiB"
[[configs]]
name = "rocksdb"
db = "$WORK/DIR/db"
[[steps]]
load = true
workloads = ["a"]
threads = [2]
[[steps]]
workloads = ["a", "c", "d"]
threads = [1, 2]
EOF
  cat >"$WORK/dbbench.toml" <<EOF
name = "kill-loop-dbbench"
driver = "db_bench"
engine = "rocksdb"
[[configs]]
name = "rocksdb"
db = "$WORK/DIR/db"
[[steps]]
load = true
workloads = ["fillrandom"]
threads = [1]
properties = { num = 200000, value_size = 1024 }
[[steps]]
workloads = ["readrandom", "readwhilewriting"]
threads = [1, 2]
properties = { num = 200000, value_size = 1024, reads = 100000 }
EOF
}

# plan_run NAME DIR: `kvperf plan run` of plan NAME into DIR, in the
# foreground; its exit code.
plan_run() {
  local plan=$WORK/$1.toml dir=$WORK/$2
  mkdir -p "$dir"
  sed "s#DIR#$2#" "$plan" >"$dir/plan.toml"
  "$KVPERF" plan run "$dir/plan.toml" --results "$dir/results.jsonl" >"$dir/out.log" 2>&1
}

# The fixed fields of every record, one line each, in file order.
fixed_fields() {
  grep -o '"step":{[^}]*}' "$1"
}

# kill_loop NAME: KILLS random SIGKILLs of the plan's whole process group,
# each after the run is 0.3-6 s old; then the run to its end.
kill_loop() {
  local name=$1 dir=$WORK/$1-killed i
  mkdir -p "$dir"
  sed "s#DIR#$name-killed#" "$WORK/$name.toml" >"$dir/plan.toml"
  for ((i = 1; i <= KILLS; i++)); do
    setsid "$KVPERF" plan run "$dir/plan.toml" --results "$dir/results.jsonl" >>"$dir/out.log" 2>&1 &
    local pid=$! wait_ms=$((300 + RANDOM % 5700))
    sleep "$(printf '%d.%03d' $((wait_ms / 1000)) $((wait_ms % 1000)))"
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 -- "-$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      # Children die with the group (and by PR_SET_PDEATHSIG): none may stay.
      # A process in the middle of an fsync ends when the I/O returns, so
      # it gets up to 20 s to be gone.
      local left=0 t
      for ((t = 0; t < 100; t++)); do
        left=$(pgrep -g "$pid" | wc -l || true)
        [ "$left" -eq 0 ] && break
        sleep 0.2
      done
      [ "$left" -eq 0 ] || fail "$name kill $i: $left processes of the killed run are still running: $(ps -o pid,stat,etime,args -g "$pid" | tail -n +2)"
      echo "$name: kill $i after ${wait_ms} ms; $(grep -c . "$dir/results.jsonl" 2>/dev/null || echo 0) records so far"
    else
      wait "$pid" || true
      echo "$name: kill $i: the plan had finished (${wait_ms} ms)"
    fi
  done
  "$KVPERF" plan run "$dir/plan.toml" --results "$dir/results.jsonl" >>"$dir/out.log" 2>&1 \
    || fail "$name: the final resume failed: $(tail -n 3 "$dir/out.log")"
}

check() {
  local name=$1 ref=$WORK/$1-ref/results.jsonl got=$WORK/$1-killed/results.jsonl
  local dup
  dup=$(grep -o '"step":{"id":"[^"]*"' "$got" | sort | uniq -d)
  [ -z "$dup" ] || fail "$name: steps recorded twice: $dup"
  ! grep -q '"error":{' "$got" || fail "$name: a step is recorded as failed"
  "$KVPERF" report "$got" --out "$WORK/$name-report" >/dev/null \
    || fail "$name: kvperf report cannot read every line"
  diff <(fixed_fields "$ref" | sed "s#$name-ref#RUN#g") <(fixed_fields "$got" | sed "s#$name-killed#RUN#g") >/dev/null \
    || fail "$name: fixed fields differ from the uninterrupted run"
  echo "$name: $(grep -c . "$got") records, each step once, fixed fields as uninterrupted, every line valid"
}

write_plans
echo "kill-loop: $KILLS kills per plan, seed $SEED, work in $WORK ($("$KVPERF" --version | head -n 1))"
for name in ycsb dbbench; do
  plan_run "$name" "$name-ref" || fail "$name: the uninterrupted run failed: $(tail -n 3 "$WORK/$name-ref/out.log")"
  kill_loop "$name"
  check "$name"
done
echo "kill-loop: passed"
