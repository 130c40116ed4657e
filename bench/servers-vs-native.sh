#!/usr/bin/env bash
# kvperf against each server's own load tool, same machine, same run: Redis
# (redis-benchmark), PostgreSQL (pgbench) and Cassandra (YCSB 0.17.0 Java),
# each server started by `kvperf server start` on 127.0.0.1, one at a time.
# Every (server, thread count, repeat) runs kvperf's workloads and the native
# tool back to back; which goes first alternates every repeat and the thread
# counts run in reverse order on even repeats. Cells: median of the repeats
# [min-max].
#
#   bench/servers-vs-native.sh > servers.md
#   REPEATS=1 THREADS="1 4" DURATION=2 RECORDS=20000 bench/servers-vs-native.sh   # quick check
#
# Records: 1 field x 1024 B (fieldcount=1 fieldlength=1024), so a record is
# the 1 KB value the native tools read and write. Keys are YCSB's ordered
# keys padded to 12 digits (insertorder=ordered zeropadding=12: user000000000042),
# which are the keys redis-benchmark's __rand_int__ and pgbench's
# 'user' || lpad(:k, 12, '0') produce, so both tools use the same records.
# kvperf loads them once per server (`kvperf load`, workload A's file) and
# runs workloads A, B, C, F, D for DURATION seconds each (maxexecutiontime,
# operationcount 10^9), requestdistribution as in the workload files
# (zipfian; latest for D).
# D inserts: accepted growth. Every D run inserts from key RECORDS again and
# all three engines' inserts are upserts, so the store grows once by one
# D run's inserts (5% of its operations) and later runs overwrite those keys.
#
# Same work on both sides (issue 48, item 4): the same records, the same
# key distribution, the same command, the same connection and thread counts.
# Keys: uniform over the loaded records on both sides (redis-benchmark's
# __rand_int__ and pgbench's random() are uniform; pgbench's random_zipfian
# needs s > 1 and YCSB's zipfian is 0.99), so kvperf's runs against Redis and
# PostgreSQL get requestdistribution=uniform (KEYS=zipfian keeps the
# workload files' own distribution, and the table then says the work differs).
#
# Pairs compared (kvperf workload vs native op, same client concurrency):
#   redis     C vs redis-benchmark HGETALL user__rand_int__ (kvperf's records,
#               kvperf's read command);
#             U (updates only: workload A with readproportion=0,
#               updateproportion=1) vs redis-benchmark EVALSHA of the very
#               script kvperf runs (loaded with SCRIPT LOAD, same text, so
#               the same SHA1) on kvperf's records: the same work, semantics
#               equal (issue 27, item 3).
#             Not compared any more: GET and SET of redis-benchmark's own
#             strings (other keys, another data type than kvperf's hashes)
#             and A against SET or HSET alone (redis-benchmark cannot mix
#             reads and writes).
#             redis-benchmark: -c N connections on as many threads as kvperf
#             ran its N clients on (read from kvperf's JSON; --threads T when
#             T > 1, its one event-loop thread otherwise), -P 1 (no pipelining: kvperf has one request in flight per
#             thread), -r RECORDS, -n sized from a short calibration run to
#             last about DURATION.
#   postgres  C vs pgbench SELECT * FROM usertable WHERE ycsb_key = ...;
#             A vs pgbench 50/50 of that SELECT and UPDATE usertable SET
#               field0 = repeat(md5(random()::text), 32) WHERE ycsb_key = ...
#               (-f read@50 -f update@50): a new 1024-character value per
#               update, as kvperf's (with one constant value PostgreSQL
#               logs almost nothing of a row version equal to the last:
#               heap_update logs only what differs from the old tuple's
#               start and end; 0.96x [0.90, 1.00] at 4 clients, RESULTS 6j);
#             on kvperf's table (YCSB's JDBC schema), keys uniform over the
#             loaded records on both sides; -M prepared -c N -j T, where T is
#             the number of client threads kvperf ran its N clients on (read
#             from its JSON: N threads below 16 clients, its runtime's
#             threads above), so both tools get the same threads from the
#             scheduler, -T DURATION, tps without connection time.
#   cassandra each of A, B, C, F, D vs YCSB 0.17.0 (Java) with the same
#             workload file and properties, through kvperf's binding
#             bench/java/src/kvperf/bench/CassandraCQLClient.java (YCSB's CQL
#             binding on the Java driver cassandra-stress 5.0 uses, taken
#             from the server's own lib/; set up by bench/ycsb-cassandra-setup.sh).
#             cassandra-stress itself is not used: it is not on Maven Central
#             (no org.apache.cassandra:cassandra-stress, no stress classes in
#             cassandra-all 5.0.9), so no jar of the server's version exists
#             to fetch. YCSB's operations are divided by the binding's
#             window_s (session open to first cleanup), not YCSB's RunTime,
#             which also counts connecting and closing the driver; as YCSB's
#             maxexecutiontime counts the start too, it gets DURATION +
#             YCSB_CONNECT_S, a window of DURATION + 1.5 to 4 s here.
# "95% CI over repeats": `kvperf verdict` over each side's repeats (ratio
# kvperf / native, its exact 95% interval, faster/slower/~).
# Other columns (kvperf's runs only): network bytes per operation, sent +
# received by kvperf's sockets, and the server's CPU per operation, both from
# kvperf's JSON (accounting.derived.network_{sent,received}_bytes_per_op,
# server_cpu_s_per_op).
#
# Env vars (defaults):
#   REPEATS=5                 alternating repeats of every cell
#   THREADS="1 4 16 64"       client threads / connections
#   DURATION=5                seconds per run (kvperf, pgbench, YCSB; redis-benchmark about that)
#   RECORDS=100000            records of 1 KB (about 100 MB per store)
#   SERVERS="redis postgres cassandra"
#   WORKLOADS="a b c f d"     kvperf's workloads, in this order (D last: it inserts);
#                             "u": updates only (redis: against EVALSHA)
#   REDIS_PORT=16390 PG_PORT=15442 CQL_PORT=19042 CASSANDRA_STORAGE_PORT=17010
#                             ports on 127.0.0.1 (not the usual ones, so a server
#                             someone else runs is left alone)
#   YCSB_CONNECT_S=5          added to YCSB's maxexecutiontime, which counts its start too
#   KEYS=uniform              kvperf's key distribution against Redis and PostgreSQL:
#                             uniform (the native tools' own) or zipfian (the
#                             workload files', not the same work)
#   KVPERF_PROPS=""          extra properties for kvperf's measured runs, e.g.
#                             "-p clients=threads" (clients on threads, not tasks)
#   KVPERF, BENCH_CACHE, JAVA_OPTS: see bench/lib.sh
# At the defaults one run takes about 65 minutes (Redis 17, PostgreSQL 13,
# Cassandra 35: YCSB's JVM start, connect allowance and 2 s driver shutdown
# make each of its runs about 13 s).
#
# Servers run with kvperf's defaults (Redis without persistence, PostgreSQL
# with fsync and synchronous_commit on, Cassandra with a 1 GB heap); their
# data lives in $BENCH_CACHE/servers-vs-native/ and is removed when they stop.
# Output: a markdown table on stdout, then the commands run; raw outputs
# (kvperf's JSON, every native tool's output, samples.tsv) under
# $BENCH_CACHE/logs/servers-vs-native-<date>/. Needs jq; redis-benchmark and
# redis-cli, pgbench, a JDK and Maven for the servers chosen.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPEATS=${REPEATS:-5}
THREADS=${THREADS:-"1 4 16 64"}
DURATION=${DURATION:-5}
RECORDS=${RECORDS:-100000}
SERVERS=${SERVERS:-"redis postgres cassandra"}
WORKLOADS=${WORKLOADS:-"a b c f d"}
REDIS_PORT=${REDIS_PORT:-16390}
PG_PORT=${PG_PORT:-15442}
CQL_PORT=${CQL_PORT:-19042}
export KVPERF_CASSANDRA_STORAGE_PORT=${CASSANDRA_STORAGE_PORT:-17010}
YCSB_CONNECT_S=${YCSB_CONNECT_S:-5}
KEYS=${KEYS:-uniform}
case $KEYS in
  uniform | zipfian) ;;
  *) echo "error: KEYS must be uniform or zipfian, not '$KEYS'" >&2; exit 2 ;;
