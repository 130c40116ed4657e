#!/usr/bin/env bash
# The driver against its floor (issue 27, item 7): kvperf's null engine on
# workload C (every operation timed and recorded, as in any run) against
# driver-floor (bench/driver_floor.rs: the same zipfian draw, key
# formatting, clock reads and histogram record on kvperf's own parts, and
# nothing else), alternating which goes first in every repeat.
#
#   bench/driver-floor.sh > driver-floor.md
#
# Env vars (defaults):
#   REPEATS=5           alternating repeats per thread count
#   SECONDS_EACH=5      length of each run
#   RECORDS=1000000     recordcount (the zipfian's range; nothing is stored)
#   THREADS="1 2"
#   KVPERF, BENCH_CACHE: see bench/lib.sh; FLOOR: the driver-floor binary
#   (default: the example beside KVPERF, built if missing)
#
# Output: a markdown table, median (min-max) ops/s of each, kvperf/floor
# of the medians and its 95% interval (kvperf verdict); raw outputs under
# $BENCH_CACHE/logs/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPEATS=${REPEATS:-5}
SECONDS_EACH=${SECONDS_EACH:-5}
RECORDS=${RECORDS:-1000000}
THREADS=${THREADS:-"1 2"}

require_kvperf
FLOOR=${FLOOR:-$(example_beside_kvperf driver-floor)}
new_log_dir driver-floor

echo "Driver vs its floor, workload C, RECORDS=$RECORDS, ${SECONDS_EACH} s runs, $REPEATS alternating repeats ($(date -u +%F\ %H:%M) UTC, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
echo "kvperf: $("$KVPERF" --version | head -n 1)"
echo
md_row threads "floor ops/s" "kvperf null ops/s" "kvperf/floor" "kvperf vs floor, 95% CI"
md_row ---: ---: ---: ---: ---
for t in $THREADS; do
  floor="" kv=""
  for r in $(seq 1 "$REPEATS"); do
    order="floor kvperf"
    [ $((r % 2)) = 0 ] && order="kvperf floor"
    for which in $order; do
      log=$LOG_DIR/$which-t$t-$r.txt
      case $which in
        floor) run_phase "$log" "$FLOOR" "$RECORDS" "$SECONDS_EACH" "$t" || FAILED=1 ;;
        kvperf) run_phase "$log" "$KVPERF" run --engine null -P "$WORKLOADS_DIR/workloadc" \
                  -p recordcount="$RECORDS" -p operationcount=0 -p maxexecutiontime="$SECONDS_EACH" \
                  -threads "$t" || FAILED=1 ;;
      esac
      v=$(throughput "$log" 2>/dev/null || true)
      case $which in
        floor) floor="$floor $v" ;;
        kvperf) kv="$kv $v" ;;
      esac
    done
  done
  awk -v t="$t" -v f="$floor" -v k="$kv" -v kvperf="$KVPERF" "$AWK_STATS"'
    function cell(list) { return sprintf("%.0f (%.0f-%.0f)", median(list), lo(list), hi(list)) }
    BEGIN {
      printf "| %s | %s | %s | %.2f | %s |\n", t, cell(f), cell(k), median(k) / median(f), judge(f, k, "higher")
    }'
done
exit "$FAILED"
