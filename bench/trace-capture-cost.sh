#!/usr/bin/env bash
# The cost of capturing a trace (issue 49): the same run without a capture,
# with kvperf's own -p trace.output=FILE and (RocksDB) with RocksDB's own
# -p rocksdb.trace=FILE, the order of the modes reversed in every other
# repeat, on the null engine (the driver alone, where the cost shows most)
# and RocksDB, workload B.
#
#   bench/trace-capture-cost.sh > trace-capture-cost.md
#
# Env vars (defaults):
#   KVPERF              the binary (bench/lib.sh's default)
#   REPEATS=5           repeats per cell and mode
#   SECONDS_EACH=10     maxexecutiontime of each run (kvperf warns under 10 s)
#   RECORDS=100000      records of the RocksDB store (loaded once)
#   CELLS="null:1 null:2 rocksdb:2"   engine:threads
#
# Output: a markdown table, per cell and capture, median (min-max) ops/s
# without and with it, their ratio, the trace's bytes per operation and
# `kvperf verdict` on the difference; the machine's load average before
# and after. Raw outputs (and the store) under $BENCH_CACHE/logs/; the
# traces are removed after their size is read.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPEATS=${REPEATS:-5}
SECONDS_EACH=${SECONDS_EACH:-10}
RECORDS=${RECORDS:-100000}
CELLS=${CELLS:-"null:1 null:2 rocksdb:2"}

require_kvperf
new_log_dir trace-capture-cost
store=$LOG_DIR/rocksdb-store   # inside this run's fresh log directory

workload=(-P "$WORKLOADS_DIR/workloadb" -p recordcount="$RECORDS")
run_props=("${workload[@]}" -p operationcount=0 -p maxexecutiontime="$SECONDS_EACH")
case " $CELLS " in
  *" rocksdb:"*)
    run_phase "$LOG_DIR/load.txt" "$KVPERF" load --db "$store" --fresh "${workload[@]}" -threads 2 || exit 1 ;;
esac

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "Cost of capturing a trace, workload B, ${SECONDS_EACH} s runs, $REPEATS repeats per mode, order reversed every other repeat ($(date -u +%F\ %H:%M) UTC, $(nproc) cores, load average before: $load_before)"
echo "kvperf: $("$KVPERF" --version | head -n 1)"
echo
md_row engine threads capture "without ops/s" "with ops/s" "with/without" "trace bytes/op" "with vs without (kvperf verdict)"
md_row --- ---: --- ---: ---: ---: ---: ---
for cell in $CELLS; do
  engine=${cell%%:*}
  threads=${cell##*:}
  db=()
  modes="none kvperf"
  if [ "$engine" = rocksdb ]; then
    db=(--db "$store")
    modes="none kvperf rocksdb"
  fi
  declare -A ops_s=() bytes=()
  for r in $(seq 1 "$REPEATS"); do
    order=$modes
    [ $((r % 2)) = 0 ] && order=$(echo "$modes" | tr ' ' '\n' | tac | tr '\n' ' ')
    for mode in $order; do
      log=$LOG_DIR/$engine-t$threads-$mode-$r.txt
      trace=$LOG_DIR/$engine-t$threads-$mode-$r.trace
      capture=()
      case $mode in
        kvperf) capture=(-p trace.output="$trace") ;;
        rocksdb) capture=(-p rocksdb.trace="$trace") ;;
      esac
      run_phase "$log" "$KVPERF" run --engine "$engine" "${db[@]}" "${run_props[@]}" -threads "$threads" "${capture[@]}" || FAILED=1
      ops_s[$mode]="${ops_s[$mode]:-} $(throughput "$log" 2>/dev/null || true)"
      # kvperf prints no [OVERALL] count: the sum of the kinds' counts.
      ops=$(awk -F', ' '$2 == "Operations" && $1 !~ /^\[Intended/ { n += $3 } END { if (n) print n }' "$log" 2>/dev/null || true)
      if [ "$mode" != none ] && [ -n "$ops" ] && [ -f "$trace" ]; then
        bytes[$mode]="${bytes[$mode]:-} $(awk -v b="$(stat -c %s "$trace")" -v n="$ops" 'BEGIN {printf "%.1f", b / n}')"
      fi
      rm -f "$trace"
    done
  done
  for mode in $modes; do
    [ "$mode" = none ] && continue
    case $mode in kvperf) name="trace.output" ;; rocksdb) name="rocksdb.trace" ;; esac
    awk -v e="$engine" -v t="$threads" -v c="$name" -v a="${ops_s[none]:-}" -v b="${ops_s[$mode]:-}" \
      -v bpo="${bytes[$mode]:-}" -v kvperf="$KVPERF" "$AWK_STATS"'
      function cell(list) { return sprintf("%.0f (%.0f-%.0f)", median(list), lo(list), hi(list)) }
      BEGIN {
        printf "| %s | %s | %s | %s | %s | %.3f | %s | %s |\n", e, t, c, cell(a), cell(b),
          median(b) / median(a), (bpo == "" ? "-" : sprintf("%.1f", median(bpo))), judge(a, b, "higher")
      }'
  done
  unset ops_s bytes
done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg). Raw outputs: $LOG_DIR"
rm -rf "$store"
exit "$FAILED"