esac
OPERATIONS=1000000000   # the time bound ends every run

require_kvperf
require_tool jq "apt-get install jq"
for server in $SERVERS; do
  case $server in
    redis) require_tool redis-benchmark "apt-get install redis-tools"
      require_tool redis-cli "apt-get install redis-tools" ;;
    postgres) require_tool pgbench "apt-get install postgresql-client" ;;
    cassandra) require_tool java "install a JDK 17+ (apt-get install openjdk-17-jdk-headless)" ;;
    *) echo "error: unknown server '$server' in SERVERS (redis, postgres, cassandra)" >&2; exit 2 ;;
  esac
done
new_log_dir servers-vs-native
DATA=$BENCH_CACHE/servers-vs-native/$(basename "$LOG_DIR")
SAMPLES=$LOG_DIR/samples.tsv   # server, workload, threads, tool, repeat, ops/s, net B/op, server CPU us/op
COMMANDS=$LOG_DIR/commands.txt # each kind of command, the first time it runs
: >"$SAMPLES"
: >"$COMMANDS"
# A 1024-byte value for the native tools' writes (hex, so any shell passes it).
VALUE=$(head -c 512 /dev/urandom | od -An -tx1 | tr -d ' \n')
RECORD_PROPS=(-p recordcount="$RECORDS" -p fieldcount=1 -p fieldlength=1024
  -p insertorder=ordered -p zeropadding=12)

