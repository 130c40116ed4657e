#!/usr/bin/env bash
# How client tasks share the runtime's workers (`taskscheduling`), against
# one server started by `kvperf server start` on 127.0.0.1: kvperf's
# workload C with clients as tasks pinned to a worker each, as tasks on
# work-stealing workers, and on threads, beside the server's own tool
# (pgbench SELECT, -M prepared -j 2; redis-benchmark HGETALL, -P 1; latte's
# read, -t 2 -p CLIENTS/2, consistency ONE), the order of the variants
# rotating every round. Per variant: ops/s of each
# round and its client CPU per operation (user + system of the whole
# process over the run, setup included); then `kvperf verdict` of NEW
# (default: pinned) against each other variant over the rounds.
#
#   bench/task-scheduling.sh > scheduling.md
#   SERVER=redis CLIENTS=4 REPEATS=7 bench/task-scheduling.sh
#   SERVER=cassandra CLIENTS=32 DURATION=30 VARIANTS="pinned stealing native" bench/task-scheduling.sh
#   REPEATS=2 DURATION=2 bench/task-scheduling.sh        # quick check
#
# Env vars (defaults): SERVER=postgres (or redis, cassandra) CLIENTS=16 REPEATS=7
#   DURATION=5 (s per run) WORKERS=2 (runtimethreads of both task variants)
#   VARIANTS="pinned stealing threads native" NEW=pinned; KVPERF,
#   BENCH_CACHE: bench/lib.sh. Records as bench/servers-vs-native.sh: 1
#   field of 1024 B, keys padded to 12 digits, so the native tool reads the
#   records kvperf loaded (RECORDS: 20000 for postgres, 100000 for redis
#   and cassandra). Cassandra: one node, keys user0..userN-1 as
#   bench/cassandra-vs-latte.sh loads them (LATTE: as there), the load
#   settled, and WARM_ROUNDS (default 1) rounds of every variant first, not
#   counted (the JVM warms up for minutes).
# The anchors draw keys uniformly (pgbench's random(), redis-benchmark's -r)
# where workload C is zipfian, as in bench/servers-vs-native.sh; the records
# fit in the servers' memory either way. The kvperf variants compare with
# each other on the same key distribution.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SERVER=${SERVER:-postgres}
CLIENTS=${CLIENTS:-16}
REPEATS=${REPEATS:-7}
DURATION=${DURATION:-5}
WORKERS=${WORKERS:-2}
VARIANTS=${VARIANTS:-"pinned stealing threads native"}
NEW=${NEW:-pinned}
case $SERVER in
  postgres) RECORDS=${RECORDS:-20000}; PORT=15461; require_tool pgbench "apt-get install postgresql-client" ;;
  redis) RECORDS=${RECORDS:-100000}; PORT=16461; require_tool redis-benchmark "apt-get install redis-tools" ;;
  cassandra) RECORDS=${RECORDS:-100000}; PORT=19053
    require_latte
    [ $((CLIENTS % 2)) = 0 ] || { echo "error: CLIENTS must be even (latte runs 2 threads of CLIENTS/2)" >&2; exit 2; } ;;
  *) echo "error: SERVER must be postgres, redis or cassandra, not '$SERVER'" >&2; exit 2 ;;
esac
require_kvperf
new_log_dir task-scheduling
start_loaded_server "$SERVER" "$PORT" "$RECORDS" "${CASSANDRA_STORAGE_PORT:-17021}"

# cpu_per_op TIMEFILE OPERATIONS: client CPU microseconds per operation.
cpu_per_op() { awk -v n="$2" '{ printf "%.1f", ($1 + $2) * 1e6 / n }' "$1"; }

