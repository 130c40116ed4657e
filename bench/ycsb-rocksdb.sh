#!/usr/bin/env bash
# kvperf's RocksDB engine vs YCSB 0.17.0 (Java) with a RocksDB binding
# (bench/java/src/kvperf/bench/RocksDBClient.java: YCSB's record layout and
# read-before-update, kvperf's RocksDB options), same workloads and sizes.
#
#   bench/ycsb-rocksdb.sh > ycsb-rocksdb.md
#   THREADS="2 64 256" bench/ycsb-rocksdb.sh
#   RECORDS=20000 OPS=20000 bench/ycsb-rocksdb.sh                  # quick check
#   EXTRA_PROPS="-p rocksdb.compression=none" bench/ycsb-rocksdb.sh # both tools
#
# Env vars (defaults):
#   RECORDS=1000000     recordcount
#   OPS=1000000         operationcount of each workload
#   THREADS=2           client thread counts, e.g. "2 64 256"
#   FIELDCOUNT=10  FIELDLENGTH=100
#   WORKLOADS="a b c f d"   run after one load, in this order (D last: it inserts)
#   EXTRA_PROPS=""      extra "-p k=v" for both tools (kvperf and the binding
#                       share the rocksdb.* option names)
#   SETTLE=1            after every phase, let the store finish its flushes and
#                       compactions (outside both tools' measurements: `kvperf
#                       settle`, `RocksDBClient settle`), so each phase of both
#                       tools starts from a quiet LSM tree; 0 = back to back
#   KVPERF, BENCH_CACHE, JAVA_OPTS: see bench/lib.sh
#
# For each thread count each tool runs its whole sequence (load, then the
# workloads) on its own fresh data directory, $BENCH_CACHE/data-<tool>-t<N>,
# which this script creates and removes; the tool that goes first alternates
# between thread counts. Output: a markdown table on stdout with throughput and
# the p99 latency of each workload's main operation; progress on stderr; raw
# outputs and each store's RocksDB OPTIONS file under $BENCH_CACHE/logs/.
#
# Keep in mind: YCSB's RunTime includes opening and closing the DB (the binding
# flushes memtables on close, as kvperf's engine does); kvperf's excludes both.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RECORDS=${RECORDS:-1000000}
OPS=${OPS:-1000000}
THREADS=${THREADS:-2}
FIELDCOUNT=${FIELDCOUNT:-10}
FIELDLENGTH=${FIELDLENGTH:-100}
WORKLOADS=${WORKLOADS:-"a b c f d"}
EXTRA_PROPS=${EXTRA_PROPS:-}
SETTLE=${SETTLE:-1}

# The operation whose p99 the table shows.
main_op() {
  case $1 in
    load) echo INSERT ;;
    a) echo UPDATE ;;
    f) echo READ-MODIFY-WRITE ;;
    e) echo SCAN ;;
    *) echo READ ;;
  esac
}

require_kvperf
ycsb_java_setup
new_log_dir ycsb-rocksdb

# phase TOOL load|run WORKLOAD DIR THREADS
phase() {
  local tool=$1 cmd=$2 w=$3 dir=$4 t=$5 name=$3
  [ "$cmd" = load ] && name=load
  local log=$LOG_DIR/$tool-t$t-$name.txt
  local -a props=(-P "$WORKLOADS_DIR/workload$w" -p recordcount="$RECORDS" -p operationcount="$OPS"
                  -p fieldcount="$FIELDCOUNT" -p fieldlength="$FIELDLENGTH")
  # shellcheck disable=SC2086  # JAVA_OPTS and EXTRA_PROPS are lists of words
  case $tool in
    ycsb)
      local flag=-t
      [ "$cmd" = load ] && flag=-load
      run_phase "$log" java $JAVA_OPTS -cp "$YCSB_LIB/*" site.ycsb.Client "$flag" -db kvperf.bench.RocksDBClient \
        "${props[@]}" -p measurementtype=hdrhistogram -p rocksdb.dir="$dir" -threads "$t" $EXTRA_PROPS ;;
    kvperf)
      run_phase "$log" "$KVPERF" "$cmd" "${props[@]}" --db "$dir" -threads "$t" $EXTRA_PROPS ;;
  esac
  local rc=$?
  [ "$SETTLE" = 1 ] && settle "$tool" "$dir"
  return "$rc"
}