# --- servers ---------------------------------------------------------------

STARTED=""
port_of() { case $1 in redis) echo "$REDIS_PORT" ;; postgres) echo "$PG_PORT" ;; cassandra) echo "$CQL_PORT" ;; esac; }

start_server() { # NAME
  echo "# $(date +%T) starting $1 on 127.0.0.1:$(port_of "$1")" >&2
  STARTED+=" $1"
  "$KVPERF" server start "$1" --dir "$DATA/$1" --port "$(port_of "$1")" >&2
}

stop_server() { # NAME: stops it, keeps its logs, removes its data
  "$KVPERF" server stop "$1" --dir "$DATA/$1" >&2 || true
  mkdir -p "$LOG_DIR/$1-server"
  find "$DATA/$1" -name '*.log' -exec cp --backup=numbered -t "$LOG_DIR/$1-server" {} + 2>/dev/null || true
  rm -rf "${DATA:?}/$1"
  STARTED=${STARTED/ $1/}
}
trap 'for s in $STARTED; do stop_server "$s"; done; rmdir "$DATA" 2>/dev/null || true' EXIT

# note_command KIND COMMAND...: keeps the first command of each kind for the report.
note_command() {
  local kind=$1
  shift
  grep -q "^$kind: " "$COMMANDS" && return
  echo "$kind: $(printf '%q ' "$@" | sed "s/$VALUE/<1024 B value>/g")" >>"$COMMANDS"
}

# --- kvperf ----------------------------------------------------------------

engine_props() { # SERVER
  case $1 in
    redis) echo "--engine redis -p redis.port=$REDIS_PORT" ;;
    postgres) echo "--engine postgres -p postgres.port=$PG_PORT" ;;
    cassandra) echo "--engine cassandra -p cassandra.port=$CQL_PORT" ;;
  esac
}

