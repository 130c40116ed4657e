#!/usr/bin/env bash
# kvperf against latte (a Cassandra benchmark in Rust on the same scylla
# driver; `cargo install latte-cli`) on NODES Cassandra nodes started by
# `kvperf server start cassandra`, same records, same reads and updates,
# same consistency and concurrency, alternating which tool goes first.
#
#   bench/cassandra-vs-latte.sh > latte.md
#   REPEATS=1 DURATION=10 WARMUP=2 bench/cassandra-vs-latte.sh   # quick check
#
# The same work: `kvperf load` writes RECORDS records (ycsb.usertable,
# fieldcount=1 fieldlength=1024 insertorder=ordered: keys user0..userN-1);
# then per repeat and tool:
#   reads:   kvperf workload C with requestdistribution=uniform, against
#            latte's `read` (bench/latte/ycsb.rn: SELECT * ... WHERE y_id = ?,
#            the key uniform over the same records);
#   updates: kvperf workload C turned into updates only (readproportion=0
#            updateproportion=1, field0 gets a new 1024 B value), against
#            latte's `update` (the same UPDATE, a 1024-character value).
# Both at consistency ONE (YCSB's and kvperf's default), CLIENTS operations
# in flight: kvperf's CLIENTS client tasks on its 2-worker runtime (the
# default), latte's 2 threads x CLIENTS/2 concurrent requests; WARMUP s not
# counted, then DURATION s measured (kvperf: warmuptime; latte: --warmup).
# latte retries nothing (--retries 0), as kvperf.
#
# Env vars (defaults):
#   REPEATS=5 DURATION=30 WARMUP=5 RECORDS=100000 CLIENTS=32
#   WARM_ROUNDS=1        rounds of every run before the measured repeats, not
#                        counted: a freshly started cluster's JVMs speed up for
#                        minutes (at 3 nodes the first round ran at a third of
#                        the third's rate), which a warm-up window alone does not cover
#   NODES=1              nodes; with more than one the keyspace is created with
#                        replication factor NODES (every node holds every record,
#                        reads and writes at ONE), and both tools get every address
#   CQL_PORT=19043 CASSANDRA_STORAGE_PORT=17011   ports on 127.0.0.1 (to .NODES)
#   LATTE=latte (or ~/.cache/kvperf/latte/bin/latte if that exists)
#   KVPERF, BENCH_CACHE: see bench/lib.sh
# Output: a markdown table (median [min-max] ops/s and kvperf verdict) on
# stdout; raw outputs under $BENCH_CACHE/logs/cassandra-vs-latte-<date>/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPEATS=${REPEATS:-5}
DURATION=${DURATION:-30}
WARMUP=${WARMUP:-5}
RECORDS=${RECORDS:-100000}
CLIENTS=${CLIENTS:-32}
WARM_ROUNDS=${WARM_ROUNDS:-1}
NODES=${NODES:-1}
CQL_PORT=${CQL_PORT:-19043}
CASSANDRA_STORAGE_PORT=${CASSANDRA_STORAGE_PORT:-17011}

require_kvperf
require_latte
require_tool jq "apt-get install jq"
[ $((CLIENTS % 2)) = 0 ] || { echo "error: CLIENTS must be even (latte runs 2 threads of CLIENTS/2)" >&2; exit 2; }
new_log_dir cassandra-vs-latte
SAMPLES=$LOG_DIR/samples.tsv   # op, tool, repeat, ops/s
: >"$SAMPLES"
DATA=$BENCH_CACHE/cassandra-vs-latte
case $NODES in [1-9]) ;; *) echo "error: NODES must be 1 to 9 (got '$NODES')" >&2; exit 2 ;; esac
HOSTS=() ADDRESSES=()
for n in $(seq 1 "$NODES"); do HOSTS+=("127.0.0.$n"); ADDRESSES+=("127.0.0.$n:$CQL_PORT"); done
ENGINE=(--engine cassandra -p cassandra.port="$CQL_PORT" -p cassandra.hosts="$(IFS=,; echo "${HOSTS[*]}")")
RECORD_PROPS=(-p recordcount="$RECORDS" -p fieldcount=1 -p fieldlength=1024 -p insertorder=ordered
  -p requestdistribution=uniform)

if [ -e "$DATA" ]; then
  echo "error: $DATA exists (a run in progress, or left by one that was killed); remove it first" >&2
  exit 2
fi
trap '"$KVPERF" server stop cassandra --dir "$DATA" >&2 || true; rm -rf "$DATA"' EXIT
echo "# $(date +%T) starting $NODES Cassandra node(s) on port $CQL_PORT" >&2
"$KVPERF" server start cassandra --dir "$DATA" --port "$CQL_PORT" --nodes "$NODES" \
  -p cassandra_storage_port="$CASSANDRA_STORAGE_PORT" >&2
