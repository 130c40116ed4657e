#!/usr/bin/env bash
# Every embedded engine through kvperf beside the engine alone: YCSB load,
# A, B, C, F and D with 1 KB records (10 x 100 B, as seed 002), at 2
# threads; then workload C against a bare loop of the same reads calling
# the engine's handle directly (bench/engine_loop.rs), REPEATS times each,
# alternating. kvperf's C should reach at least 0.9x of the bare loop.
#
#   bench/engines-vs-bare-loop.sh > engines.md
#   RECORDS=100000 OPS=200000 REPEATS=1 ENGINES="lmdb redb" bench/engines-vs-bare-loop.sh   # quick
#
# Env vars (defaults): RECORDS=1000000 OPS=1000000 THREADS=2 REPEATS=5
#   ENGINES="rocksdb wiredtiger lmdb sqlite fjall redb"; KVPERF, BENCH_CACHE: bench/lib.sh
#   ENGINE_LOOP=~/.cache/kvperf/target/release/examples/engine-loop  the bare loop
#     (built there from this checkout when missing; never next to a copied KVPERF)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RECORDS=${RECORDS:-1000000}
OPS=${OPS:-1000000}
THREADS=${THREADS:-2}
REPEATS=${REPEATS:-5}
ENGINES=${ENGINES:-"rocksdb wiredtiger lmdb sqlite fjall redb"}

require_kvperf
TARGET=${CARGO_TARGET_DIR:-$HOME/.cache/kvperf/target}
LOOP=${ENGINE_LOOP:-$TARGET/release/examples/engine-loop}
if [ ! -x "$LOOP" ]; then
  (cd "$REPO_DIR" && CARGO_TARGET_DIR=$TARGET cargo build --release --locked --example engine-loop >&2)
fi
new_log_dir engines-vs-bare-loop
DATA=$BENCH_CACHE/engines-data
SHAPE=(-p "recordcount=$RECORDS" -p "operationcount=$OPS" -p fieldcount=10 -p fieldlength=100 -threads "$THREADS")

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minmax() { tr ' ' '\n' | grep -v '^$' | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f-%.0f", lo, hi }'; }

echo "kvperf vs the engine alone, $RECORDS records of 10 x 100 B, $OPS operations per run, $THREADS threads, $REPEATS alternating repeats of C and the bare loop ($("$KVPERF" --version | head -n 1); $(nproc) cores; $(date -u +%F))"
echo
md_row engine version load A B F D "C median (min-max)" "bare loop median (min-max)" "C / bare loop"
md_row --- --- ---: ---: ---: ---: ---: ---: ---: ---:
for engine in $ENGINES; do
  db=$DATA/$engine
  rm -rf "$db"
  L=$LOG_DIR/$engine
  run_phase "$L-load.txt" "$KVPERF" load --fresh --engine "$engine" --db "$db" -P "$WORKLOADS_DIR/workloada" "${SHAPE[@]}" || { FAILED=1; continue; }
  declare -A tput=()
  for w in a b f d; do
    run_phase "$L-$w.txt" "$KVPERF" run --engine "$engine" --db "$db" -P "$WORKLOADS_DIR/workload$w" "${SHAPE[@]}" || FAILED=1
    tput[$w]=$(throughput "$L-$w.txt")
  done
  c_runs="" loop_runs=""
  for r in $(seq 1 "$REPEATS"); do
    # Alternate which goes first.
    order="c loop"; [ $((r % 2)) = 0 ] && order="loop c"
    for which in $order; do
      if [ "$which" = c ]; then
        run_phase "$L-c-r$r.txt" "$KVPERF" run --engine "$engine" --db "$db" -P "$WORKLOADS_DIR/workloadc" "${SHAPE[@]}" || FAILED=1
        c_runs+=" $(throughput "$L-c-r$r.txt")"
      else
        "$LOOP" "$engine" "$db" "$RECORDS" "$OPS" "$THREADS" >"$L-loop-r$r.txt" 2>&1 || { FAILED=1; cat "$L-loop-r$r.txt" >&2; }
        loop_runs+=" $(awk '/bare loop:/ { for (i = 1; i < NF; i++) if ($(i + 1) == "ops/s") print $i }' "$L-loop-r$r.txt")"
      fi
    done
  done
  c=$(echo "$c_runs" | median); bare=$(echo "$loop_runs" | median)
  version=$(sed -n 's/.*(version \(.*\)).*/\1/p' "$L-loop-r1.txt" | head -1)
  md_row "$engine" "${version:--}" "$(num "$(throughput "$L-load.txt")")" "$(num "${tput[a]}")" "$(num "${tput[b]}")" \
    "$(num "${tput[f]}")" "$(num "${tput[d]}")" "$(num "$c") ($(echo "$c_runs" | minmax))" \
    "$(num "$bare") ($(echo "$loop_runs" | minmax))" "$(ratio "$c" "$bare")"
  rm -rf "$db"
done
echo
echo "Raw outputs: $LOG_DIR"
exit "$FAILED"