kvperf_load() { # SERVER
  local engine cmd
  read -ra engine <<<"$(engine_props "$1")"
  cmd=("$KVPERF" load "${engine[@]}" -P "$WORKLOADS_DIR/workloada" "${RECORD_PROPS[@]}" --fresh -threads 8)
  note_command "kvperf load" "${cmd[@]}"
  run_phase "$LOG_DIR/$1-load.txt" "${cmd[@]}" || return 1
  # Not measured: the server's background work after the load (autovacuum,
  # flushes), then DURATION s of uniform reads to warm its caches (and
  # PostgreSQL's hint bits, Cassandra's JIT) before either tool's first run.
  "$KVPERF" settle "${engine[@]}" "${RECORD_PROPS[@]}" >"$LOG_DIR/$1-settle.txt" 2>&1 ||
    echo "warning: kvperf settle $1 failed: $(tail -n 1 "$LOG_DIR/$1-settle.txt")" >&2
  run_phase "$LOG_DIR/$1-warmup.txt" "$KVPERF" run "${engine[@]}" -P "$WORKLOADS_DIR/workloadc" "${RECORD_PROPS[@]}" \
    -p requestdistribution=uniform -p operationcount="$OPERATIONS" -p maxexecutiontime="$DURATION" -threads 4
}

declare -A CLIENT_THREADS # the OS threads kvperf ran N clients on, per (server, N)
kvperf_runs() { # SERVER THREADS REPEAT: every workload, one sample each
  local s=$1 n=$2 r=$3 w json engine bad cmd keys=()
  read -ra engine <<<"$(engine_props "$s")"
  # The native tools draw keys uniformly; YCSB on Cassandra reads the same
  # workload file as kvperf, so its distribution is already the same.
  if [ "$KEYS" = uniform ] && [ "$s" != cassandra ]; then keys=(-p requestdistribution=uniform); fi
  for w in $WORKLOADS; do
    json=$LOG_DIR/$s-$w-t$n-r$r.kvperf.json
    # shellcheck disable=SC2046,SC2086,SC2206,SC2207  # workload_args and KVPERF_PROPS are lists of flags
    cmd=("$KVPERF" run "${engine[@]}" $(workload_args "$w") "${RECORD_PROPS[@]}" "${keys[@]}" ${KVPERF_PROPS:-}
      -p operationcount="$OPERATIONS" -p maxexecutiontime="$DURATION" -threads "$n" --format json --output "$json")
    note_command "kvperf run" "${cmd[@]}"
    if ! "${cmd[@]}" 2>"${json%.json}.err"; then
      echo "error: kvperf $s $w at $n threads failed: $(tail -n 2 "${json%.json}.err")" >&2
      FAILED=1
      continue
    fi
    bad=$(jq -r '[.measurements[-1].ops | to_entries[] | .key as $op | .value.returns | to_entries[]
      | select(.key != "OK" and .value > 0) | "\($op) \(.key)=\(.value)"] | join("; ")' "$json")
    [ -z "$bad" ] || echo "warning: kvperf $s $w at $n threads: $bad" >&2
    CLIENT_THREADS[$s-$n]=$(jq -r '.measurements[-1] | if .clients.kind == "tasks" then .clients.runtime_threads else .threads end' "$json")
    jq -r --arg s "$s" --arg w "$w" --arg r "$r" '.measurements[-1] | .accounting.derived as $d
      | [$s, $w, .threads, "kvperf", $r, .ops_per_sec,
         (if $d.network_sent_bytes_per_op then $d.network_sent_bytes_per_op + $d.network_received_bytes_per_op else "" end),
         (if $d.server_cpu_s_per_op then $d.server_cpu_s_per_op * 1e6 else "" end)] | @tsv' "$json" >>"$SAMPLES"
  done
}

