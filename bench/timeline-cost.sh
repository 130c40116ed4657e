#!/usr/bin/env bash
# The cost of time-resolved results (issue 24): the same runs with a kvperf
# built before timelines (BEFORE) and one with them (KVPERF), alternating
# which goes first in every repeat; the second also with --metrics-addr
# (live figures served). Null engine (the driver alone, where any cost
# shows most) and RocksDB, workload C.
#
#   BEFORE=/path/to/old/kvperf bench/timeline-cost.sh > timeline-cost.md
#
# Env vars (defaults):
#   BEFORE              (required) a kvperf binary without timelines
#   KVPERF              the binary with them (bench/lib.sh's default)
#   REPEATS=5           alternating repeats per cell
#   SECONDS_EACH=5      maxexecutiontime of each run
#   RECORDS=100000      records of the RocksDB store (loaded once)
#   CELLS="null:1 null:2 rocksdb:2"   engine:threads
#
# Output: a markdown table, median (min-max) ops/s and the ratios of the
# medians; raw outputs under $BENCH_CACHE/logs/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

BEFORE=${BEFORE:?set BEFORE to a kvperf binary built without timelines}
REPEATS=${REPEATS:-5}
SECONDS_EACH=${SECONDS_EACH:-5}
RECORDS=${RECORDS:-100000}
CELLS=${CELLS:-"null:1 null:2 rocksdb:2"}

require_kvperf
new_log_dir timeline-cost
store=$BENCH_CACHE/timeline-cost-rocksdb
rm -rf "$store"
port=$(( 20000 + RANDOM % 20000 ))

props=(-P "$WORKLOADS_DIR/workloadc" -p recordcount="$RECORDS" -p operationcount=0
  -p maxexecutiontime="$SECONDS_EACH" -p fieldcount=10 -p fieldlength=100)
run_phase "$LOG_DIR/load.txt" "$KVPERF" load --db "$store" --fresh "${props[@]}" -threads 2 || exit 1

echo "Cost of timelines, workload C, ${SECONDS_EACH} s runs, $REPEATS alternating repeats ($(date -u +%F\ %H:%M) UTC, $(nproc) cores)"
echo "before: $("$BEFORE" --version | head -n 1); after: $("$KVPERF" --version | head -n 1)"
echo
md_row engine threads "before ops/s" "after ops/s" "after, --metrics-addr" "after/before" "served/before" "after vs before, 95% CI"
md_row --- ---: ---: ---: ---: ---: ---: ---
for cell in $CELLS; do
  engine=${cell%%:*}
  threads=${cell##*:}
  db=()
  [ "$engine" = rocksdb ] && db=(--db "$store")
  before="" after="" served=""
  for r in $(seq 1 "$REPEATS"); do
    order="before after served"
    [ $((r % 2)) = 0 ] && order="served after before"
    for which in $order; do
      log=$LOG_DIR/$engine-t$threads-$which-$r.txt
      case $which in
        before) run_phase "$log" "$BEFORE" run --engine "$engine" "${db[@]}" "${props[@]}" -threads "$threads" || FAILED=1 ;;
        after) run_phase "$log" "$KVPERF" run --engine "$engine" "${db[@]}" "${props[@]}" -threads "$threads" || FAILED=1 ;;
        served) run_phase "$log" "$KVPERF" run --engine "$engine" "${db[@]}" "${props[@]}" -threads "$threads" \
                  --metrics-addr "127.0.0.1:$port" || FAILED=1 ;;
      esac
      v=$(throughput "$log" 2>/dev/null || true)
      case $which in
        before) before="$before $v" ;;
        after) after="$after $v" ;;
        served) served="$served $v" ;;
      esac
    done
  done
  awk -v e="$engine" -v t="$threads" -v b="$before" -v a="$after" -v s="$served" -v kvperf="$KVPERF" "$AWK_STATS"'
    function cell(list) { return sprintf("%.0f (%.0f-%.0f)", median(list), lo(list), hi(list)) }
    BEGIN {
      printf "| %s | %s | %s | %s | %s | %.2f | %.2f | %s |\n", e, t, cell(b), cell(a), cell(s),
        median(a) / median(b), median(s) / median(b), judge(b, a, "higher")
    }'
done
rm -rf "$store"
exit "$FAILED"
