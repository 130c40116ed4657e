#!/usr/bin/env bash
# A profile of both sides (issue 27): kvperf and a server's own load tool,
# one after the other against one server started by `kvperf server start`,
# the same records and the same number of clients, each under `perf stat`
# (client CPU, system calls and context switches per operation) and then
# under `perf record -g` (where that CPU goes). For the rows whose ratio
# holds 1.0 and stays open: it says whether a client cost is left, and
# whose.
#
#   SERVER=redis CLIENTS=4 bench/profile-both.sh > redis-4.md
#   SERVER=postgres CLIENTS=1 bench/profile-both.sh
#   SERVER=cassandra CLIENTS=32 DURATION=30 bench/profile-both.sh
#
# The same work as bench/servers-vs-native.sh and bench/task-scheduling.sh:
# records of 1 field of 1 KB (keys user000000000000..), workload C with
# kvperf's defaults for the engine (threads or tasks, as `kvperf engines`
# says); the tool: redis-benchmark HGETALL user__rand_int__ (-c CLIENTS -P 1),
# or pgbench SELECT * ... WHERE ycsb_key = ... (-M prepared -c CLIENTS
# -j min(CLIENTS, 2)), or latte's `read` of bench/latte/ycsb.rn (-t 2 -p
# CLIENTS/2, consistency ONE, no retries; kvperf with
# requestdistribution=uniform, as bench/cassandra-vs-latte.sh runs them).
# redis-benchmark and pgbench draw keys uniformly where workload C is
# zipfian: every record is in the server's memory, so the key order costs
# the same. Cassandra: one node, the load settled, and one round of each
# tool first, not counted (the JVM warms up).
#
# Env vars (defaults): SERVER=redis (or postgres) CLIENTS=4 DURATION=8
#   ROUNDS=2 (perf stat rounds per tool, alternating) RECORDS (100000 for
#   redis and cassandra, 20000 for postgres) PORT (16471 / 15471 / 19043)
#   LATTE=latte (or ~/.cache/kvperf/latte/bin/latte if that exists)
#   KVPERF, BENCH_CACHE: see bench/lib.sh
# Needs perf (apt-get install linux-perf), jq, and the tool.
# Output: per round and tool, ops/s, client CPU us/op, system calls/op,
# context switches/op, the machine's busy cores and the server's CPU us/op
# (kvperf's accounting); then each profile's shares by object (kernel, the
# tool, its libraries), kvperf's own samples by crate, and the top symbols.
# perf.data files and raw outputs stay under $BENCH_CACHE/logs/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SERVER=${SERVER:-redis}
CLIENTS=${CLIENTS:-4}
DURATION=${DURATION:-8}
ROUNDS=${ROUNDS:-2}
case $CLIENTS in '' | *[!0-9]* | 0) echo "error: CLIENTS must be a positive number, not '$CLIENTS'" >&2; exit 2 ;; esac
case $SERVER in
  redis) RECORDS=${RECORDS:-100000}; PORT=${PORT:-16471}; TOOL=redis-benchmark
    require_tool redis-benchmark "apt-get install redis-tools" ;;
  postgres) RECORDS=${RECORDS:-20000}; PORT=${PORT:-15471}; TOOL=pgbench
    require_tool pgbench "apt-get install postgresql-client" ;;
  cassandra) RECORDS=${RECORDS:-100000}; PORT=${PORT:-19043}
    require_latte
    TOOL=latte
    [ $((CLIENTS % 2)) = 0 ] || { echo "error: CLIENTS must be even (latte runs 2 threads of CLIENTS/2)" >&2; exit 2; }
    ;;
  *) echo "error: SERVER must be redis, postgres or cassandra, not '$SERVER'" >&2; exit 2 ;;
esac
require_kvperf
require_tool perf "apt-get install linux-perf"
require_tool jq "apt-get install jq"
new_log_dir profile-both
EVENTS=task-clock,context-switches,raw_syscalls:sys_enter

start_loaded_server "$SERVER" "$PORT" "$RECORDS" "${CASSANDRA_STORAGE_PORT:-17011}"

# kvperf_cmd LOG: workload C for DURATION s, its JSON beside LOG.
kvperf_cmd() {
  echo "$KVPERF" run --engine "$SERVER" "${PROPS[@]}" -P "$WORKLOADS_DIR/workloadc" \
    -p operationcount=1000000000 -p maxexecutiontime="$DURATION" -threads "$CLIENTS" \
    --format json --output "$1.json"
}
tool_cmd() { # LOG
  if [ "$SERVER" = redis ]; then
    # About DURATION s at the ~45 k/s this machine gives at 4 clients.
    echo redis-benchmark -h 127.0.0.1 -p "$PORT" -c "$CLIENTS" -P 1 -r "$RECORDS" \
      -n $((45000 * DURATION)) --csv HGETALL user__rand_int__
  elif [ "$SERVER" = cassandra ]; then
    latte_args read "$CLIENTS" "$DURATION" "$RECORDS" "$1.json"
    echo "$LATTE" "${LATTE_ARGS[@]}" "127.0.0.1:$PORT"
  else
    echo pgbench -n -M prepared -h 127.0.0.1 -p "$PORT" -U postgres -c "$CLIENTS" \
      -j $((CLIENTS < 2 ? CLIENTS : 2)) -T "$DURATION" -D keys="$RECORDS" \
      -f "$PGBENCH_READ" kvperf
  fi
}
# ops_and_rate WHO LOG: "operations ops/s" of one run.
ops_and_rate() {
  case $1 in
    kvperf) jq -r '.measurements[-1] | "\(.operations) \(.ops_per_sec)"' "$2.json" ;;
    redis-benchmark) awk -F'"' -v n=$((45000 * DURATION)) '/^"HGETALL/ { print n, $4 }' "$2" ;;
    latte) jq -r '.result | "\(.cycle_count) \(.cycle_throughput.value)"' "$2.json" ;;
    pgbench) awk '/actually processed/ { n = $NF } /^tps = .*(without|excluding)/ { r = $3 }
                  END { print n, r }' "$2" ;;
  esac
}

