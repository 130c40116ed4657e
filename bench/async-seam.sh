#!/usr/bin/env bash
# Blocking vs async seam against one local Cassandra node, beside a bare
# async client: kvperf with clients on threads (blocking at the seam; its
# default session per thread, and one shared session), kvperf with clients
# as tasks (the async seam, its default), and the bare loop
# (bench/cql_async_loop.rs: N tokio tasks sharing one session, no runner).
# Workloads C and A, 1 KB records (10 x 100 B), uniform keys, at each client
# count; REPEATS rounds, the order of the variants rotating each round;
# median (min-max) of ops/s, and client and server CPU per operation.
#
#   KVPERF=/path/to/release/kvperf bench/async-seam.sh > async-seam.md
#   RECORDS=20000 OPS=20000 REPEATS=1 CLIENTS="4" bench/async-seam.sh   # quick
#
# Env vars (defaults): RECORDS=100000 OPS=100000 (per run) CLIENTS="4 16"
#   WORKLOADS="c a" REPEATS=5 RUNTIME_THREADS=$(nproc) (the async runtimes'
#   workers, kvperf's and the bare loop's); KVPERF, BENCH_CACHE: bench/lib.sh.
#   CQL_LOOP=~/.cache/kvperf/target/release/examples/cql-async-loop  the bare loop
#     (built there from this checkout when missing; never next to a copied KVPERF)
#
# Client CPU is the whole client process's (user + system, setup and close
# included), server CPU the Cassandra JVM's, both over the run, per
# operation. On a machine where client and server share the cores, client
# CPU is taken from the server's capacity.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RECORDS=${RECORDS:-100000}
OPS=${OPS:-100000}
CLIENTS=${CLIENTS:-"4 16"}
WORKLOADS=${WORKLOADS:-"c a"}
REPEATS=${REPEATS:-5}
RUNTIME_THREADS=${RUNTIME_THREADS:-$(nproc)}
VARIANTS="blocking blocking-shared async bare"

require_kvperf
TARGET=${CARGO_TARGET_DIR:-$HOME/.cache/kvperf/target}
LOOP=${CQL_LOOP:-$TARGET/release/examples/cql-async-loop}
if [ ! -x "$LOOP" ]; then
  (cd "$REPO_DIR" && . scripts/rocksdb-release.sh --export && \
    CARGO_TARGET_DIR=$TARGET cargo build --release --locked --example cql-async-loop >&2)
fi
command -v jq >/dev/null || { echo "error: jq is needed to read kvperf's JSON results" >&2; exit 2; }
new_log_dir async-seam
SERVER=$LOG_DIR/server
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
stop_server() { "$KVPERF" server stop cassandra --dir "$SERVER" >&2 || true; }
trap stop_server EXIT
started=$("$KVPERF" server start cassandra --dir "$SERVER" --port "$PORT" -p "cassandra_storage_port=$(free_port)")
SERVER_PID=$(echo "$started" | sed -n 's/.* pids=\([0-9]*\).*/\1/p')
[ -n "$SERVER_PID" ] || { echo "error: no pids= in the server's start line: $started" >&2; exit 1; }
echo "# $started" >&2

SHAPE=(--engine cassandra -p "cassandra.port=$PORT" -p "recordcount=$RECORDS" -p fieldcount=10 -p fieldlength=100 -p requestdistribution=uniform)
run_phase "$LOG_DIR/load.txt" "$KVPERF" load --fresh -P "$WORKLOADS_DIR/workloada" "${SHAPE[@]}" -threads 4 || exit 1

# One run of a variant; prints "ops_per_s client_cpu_us_per_op server_cpu_us_per_op".
run_variant() { # VARIANT WORKLOAD CLIENTS LOG
  local variant=$1 w=$2 n=$3 log=$4 extra=()
  case $variant in
    blocking) extra=(-p clients=threads) ;;
    blocking-shared) extra=(-p clients=threads -p cassandra.sessions=shared) ;;
    async) extra=(-p clients=tasks -p "runtimethreads=$RUNTIME_THREADS") ;;
    bare)
      local updates=0
      [ "$w" = a ] && updates=0.5
      "$LOOP" --mode async --port "$PORT" --keyspace ycsb --clients "$n" --ops "$OPS" \
        --runtime-threads "$RUNTIME_THREADS" --update-proportion "$updates" --server-pid "$SERVER_PID" >"$log" 2>&1 \
        || { cat "$log" >&2; return 1; }
      awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END { print v["ops_per_s"], v["client_cpu_per_op_us"], v["server_cpu_per_op_us"] }' "$log"
      return
      ;;
  esac
  "$KVPERF" run -P "$WORKLOADS_DIR/workload$w" "${SHAPE[@]}" -p "operationcount=$OPS" -threads "$n" "${extra[@]}" \
    --format json --output "$log" 2>"${log%.json}.stderr" || { cat "${log%.json}.stderr" >&2; return 1; }
  jq -r '.measurements[0] | . as $m | .accounting as $a |
    [$m.ops_per_sec, ($a.cpu.user_s + $a.cpu.system_s) / $m.operations * 1e6, $a.server.cpu_s / $m.operations * 1e6]
    | map(tostring) | join(" ")' "$log"
}

echo "Blocking vs async seam, one local Cassandra node ($(sed -n 's/.*version=\([^ ]*\).*/\1/p' <<<"$started")), $RECORDS records of 10 x 100 B, uniform keys, $OPS operations per run, median (min-max) of $REPEATS alternating rounds; async runtimes with $RUNTIME_THREADS workers ($("$KVPERF" --version | head -n 1); $(nproc) cores; $(date -u +%F))"
echo
md_row workload clients variant "ops/s median (min-max)" "client CPU us/op" "server CPU us/op" "vs bare loop"
md_row --- ---: --- ---: ---: ---: ---:
for w in $WORKLOADS; do
  for n in $CLIENTS; do
    declare -A ops=() ccpu=() scpu=()
    for r in $(seq 1 "$REPEATS"); do
      # Rotate the order so no variant always runs first (or after another).
      set -- $VARIANTS
      for _ in $(seq 2 "$r"); do set -- "${@:2}" "$1"; done
      for v in "$@"; do
        echo "# $(date +%T) $w c=$n $v round $r" >&2
        if fig=$(run_variant "$v" "$w" "$n" "$LOG_DIR/$w-c$n-$v-r$r.json"); then
          read -r o c s <<<"$fig"
          ops[$v]+=" $o"; ccpu[$v]+=" $c"; scpu[$v]+=" $s"
        else
          FAILED=1
        fi
      done
    done
    bare=$(awk "$AWK_STATS"' BEGIN { print median(ARGV[1]) }' "${ops[bare]:-}")
    for v in $VARIANTS; do
      stats=$(awk "$AWK_STATS"' BEGIN { l = ARGV[1]; if (l == "") { print "- - - - -"; exit }
        printf "%.0f %.0f %.0f %.1f %.1f\n", median(l), lo(l), hi(l), median(ARGV[2]), median(ARGV[3]) }' \
        "${ops[$v]:-}" "${ccpu[$v]:-}" "${scpu[$v]:-}")
      read -r med lo hi cc sc <<<"$stats"
      md_row "$w" "$n" "$v" "$med ($lo-$hi)" "$cc" "$sc" "$(ratio "$med" "$bare")"
    done
    unset ops ccpu scpu
  done
done
echo
echo "Raw outputs: $LOG_DIR"
exit "$FAILED"