# sample SERVER WORKLOAD THREADS TOOL REPEAT OPS_PER_S: one native sample.
sample() {
  if [ -z "$6" ]; then
    echo "error: $4 ($1, $3 threads) gave no figure; see $LOG_DIR" >&2
    FAILED=1
    return
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t\t\n' "$@" >>"$SAMPLES"
}

# workload_args W: kvperf's -P (and properties) for workload W; "u" is A's
# updates alone.
workload_args() {
  case $1 in
    u) echo "-P $WORKLOADS_DIR/workloada -p readproportion=0 -p updateproportion=1" ;;
    *) echo "-P $WORKLOADS_DIR/workload$1" ;;
  esac
}

# has_workload W: whether W is one of WORKLOADS.
has_workload() { [[ " $WORKLOADS " == *" $1 "* ]]; }

# --- Redis: redis-benchmark -------------------------------------------------

declare -A REDIS_RATE   # last ops/s of each (op, threads): sizes the next -n
redis_bench() { # OP WORKLOAD THREADS REPEAT ARGS...: one redis-benchmark sample
  local op=$1 w=$2 n=$3 r=$4 csv=$LOG_DIR/redis-$1-t$3-r$4.csv requests cmd
  shift 4
  cmd=(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$n" -P 1 -r "$RECORDS" --csv)
  if ((${CLIENT_THREADS[redis-$n]:-1} > 1)); then cmd+=(--threads "${CLIENT_THREADS[redis-$n]}"); fi
  if [ -z "${REDIS_RATE[$op-$n]:-}" ]; then   # calibration, not a sample
    REDIS_RATE[$op-$n]=$("${cmd[@]}" -n $((n < 50 ? 5000 : 100 * n)) "$@" 2>&1 | awk -F'"' 'NR == 2 { print $4 }')
  fi
  requests=$(awk -v x="${REDIS_RATE[$op-$n]}" -v d="$DURATION" 'BEGIN { r = int(x * d); print (r < 1000 ? 1000 : r) }')
  cmd+=(-n "$requests" "$@")   # options before the command: redis-benchmark takes the rest as its arguments
  note_command "redis-benchmark $op" "${cmd[@]}"
  "${cmd[@]}" >"$csv" 2>&1 || true
  REDIS_RATE[$op-$n]=$(awk -F'"' 'NR == 2 { print $4 }' "$csv")
  sample redis "$w" "$n" "redis-benchmark $op" "$r" "${REDIS_RATE[$op-$n]}"
}

redis_native() { # THREADS REPEAT
  if has_workload c; then redis_bench HGETALL c "$1" "$2" HGETALL user__rand_int__; fi
  if has_workload u; then
    redis_bench EVALSHA u "$1" "$2" EVALSHA "$UPDATE_SHA" 1 user__rand_int__ field0 "$VALUE"
  fi
}

# kvperf's update-if-exists script (src/engine/server/redis.rs, UPDATE_IF_EXISTS),
# word for word: loaded here, its SHA1 is the one kvperf's EVALSHA sends.
UPDATE_IF_EXISTS="if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end redis.call('HSET', KEYS[1], unpack(ARGV)) return 1"
redis_script() {
  UPDATE_SHA=$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" SCRIPT LOAD "$UPDATE_IF_EXISTS")
  [ -n "$UPDATE_SHA" ] || { echo "error: SCRIPT LOAD of kvperf's update script failed" >&2; return 1; }
}

# --- PostgreSQL: pgbench ----------------------------------------------------

pg_scripts() {
  local key="'user' || lpad(:k, 12, '0')"
  printf '\\set k random(0, :keys - 1)\nSELECT * FROM usertable WHERE ycsb_key = %s;\n' "$key" >"$LOG_DIR/pgbench-read.sql"
  printf '\\set k random(0, :keys - 1)\nUPDATE usertable SET field0 = repeat(md5(random()::text), 32) WHERE ycsb_key = %s;\n' "$key" >"$LOG_DIR/pgbench-update.sql"
}

pgbench_run() { # LABEL WORKLOAD THREADS REPEAT SCRIPT_ARGS...: one pgbench sample
  local label=$1 w=$2 n=$3 r=$4 log=$LOG_DIR/pgbench-$2-t$3-r$4.txt cmd
  shift 4
  cmd=(pgbench -n -M prepared -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "$n" -j "${CLIENT_THREADS[postgres-$n]:-$n}"
    -T "$DURATION" -D keys="$RECORDS" "$@" kvperf)
  note_command "pgbench $label" "${cmd[@]}"
  "${cmd[@]}" >"$log" 2>&1 || true
  sample postgres "$w" "$n" "pgbench $label" "$r" "$(awk '/^tps = .*(without|excluding)/ { print $3 }' "$log")"
}

postgres_native() { # THREADS REPEAT
  if has_workload c; then pgbench_run SELECT c "$1" "$2" -f "$LOG_DIR/pgbench-read.sql"; fi
  if has_workload a; then
    pgbench_run "50/50 SELECT/UPDATE" a "$1" "$2" -f "$LOG_DIR/pgbench-read.sql@50" -f "$LOG_DIR/pgbench-update.sql@50"
  fi
}

# --- Cassandra: YCSB 0.17.0 with kvperf's CQL binding ----------------------

cassandra_native() { # THREADS REPEAT
  local n=$1 r=$2 w log cmd window
  # YCSB's maxexecutiontime also counts the JVM's and driver's start (2 s and
  # more on a busy 2-core box): YCSB_CONNECT_S more, so that its measured
  # window (session open to first cleanup) is at least about DURATION.
  for w in $WORKLOADS; do
    log=$LOG_DIR/ycsb-$w-t$n-r$r.txt
    # shellcheck disable=SC2206,SC2046,SC2207  # JAVA_OPTS is a list of flags; so is workload_args
    cmd=(java $JAVA_OPTS -cp "$YCSB_CP" site.ycsb.Client -t -db kvperf.bench.CassandraCQLClient
      $(workload_args "$w") -p hosts=127.0.0.1 -p port="$CQL_PORT" "${RECORD_PROPS[@]}"
      -p operationcount="$OPERATIONS" -p maxexecutiontime=$((DURATION + YCSB_CONNECT_S)) -threads "$n")
    note_command "YCSB run" "${cmd[@]}"
    run_phase "$log" "${cmd[@]}" || { FAILED=1; continue; }
    window=$(sed -n 's/.*CassandraCQLClient: window_s=//p' "$log" | head -n 1)
    if awk -v w="$window" -v d="$DURATION" 'BEGIN { exit !(w + 0 < d / 2) }'; then
      echo "warning: ycsb-$w-t$n-r$r measured for only ${window:-0} s: raise YCSB_CONNECT_S" >&2
    fi
    sample cassandra "$w" "$n" "YCSB 0.17.0" "$r" "$(awk -v t="$(throughput "$log")" \
      -v ms="$(ycsb_value "$log" OVERALL 'RunTime(ms)')" -v win="$window" \
      'BEGIN { if (win + 0 > 0) printf "%.1f\n", t * ms / 1000 / win }')"
  done
}

# --- the run ---------------------------------------------------------------

measure_server() { # SERVER
  local s=$1 r n order tool tool_order
  start_server "$s" || { echo "error: $s did not start; skipped" >&2; FAILED=1; return; }
  case $s in
    redis) redis_script || { FAILED=1; stop_server "$s"; return; } ;;
    postgres) pg_scripts ;;
    cassandra)
      local lib
      lib=$(ls -d "$HOME"/.cache/kvperf/servers/cassandra-"${KVPERF_CASSANDRA_VERSION:-5.0.9}"/lib)
      YCSB_CP=$("$BENCH_DIR/ycsb-cassandra-setup.sh" "$lib") ||
        { echo "error: YCSB's Cassandra binding could not be set up; cassandra skipped" >&2; FAILED=1; stop_server "$s"; return; } ;;
  esac
  kvperf_load "$s" || { FAILED=1; stop_server "$s"; return; }
  for ((r = 1; r <= REPEATS; r++)); do
    order=$THREADS
    if ((r % 2 == 0)); then order=$(echo "$THREADS" | tr ' ' '\n' | tac | tr '\n' ' '); fi
    for n in $order; do
      echo "# $(date +%T) $s, repeat $r, $n threads" >&2
      if ((r % 2)); then tool_order="kvperf native"; else tool_order="native kvperf"; fi
      for tool in $tool_order; do
        case $tool:$s in
          kvperf:*) kvperf_runs "$s" "$n" "$r" ;;
          native:redis) redis_native "$n" "$r" ;;
          native:postgres) postgres_native "$n" "$r" ;;
          native:cassandra) cassandra_native "$n" "$r" ;;
        esac
      done
    done
  done
  stop_server "$s"
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
for server in $SERVERS; do measure_server "$server"; done