run_phase "$LOG_DIR/load.txt" "$KVPERF" load "${ENGINE[@]}" -P "$WORKLOADS_DIR/workloadc" \
  "${RECORD_PROPS[@]}" -p cassandra.replication_factor="$NODES" --fresh -threads 8
# The load's flushes and compactions end before anything is measured.
echo "# $(date +%T) settle" >&2
"$KVPERF" settle "${ENGINE[@]}" "${RECORD_PROPS[@]}" >"$LOG_DIR/settle.txt" 2>&1 ||
  { echo "error: kvperf settle failed: $(tail -n 2 "$LOG_DIR/settle.txt")" >&2; exit 1; }

# record OP TOOL REPEAT OPS: one line of $SAMPLES; warm-up rounds (REPEAT w<N>) are not counted.
record() {
  case $3 in w*) ;; *) printf '%s\t%s\t%s\t%s\n' "$@" >>"$SAMPLES" ;; esac
}

kvperf_run() { # OP REPEAT
  local json=$LOG_DIR/kvperf-$1-r$2.json mix=()
  [ "$1" = update ] && mix=(-p readproportion=0 -p updateproportion=1)
  if ! "$KVPERF" run "${ENGINE[@]}" -P "$WORKLOADS_DIR/workloadc" "${RECORD_PROPS[@]}" "${mix[@]}" \
    -p operationcount=1000000000 -p warmuptime="$WARMUP" -p maxexecutiontime=$((WARMUP + DURATION)) \
    -threads "$CLIENTS" --format json --output "$json" 2>"${json%.json}.err"; then
    echo "error: kvperf $1 r$2 failed: $(tail -n 2 "${json%.json}.err")" >&2
    FAILED=1
    return
  fi
  record "$1" kvperf "$2" "$(jq '.measurements[-1].ops_per_sec' "$json")"
}

latte_run() { # OP REPEAT
  local json=$LOG_DIR/latte-$1-r$2.json
  latte_args "$1" "$CLIENTS" "$DURATION" "$RECORDS" "$json"
  # From the log directory: latte writes a log file into its working directory.
  if ! (cd "$LOG_DIR" && "$LATTE" "${LATTE_ARGS[@]}" -w "${WARMUP}s" "${ADDRESSES[@]}") \
    >"${json%.json}.txt" 2>&1; then
    echo "error: latte $1 r$2 failed: $(tail -n 2 "${json%.json}.txt")" >&2
    FAILED=1
    return
  fi
  local errors
  errors=$(jq '.result.error_count' "$json")
  [ "$errors" = 0 ] || echo "warning: latte $1 r$2: $errors errors" >&2
  record "$1" latte "$2" "$(jq '.result.cycle_throughput.value' "$json")"
}

for w in $(seq 1 "$WARM_ROUNDS"); do
  for op in read update; do
    for tool in kvperf latte; do
      echo "# $(date +%T) warm-up round $w (not counted), $op, $tool" >&2
      "${tool}_run" "$op" "w$w"
    done
  done
done
for r in $(seq 1 "$REPEATS"); do
  if [ $((r % 2)) = 1 ]; then order="kvperf latte"; else order="latte kvperf"; fi
  for op in read update; do
    for tool in $order; do
      echo "# $(date +%T) repeat $r, $op, $tool" >&2
      "${tool}_run" "$op" "$r"
    done
  done
done

echo "kvperf vs latte on $NODES Cassandra node(s), $RECORDS records of 1 KB, $CLIENTS operations in flight, consistency ONE, ${WARMUP} s warm-up + ${DURATION} s measured, $REPEATS alternating repeats after $WARM_ROUNDS round(s) not counted ($("$KVPERF" --version | head -n 1); $("$LATTE" --version 2>&1 | head -n 1); $(nproc) cores; $(date -u +%F))"
echo
awk -F'\t' -v kvperf="$KVPERF" "$AWK_STATS"'
  { add(V, $1 SUBSEP $2, $4) }
  END {
    print "| operation | latte ops/s | kvperf ops/s | kvperf / latte | 95% CI over repeats |"
    print "| --- | ---: | ---: | ---: | --- |"
    n = split("read update", ops, " ")
    for (i = 1; i <= n; i++) {
      l = ops[i] SUBSEP "latte"; k = ops[i] SUBSEP "kvperf"
      if (!(l in V) || !(k in V)) { printf "| %s | - | - | - | a run failed |\n", ops[i]; continue }
      printf "| %s | %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] | %.2f | %s |\n", ops[i],
        median(V[l]), lo(V[l]), hi(V[l]), median(V[k]), lo(V[k]), hi(V[k]),
        median(V[k]) / median(V[l]), judge(V[l], V[k], "higher")
    }
  }' "$SAMPLES"
echo
echo "Samples (one line per run): $SAMPLES"
exit "$FAILED"