# settle TOOL DIR: wait until the store's background work is done.
settle() {
  # EXTRA_PROPS words are "-p k=v" pairs; the Java settle takes bare "k=v".
  # shellcheck disable=SC2086
  case $1 in
    ycsb) java $JAVA_OPTS -cp "$YCSB_LIB/*" kvperf.bench.RocksDBClient settle "$2" $(printf '%s\n' $EXTRA_PROPS | grep -v '^-p$') ;;
    kvperf) "$KVPERF" settle --db "$2" $EXTRA_PROPS ;;
  esac >&2 || echo "warning: settling $1's store failed" >&2
}

# options_differences A B: "name: a -> b, ..." for the options that both RocksDB
# OPTIONS files hold with different values; {...} values are compared item by
# item. Options (or items) only one RocksDB version has are left out.
options_differences() {
  awk '
    function note(key, val) {
      if (FILENAME == ARGV[1]) a[key] = val
      else if (key in a && a[key] != val) { printf "%s%s: %s -> %s", sep, key, a[key], val; sep = ", " }
    }
    /^[[:space:]]+[A-Za-z_]+=/ {
      key = substr($1, 1, index($1, "=") - 1); val = substr($0, index($0, "=") + 1)
      if (val !~ /^\{/) { note(key, val); next }
      n = split(substr(val, 2, length(val) - 2), items, ";")
      for (i = 1; i <= n; i++) if (items[i] != "") note(key "." substr(items[i], 1, index(items[i], "=") - 1), substr(items[i], index(items[i], "=") + 1))
    }
  ' "$1" "$2"
}

# sequence TOOL THREADS: load, then every workload, on a fresh data directory.
DATA_DIR=
trap '[ -z "$DATA_DIR" ] || rm -rf "$DATA_DIR"' EXIT
sequence() {
  local tool=$1 t=$2 w
  DATA_DIR=$BENCH_CACHE/data-$tool-t$t
  rm -rf "$DATA_DIR"
  if phase "$tool" load a "$DATA_DIR" "$t"; then
    for w in $WORKLOADS; do phase "$tool" run "$w" "$DATA_DIR" "$t" || FAILED=1; done
  else
    FAILED=1
    echo "# skipping $tool's workloads at $t threads: its load failed" >&2
  fi
  local options
  options=$(ls -t "$DATA_DIR"/OPTIONS-* 2>/dev/null | head -n 1 || true)
  if [ -n "$options" ]; then cp "$options" "$LOG_DIR/$tool-t$t.OPTIONS"; fi
  rm -rf "$DATA_DIR"
  DATA_DIR=
}

jni=$(cd "$YCSB_LIB" && ls rocksdbjni-*.jar)
echo "RocksDB, RECORDS=$RECORDS OPS=$OPS FIELDCOUNT=$FIELDCOUNT FIELDLENGTH=$FIELDLENGTH${EXTRA_PROPS:+ $EXTRA_PROPS}:" \
  "YCSB + kvperf.bench.RocksDBClient (${jni%.jar}) vs kvperf ($(versions))"
echo
md_row workload threads "YCSB ops/s" "kvperf ops/s" "kvperf/YCSB" "p99 of" "YCSB p99 us" "kvperf p99 us"
md_row --- ---: ---: ---: ---: --- ---: ---:
turn=0
for t in $THREADS; do
  if [ $((turn % 2)) = 0 ]; then order="ycsb kvperf"; else order="kvperf ycsb"; fi
  turn=$((turn + 1))
  for tool in $order; do sequence "$tool" "$t"; done
  for w in load $WORKLOADS; do
    y=$LOG_DIR/ycsb-t$t-$w.txt
    k=$LOG_DIR/kvperf-t$t-$w.txt
    op=$(main_op "$w")
    md_row "$w" "$t" "$(num "$(throughput "$y")")" "$(num "$(throughput "$k")")" \
      "$(ratio "$(throughput "$k")" "$(throughput "$y")")" "$op" \
      "$(num "$(p99_us "$y" "$op")")" "$(num "$(p99_us "$k" "$op")")"
  done
  if [ -f "$LOG_DIR/ycsb-t$t.OPTIONS" ] && [ -f "$LOG_DIR/kvperf-t$t.OPTIONS" ]; then
    differences=$(options_differences "$LOG_DIR/ycsb-t$t.OPTIONS" "$LOG_DIR/kvperf-t$t.OPTIONS")
    echo "# RocksDB options set differently in the two stores (YCSB -> kvperf): ${differences:-none}" >&2
  fi
done
exit "$FAILED"
