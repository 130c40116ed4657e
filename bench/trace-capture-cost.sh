#!/usr/bin/env bash
# The cost of capturing a trace (issue 49): the same run without and with
# -p trace.output=FILE, alternating which goes first in every repeat, on
# the null engine (the driver alone, where the cost shows most) and RocksDB,
# workload B.
#
#   bench/trace-capture-cost.sh > trace-capture-cost.md
#
# Env vars (defaults):
#   KVPERF              the binary (bench/lib.sh's default)
#   REPEATS=5           alternating repeats per cell
#   SECONDS_EACH=5      maxexecutiontime of each run
#   RECORDS=100000      records of the RocksDB store (loaded once)
#   CELLS="null:1 null:2 rocksdb:2"   engine:threads
#
# Output: a markdown table, median (min-max) ops/s without and with the
# capture, their ratio and bench/lib.sh's judgement of the difference;
# raw outputs and traces under $BENCH_CACHE/logs/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPEATS=${REPEATS:-5}
SECONDS_EACH=${SECONDS_EACH:-5}
RECORDS=${RECORDS:-100000}
CELLS=${CELLS:-"null:1 null:2 rocksdb:2"}

require_kvperf
new_log_dir trace-capture-cost
store=$BENCH_CACHE/trace-capture-cost-rocksdb
rm -rf "$store"

props=(-P "$WORKLOADS_DIR/workloadb" -p recordcount="$RECORDS" -p operationcount=0
  -p maxexecutiontime="$SECONDS_EACH")
run_phase "$LOG_DIR/load.txt" "$KVPERF" load --db "$store" --fresh "${props[@]}" -threads 2 || exit 1

echo "Cost of -p trace.output, workload B, ${SECONDS_EACH} s runs, $REPEATS alternating repeats ($(date -u +%F\ %H:%M) UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "kvperf: $("$KVPERF" --version | head -n 1)"
echo
md_row engine threads "without ops/s" "with ops/s" "with/without" "trace bytes/op" "with vs without, 95% CI"
md_row --- ---: ---: ---: ---: ---: ---
for cell in $CELLS; do
  engine=${cell%%:*}
  threads=${cell##*:}
  db=()
  [ "$engine" = rocksdb ] && db=(--db "$store")
  without="" with="" bytes_per_op=""
  for r in $(seq 1 "$REPEATS"); do
    order="without with"
    [ $((r % 2)) = 0 ] && order="with without"
    for which in $order; do
      log=$LOG_DIR/$engine-t$threads-$which-$r.txt
      trace=$LOG_DIR/$engine-t$threads-$r.kvtrace
      capture=()
      [ "$which" = with ] && capture=(-p trace.output="$trace")
      run_phase "$log" "$KVPERF" run --engine "$engine" "${db[@]}" "${props[@]}" -threads "$threads" "${capture[@]}" || FAILED=1
      v=$(throughput "$log" 2>/dev/null || true)
      case $which in
        without) without="$without $v" ;;
        with)
          with="$with $v"
          ops=$(awk -F', ' '/^\[OVERALL\], Operations,/ {print $3}' "$log")
          [ -n "$ops" ] && [ -f "$trace" ] && bytes_per_op=$(awk -v b="$(stat -c %s "$trace")" -v n="$ops" 'BEGIN {printf "%.1f", b / n}')
          rm -f "$trace" ;;
      esac
    done
  done
  awk -v e="$engine" -v t="$threads" -v a="$without" -v b="$with" -v bpo="$bytes_per_op" "$AWK_STATS"'
    function cell(list) { return sprintf("%.0f (%.0f-%.0f)", median(list), lo(list), hi(list)) }
    BEGIN {
      printf "| %s | %s | %s | %s | %.3f | %s | %s |\n", e, t, cell(a), cell(b),
        median(b) / median(a), bpo, judge(a, b, "higher")
    }'
done
rm -rf "$store"
exit "$FAILED"
