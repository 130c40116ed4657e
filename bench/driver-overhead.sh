#!/usr/bin/env bash
# Driver overhead, side by side: YCSB 0.17.0 (Java) with its no-op binding
# site.ycsb.BasicDB against kvperf's `null` engine, in the same script run.
# Neither stores anything, so the throughput is the cost of the driver itself
# (key choice, value generation, latency recording, threads).
#
#   bench/driver-overhead.sh > driver-overhead.md
#   OPS=20000 RECORDS=20000 bench/driver-overhead.sh     # quick check
#
# Env vars (defaults):
#   OPS=10000000        operationcount (the JVM needs millions to warm up)
#   RECORDS=1000000     recordcount (no load phase: neither binding stores data)
#   THREADS="1 2"       client thread counts
#   WORKLOADS="a c"     core workloads from workloads/
#   KVPERF, BENCH_CACHE, JAVA_OPTS: see bench/lib.sh
#
# Output: a markdown table on stdout (throughputs from the
# "[OVERALL], Throughput(ops/sec)" lines, which both tools print);
# progress on stderr; raw outputs under $BENCH_CACHE/logs/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

OPS=${OPS:-10000000}
RECORDS=${RECORDS:-1000000}
THREADS=${THREADS:-"1 2"}
WORKLOADS=${WORKLOADS:-"a c"}

require_kvperf
ycsb_java_setup
new_log_dir driver-overhead

echo "Driver overhead, RECORDS=$RECORDS OPS=$OPS: YCSB site.ycsb.BasicDB vs kvperf --engine null ($(versions))"
echo
md_row workload threads "YCSB BasicDB ops/s" "kvperf null ops/s" "kvperf/YCSB"
md_row --- ---: ---: ---: ---:
for w in $WORKLOADS; do
  for t in $THREADS; do
    props=(-P "$WORKLOADS_DIR/workload$w" -p recordcount="$RECORDS" -p operationcount="$OPS")
    ycsb=$LOG_DIR/ycsb-basicdb-$w-t$t.txt
    kv=$LOG_DIR/kvperf-null-$w-t$t.txt
    # shellcheck disable=SC2086  # JAVA_OPTS is a list of flags
    run_phase "$ycsb" java $JAVA_OPTS -cp "$YCSB_LIB/*" site.ycsb.Client -t -db site.ycsb.BasicDB \
      "${props[@]}" -p basicdb.verbose=false -p measurementtype=hdrhistogram -threads "$t" || FAILED=1
    run_phase "$kv" "$KVPERF" run --engine null "${props[@]}" -threads "$t" || FAILED=1
    y=$(throughput "$ycsb")
    k=$(throughput "$kv")
    md_row "$w" "$t" "$(num "$y")" "$(num "$k")" "$(ratio "$k" "$y")"
  done
done
exit "$FAILED"