# From the log directory: latte writes a log file into its working directory.
cd "$LOG_DIR"
if [ "$SERVER" = cassandra ]; then
  for who in kvperf latte; do
    log=$LOG_DIR/$who-warm
    if [ "$who" = kvperf ]; then cmd=$(kvperf_cmd "$log"); else cmd=$(tool_cmd "$log"); fi
    # shellcheck disable=SC2086
    $cmd >"$log" 2>&1 || FAILED=1
  done
fi

md_row round tool "ops/s" "client CPU us/op" "syscalls/op" "context switches/op" "busy cores" "server CPU us/op"
md_row ---: --- ---: ---: ---: ---: ---: ---:
for r in $(seq 1 "$ROUNDS"); do
  order="kvperf $TOOL"
  [ $((r % 2)) = 0 ] && order="$TOOL kvperf"
  for who in $order; do
    log=$LOG_DIR/$who-r$r
    if [ "$who" = kvperf ]; then cmd=$(kvperf_cmd "$log"); else cmd=$(tool_cmd "$log"); fi
    # shellcheck disable=SC2086  # the commands are plain words
    perf stat -e "$EVENTS" -x, -o "$log.stat" -- $cmd >"$log" 2>&1 || FAILED=1
    read -r ops rate <<<"$(ops_and_rate "$who" "$log")"
    busy=- server=-
    if [ "$who" = kvperf ]; then
      busy=$(jq -r '.measurements[-1].accounting.machine_cpu.busy_cores // "-"' "$log.json")
      server=$(jq -r '.measurements[-1].accounting.derived.server_cpu_s_per_op // empty | . * 1e6' "$log.json")
    fi
    awk -F, -v ops="$ops" -v rate="$rate" -v r="$r" -v who="$who" -v busy="$busy" -v server="${server:--}" '
      $3 == "task-clock" { cpu = $1 } $3 == "context-switches" { cs = $1 } $3 ~ /sys_enter/ { sc = $1 }
      END { printf "| %s | %s | %.0f | %.1f | %.2f | %.3f | %s | %s |\n", r, who, rate, cpu * 1000 / ops,
              sc / ops, cs / ops, (busy == "-" ? "-" : sprintf("%.2f", busy)),
              (server == "-" ? "-" : sprintf("%.1f", server)) }' "$log.stat"
  done
done

for who in kvperf $TOOL; do
  log=$LOG_DIR/$who-profiled
  if [ "$who" = kvperf ]; then cmd=$(kvperf_cmd "$log"); else cmd=$(tool_cmd "$log"); fi
  # shellcheck disable=SC2086
  perf record -F 1999 -g -o "$log.data" -- $cmd >"$log" 2>"$log.perf" || FAILED=1
  echo
  echo "**$who**, shares of its samples by object:"
  perf report -i "$log.data" --no-children --sort dso --stdio -g none 2>/dev/null |
    awk '$1 ~ /%$/ && n++ < 6 { printf "%s%s %s", (n > 1 ? ", " : ""), $2, $1 } END { print "" }'
  if [ "$who" = kvperf ]; then
    echo
    echo "kvperf's executable by crate (the first path segment of each symbol):"
    # <T as Trait>::f counts as the trait's crate: itoa for <u64 as itoa::Unsigned>::fmt.
    perf report -i "$log.data" --no-children --sort sym --stdio -g none --dsos kvperf 2>/dev/null |
      awk '/^ +[0-9]/ { p = $1; sub("%", "", p); s = $0; sub(/^[^]]*\] /, "", s)
                        if (s ~ /^</ && match(s, / as /)) s = substr(s, RSTART + 4)
                        sub(/^[<&]+/, "", s)
                        split(s, parts, "::"); c = parts[1]; sub(/ .*/, "", c); share[c] += p }
           END { for (c in share) if (share[c] >= 0.5) printf "%.1f%% %s\n", share[c], c }' |
      sort -rn | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 } END { print "" }'
  fi
  echo
  echo "top symbols:"
  perf report -i "$log.data" --no-children --sort sym --stdio -g none 2>/dev/null |
    awk '/^ +[0-9]/ && n++ < 10 { s = $0; sub(/^ +[0-9.]+% +/, "", s); printf "%s%s %s", (n > 1 ? "; " : ""), $1, s } END { print "" }'
done
echo
echo "Logs and perf.data: $LOG_DIR"
exit "$FAILED"
