#!/usr/bin/env bash
# Every embedded engine through kvperf beside the engine alone (issue 27,
# item 1). Per engine: one YCSB load of 1 KB records (10 x 100 B, as seed
# 002); then for workloads A and C at 1 and 2 threads, REPEATS alternating
# runs of `kvperf run` and of engine-loop (bench/engine_loop.rs: the same
# operations on the same keys, drawn by kvperf's own generators with the
# same seed, called through the engine's own API, nothing timed per
# operation). Repeat r runs both with seed SEED+r. A's updates change the
# store for the runs after them, kvperf's and the bare loop's alike.
# kvperf should reach at least 0.95x of the bare loop in every row.
#
#   bench/engines-vs-bare-loop.sh > engines.md
#   RECORDS=2000 OPS=20000 REPEATS=1 bench/engines-vs-bare-loop.sh   # quick: every loop finds its keys
#
# Env vars (defaults): RECORDS=1000000 OPS=1000000 REPEATS=5 THREADS="1 2"
#   WORKLOADS="a c" SEED=1 ENGINES="rocksdb wiredtiger lmdb sqlite fjall redb"
#   KVPERF, BENCH_CACHE: see bench/lib.sh; ENGINE_LOOP: the bare loop
#   (default: the example beside KVPERF, built if missing)
#
# Output: a markdown table, one row per engine, workload and thread count:
# median (min-max) ops/s of each, kvperf/bare loop of the medians and its
# 95% interval (kvperf verdict); raw outputs under $BENCH_CACHE/logs/. The
# stores are made in $BENCH_CACHE/engines-data/ and removed after each engine.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RECORDS=${RECORDS:-1000000}
OPS=${OPS:-1000000}
REPEATS=${REPEATS:-5}
THREADS=${THREADS:-"1 2"}
WORKLOADS=${WORKLOADS:-"a c"}
SEED=${SEED:-1}
ENGINES=${ENGINES:-"rocksdb wiredtiger lmdb sqlite fjall redb"}

require_kvperf
LOOP=${ENGINE_LOOP:-$(example_beside_kvperf engine-loop)}
new_log_dir engines-vs-bare-loop
DATA=$BENCH_CACHE/engines-data
FIELDS=(fieldcount=10 fieldlength=100)
SHAPE=(-p "recordcount=$RECORDS" -p "operationcount=$OPS" -p "${FIELDS[0]}" -p "${FIELDS[1]}")

# same_operations LOOP_LOG KVPERF_LOG: one line and false unless both did
# as many reads and as many updates (the same seed must give the same ops).
same_operations() {
  local group a b
  [ -f "$1" ] && [ -f "$2" ] || return 0   # a failed phase was reported already
  for group in READ UPDATE; do
    a=$(ycsb_value "$1" "$group" Operations) b=$(ycsb_value "$2" "$group" Operations)
    if [ "$a" != "$b" ]; then
      echo "error: $(basename "$1" .txt): ${a:-no} $group operations, kvperf ${b:-none}: not the same operations" >&2
      return 1
    fi
  done
}

echo "kvperf vs the engine alone: $RECORDS records of 10 x 100 B, $OPS operations per run, $REPEATS alternating repeats, seeds $((SEED + 1))..$((SEED + REPEATS)) ($("$KVPERF" --version | head -n 1); $(date -u +%F\ %H:%M) UTC, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
echo
md_row engine version workload threads "bare loop ops/s" "kvperf ops/s" "kvperf/bare loop" "kvperf vs bare loop, 95% CI"
md_row --- --- --- ---: ---: ---: ---: ---
for engine in $ENGINES; do
  db=$DATA/$engine
  L=$LOG_DIR/$engine
  rm -rf "$db"
  run_phase "$L-load.txt" "$KVPERF" load --fresh --engine "$engine" --db "$db" \
    -P "$WORKLOADS_DIR/workloada" "${SHAPE[@]}" -threads 2 || { FAILED=1; continue; }
  for w in $WORKLOADS; do
    for t in $THREADS; do
      bare="" kv=""
      for r in $(seq 1 "$REPEATS"); do
        seed=$((SEED + r))
        # Alternate which goes first.
        order="loop kvperf"
        [ $((r % 2)) = 0 ] && order="kvperf loop"
        for which in $order; do
          log=$L-$w-t$t-$which-r$r.txt
          case $which in
            loop) run_phase "$log" "$LOOP" "$engine" "$db" "$w" "$RECORDS" "$OPS" "$t" "$seed" "${FIELDS[@]}" || FAILED=1 ;;
            kvperf) run_phase "$log" "$KVPERF" run --engine "$engine" --db "$db" -P "$WORKLOADS_DIR/workload$w" \
                      "${SHAPE[@]}" -p seed="$seed" -threads "$t" || FAILED=1 ;;
          esac
          v=$(throughput "$log")
          case $which in
            loop) bare="$bare $v" ;;
            kvperf) kv="$kv $v" ;;
          esac
        done
        same_operations "$L-$w-t$t-loop-r$r.txt" "$L-$w-t$t-kvperf-r$r.txt" || FAILED=1
      done
      version=$(sed -n 's/.*bare loop:.*(version \(.*\))$/\1/p' "$L-$w-t$t-loop-r1.txt" 2>/dev/null | head -n 1)
      awk -v e="$engine" -v v="${version:--}" -v w="$w" -v t="$t" -v b="$bare" -v k="$kv" -v kvperf="$KVPERF" "$AWK_STATS"'
        function cell(list) { return list ~ /[0-9]/ ? sprintf("%.0f (%.0f-%.0f)", median(list), lo(list), hi(list)) : "-" }
        BEGIN {
          r = (b ~ /[0-9]/ && k ~ /[0-9]/ && median(b) > 0) ? sprintf("%.2f", median(k) / median(b)) : "-"
          printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", e, v, toupper(w), t, cell(b), cell(k), r, judge(b, k, "higher")
        }'
    done
  done
  rm -rf "$db"
done
echo
echo "Raw outputs: $LOG_DIR"
exit "$FAILED"