# The table: one row per (server, workload, native op, threads).
rows=$LOG_DIR/rows.tsv   # server, workload, native tool (or -), in report order
: >"$rows"
for server in $SERVERS; do
  for w in $WORKLOADS; do
    tools=$(awk -F'\t' -v s="$server" -v w="$w" '$1 == s && $2 == w && $4 != "kvperf" && !seen[$4]++ { print $4 }' "$SAMPLES")
    if [ -z "$tools" ]; then tools=-; fi
    while IFS= read -r tool; do printf '%s\t%s\t%s\n' "$server" "$w" "$tool" >>"$rows"; done <<<"$tools"
  done
done

echo "kvperf vs each server's own tool, 1 KB records ($RECORDS), ${DURATION} s per run, median of $REPEATS alternating repeats [min-max]; $(date -u +%F), $("$KVPERF" --version | head -n 1), $(redis-benchmark --version 2>/dev/null | head -n 1), $(pgbench --version 2>/dev/null), $(java -version 2>&1 | head -n 1), $(nproc) cores, load average before the runs: $load"
echo
md_row server workload threads "kvperf ops/s" "native tool" "native ops/s" "kvperf/native" "kvperf/native, 95% CI over repeats" "kvperf net B/op" "server CPU us/op (kvperf)"
md_row --- --- ---: ---: --- ---: ---: --- ---: ---:
awk -F'\t' -v threads="$THREADS" -v kvperf="$KVPERF" "$AWK_STATS"'
  FNR == NR { key = $1 SUBSEP $2 SUBSEP $3; add(ops, key SUBSEP $4, $6)
    if ($4 == "kvperf") { add(net, key, $7); add(cpu, key, $8) }
    next }
  { nt = sorted(threads, t)
    for (i = 1; i <= nt; i++) {
      key = $1 SUBSEP $2 SUBSEP t[i]; k = key SUBSEP "kvperf"; nat = key SUBSEP $3
      if (!(k in ops) && !(nat in ops)) continue
      ratio = (k in ops && nat in ops) ? sprintf("%.2f", median(ops[k]) / median(ops[nat])) : "-"
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, toupper($2), t[i], cell(ops[k]), $3, cell(ops[nat]),
        ratio, judge(ops[nat], ops[k], "higher"), whole(net[key]), whole(cpu[key])
    } }
  function cell(list) { return list == "" ? "-" : sprintf("%.0f [%.0f-%.0f]", median(list), lo(list), hi(list)) }
  function whole(list) { return list == "" ? "-" : sprintf("%.0f", median(list)) }
' "$SAMPLES" "$rows"
echo
echo "Commands (the first of each kind; the others differ in -threads/-c and the workload):"
echo
sed 's/^/    /' "$COMMANDS"
echo
echo "Samples (one line per run): $SAMPLES"
exit "$FAILED"