# one VARIANT ROUND: prints "ops/s cpu-us/op" of one run.
one() {
  local v=$1 r=$2 log=$LOG_DIR/$1-r$2 props=()
  case $v in
    pinned) props=(-p clients=tasks -p runtimethreads="$WORKERS" -p taskscheduling=pinned) ;;
    stealing) props=(-p clients=tasks -p runtimethreads="$WORKERS" -p taskscheduling=stealing) ;;
    threads) props=(-p clients=threads) ;;
    native) native "$log"; return ;;
    *) echo "error: unknown variant '$v' (pinned, stealing, threads, native)" >&2; exit 2 ;;
  esac
  /usr/bin/time -f "%U %S" -o "$log.time" "$KVPERF" run --engine "$SERVER" "${PROPS[@]}" \
    -P "$WORKLOADS_DIR/workloadc" "${props[@]}" -p operationcount=1000000000 \
    -p maxexecutiontime="$DURATION" -threads "$CLIENTS" --format json --output "$log.json" \
    >"$log.txt" 2>&1
  local ops
  ops=$(jq -r '.measurements[-1].operations' "$log.json")
  echo "$(jq -r '.measurements[-1].ops_per_sec' "$log.json") $(cpu_per_op "$log.time" "$ops")"
}

native() {
  local log=$1 ops
  if [ "$SERVER" = postgres ]; then
    /usr/bin/time -f "%U %S" -o "$log.time" pgbench -n -M prepared -h 127.0.0.1 -p "$PORT" \
      -U postgres -c "$CLIENTS" -j $((CLIENTS < 2 ? CLIENTS : 2)) -T "$DURATION" \
      -D keys="$RECORDS" -f "$PGBENCH_READ" kvperf >"$log.txt" 2>&1
    ops=$(awk '/number of transactions actually processed/ { split($NF, a, "/"); print a[1] }' "$log.txt")
    echo "$(awk '/^tps = .*(without|excluding)/ { print $3 }' "$log.txt") $(cpu_per_op "$log.time" "$ops")"
  elif [ "$SERVER" = cassandra ]; then
    # From the log directory: latte writes a log file into its working directory.
    latte_args read "$CLIENTS" "$DURATION" "$RECORDS" "$log.json"
    (cd "$LOG_DIR" && /usr/bin/time -f "%U %S" -o "$log.time" "$LATTE" "${LATTE_ARGS[@]}" \
      "127.0.0.1:$PORT") >"$log.txt" 2>&1
    ops=$(jq -r '.result.cycle_count' "$log.json")
    echo "$(jq -r '.result.cycle_throughput.value' "$log.json") $(cpu_per_op "$log.time" "$ops")"
  else
    ops=$((50000 * DURATION))
    /usr/bin/time -f "%U %S %e" -o "$log.time" redis-benchmark -h 127.0.0.1 -p "$PORT" \
      -c "$CLIENTS" -P 1 -r "$RECORDS" -n "$ops" --csv HGETALL user__rand_int__ >"$log.txt" 2>&1
    echo "$(awk -v n="$ops" '{ printf "%.0f", n / $3 }' "$log.time") $(cpu_per_op "$log.time" "$ops")"
  fi
}

echo "Task scheduling, $SERVER, workload C, $CLIENTS clients, $WORKERS workers, $REPEATS rotating rounds of ${DURATION} s ($(date -u +%F\ %H:%M) UTC, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $("$KVPERF" --version | head -n 1))"
echo
declare -A RATES CPUS
read -r -a order <<<"$VARIANTS"
if [ "$SERVER" = cassandra ]; then
  for w in $(seq 1 "${WARM_ROUNDS:-1}"); do
    for v in "${order[@]}"; do
      echo "# $(date +%T) warm-up round $w (not counted) $v" >&2
      one "$v" "w$w" >/dev/null
    done
  done
fi
for r in $(seq 1 "$REPEATS"); do
  for i in "${!order[@]}"; do
    v=${order[$(((i + r) % ${#order[@]}))]}
    echo "# $(date +%T) round $r $v" >&2
    read -r rate cpu <<<"$(one "$v" "$r")"
    RATES[$v]="${RATES[$v]:+${RATES[$v]},}$rate"
    CPUS[$v]="${CPUS[$v]:+${CPUS[$v]} }$cpu"
  done
done
md_row variant "ops/s per round" "client CPU us/op per round" "$NEW vs it, 95% CI"
md_row --- --- --- ---
for v in "${order[@]}"; do
  verdict="-"
  [ "$v" = "$NEW" ] || verdict=$("$KVPERF" verdict --base "${RATES[$v]}" --new "${RATES[$NEW]}")
  md_row "$v" "$(echo "${RATES[$v]}" | tr ',' '\n' | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 }')" "${CPUS[$v]}" "$verdict"
done
echo
echo "Logs: $LOG_DIR"
