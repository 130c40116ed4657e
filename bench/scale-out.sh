#!/usr/bin/env bash
# Client processes against one server: throughput from 1 to 4 local kvperf
# processes (each `--shard i/N`, merged with `kvperf merge`) against one
# Redis that kvperf starts, with the server's CPU beside it, to show where
# the server becomes the bound. Client counts alternate in order (1..4,
# then 4..1) over the repeats; each cell is the median of the repeats, with
# min and max.
#
#   bench/scale-out.sh > scale-out.md
#   REPEATS=3 SECONDS_PER_RUN=2 bench/scale-out.sh      # quick check
#
# Env vars (defaults):
#   CLIENTS="1 2 3 4"   client process counts
#   THREADS=2           threads per client process
#   RECORDS=100000      records, loaded once (workload's fields: 10 x 100 B)
#   WORKLOAD=b          core workload of the runs
#   SECONDS_PER_RUN=5   maxexecutiontime of every client of a run
#   REPEATS=5
#   PORT=16379          Redis port (127.0.0.1)
#   KVPERF, BENCH_CACHE: see bench/lib.sh
#
# Output: a markdown table on stdout; raw results (every shard's JSON and
# each merged one) under $BENCH_CACHE/logs/. Needs jq.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CLIENTS=${CLIENTS:-"1 2 3 4"}
THREADS=${THREADS:-2}
RECORDS=${RECORDS:-100000}
WORKLOAD=${WORKLOAD:-b}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
REPEATS=${REPEATS:-5}
PORT=${PORT:-16379}

require_kvperf
command -v jq >/dev/null || { echo "error: needs jq (apt-get install jq)" >&2; exit 2; }
new_log_dir scale-out
server_dir=$LOG_DIR/redis
"$KVPERF" server start redis --dir "$server_dir" --port "$PORT" >&2
trap '"$KVPERF" server stop redis --dir "$server_dir" >&2 || true' EXIT

props=(--engine redis -p redis.port="$PORT" -P "$WORKLOADS_DIR/workload$WORKLOAD" -p recordcount="$RECORDS")
run_phase "$LOG_DIR/load.txt" "$KVPERF" load "${props[@]}" --fresh -threads 4 || exit 1

# One run of N clients at once, merged; prints its figures as one line:
# ops/s, server cores, client cores, machine busy cores, overlap %.
clients_run() { # $1 N, $2 repeat
  local n=$1 r=$2 i pids=() rc=0 out
  for ((i = 0; i < n; i++)); do
    "$KVPERF" run "${props[@]}" -p operationcount=0 -p maxexecutiontime="$SECONDS_PER_RUN" \
      -threads "$THREADS" --shard "$i/$n" --format json --output "$LOG_DIR/r$r-c$n-$i.json" \
      2>>"$LOG_DIR/r$r-c$n.stderr" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  [ "$rc" = 0 ] || { echo "error: a client of r$r-c$n failed: $(tail -n 3 "$LOG_DIR/r$r-c$n.stderr")" >&2; return 1; }
  out=$LOG_DIR/r$r-c$n.json
  if [ "$n" = 1 ]; then   # --shard 0/1 is the whole study: nothing to merge
    cp "$LOG_DIR/r$r-c1-0.json" "$out"
  else
    "$KVPERF" merge "$LOG_DIR"/r"$r"-c"$n"-*.json --format json --output "$out" 2>>"$LOG_DIR/r$r-c$n.stderr"
  fi
  jq -r '.measurements[-1] as $m | $m.accounting as $a |
    [ $m.ops_per_sec,
      (if $a.server then $a.server.cpu_s / $a.wall_s else "" end),
      (if $a.cpu then ($a.cpu.user_s + $a.cpu.system_s) / $a.wall_s else "" end),
      (if $a.machine_cpu then $a.machine_cpu.busy_cores else "" end),
      (if .merged then .merged.overlap_pct else 100 end) ] | @tsv' "$out"
}

: >"$LOG_DIR/figures.tsv"
for ((r = 1; r <= REPEATS; r++)); do
  order=$CLIENTS
  if ((r % 2 == 0)); then order=$(echo "$CLIENTS" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for n in $order; do
    echo "# $(date +%T) repeat $r, $n clients" >&2
    line=$(clients_run "$n" "$r") || { FAILED=1; continue; }
    printf '%s\t%s\n' "$n" "$line" >>"$LOG_DIR/figures.tsv"
  done
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "Client processes against one Redis (kvperf server start), workload $WORKLOAD, $RECORDS records, $THREADS threads per client, ${SECONDS_PER_RUN} s per run, median of $REPEATS alternating repeats [min-max]; $(date -u +%F), $("$KVPERF" --version | head -n 1), $(nproc) cores, load average before the table: $load"
echo
md_row clients "ops/s" "x 1 client" "Redis CPU (cores)" "clients' CPU (cores)" "machine busy (cores of $(nproc))" "shards overlap %"
md_row ---: ---: ---: ---: ---: ---: ---:
awk -F'\t' "$AWK_STATS"'
  { n[$1] = 1; add(ops, $1, $2); add(srv, $1, $3); add(cli, $1, $4); add(mach, $1, $5); add(ov, $1, $6) }
  END {
    for (c = 1; c <= 64; c++) if (c in n) {
      if (!base) base = median(ops[c])
      printf "| %d | %.0f [%.0f-%.0f] | %.2f | %s | %s | %s | %s |\n", c, median(ops[c]), lo(ops[c]), hi(ops[c]),
        median(ops[c]) / base, cell(srv[c]), cell(cli[c]), cell(mach[c]), cell(ov[c])
    }
  }
  function cell(list) { return list == "" ? "-" : sprintf("%.2f [%.2f-%.2f]", median(list), lo(list), hi(list)) }
' "$LOG_DIR/figures.tsv"
exit "$FAILED"
