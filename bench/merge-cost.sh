#!/usr/bin/env bash
# The cost of `kvperf merge`: SHARDS shard results of OPS operations each
# (workload A through the null engine, paced at 1 M ops/s per shard with
# latency also from the intended start, so each carries four wide
# histograms: READ, UPDATE, and their Intended- ones), merged REPEATS
# times into JSON and into YCSB's text; wall time and peak memory,
# median [min-max].
#
#   bench/merge-cost.sh > merge-cost.md
#   SHARDS=8 OPS=100000 bench/merge-cost.sh      # quick check
#
# Env vars (defaults):
#   SHARDS=64           shard results
#   OPS=1000000         operations per shard
#   REPEATS=5
#   KVPERF, BENCH_CACHE: see bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SHARDS=${SHARDS:-64}
OPS=${OPS:-1000000}
REPEATS=${REPEATS:-5}

require_kvperf
new_log_dir merge-cost
dir=$LOG_DIR/shards
mkdir -p "$dir"
echo "# $(date +%T) writing $SHARDS shard results of $OPS operations" >&2
for ((i = 0; i < SHARDS; i++)); do
  "$KVPERF" run --engine null -P "$WORKLOADS_DIR/workloada" -p recordcount=1000000 \
    -p operationcount=$((OPS * SHARDS)) -threads 1 --shard "$i/$SHARDS" \
    -target $((SHARDS * 1000000)) -p measurement.interval=both \
    --format json --output "$dir/run-$i.json"
done
bytes=$(cat "$dir"/run-*.json | wc -c)

: >"$LOG_DIR/times.tsv"
for ((r = 1; r <= REPEATS; r++)); do
  for format in json text; do
    /usr/bin/time -f "%e %M" -o "$LOG_DIR/time.txt" \
      "$KVPERF" merge "$dir"/run-*.json --format "$format" --output "$LOG_DIR/merged.$format" \
      2>>"$LOG_DIR/merge.stderr"   # its warning that the shards, written one by one, did not overlap
    printf '%s\t%s\n' "$format" "$(tr ' ' '\t' <"$LOG_DIR/time.txt")" >>"$LOG_DIR/times.tsv"
  done
done
merged_ops=$(awk -F', ' '$1 == "[READ]" && $2 == "Operations" { r = $3 } $1 == "[UPDATE]" && $2 == "Operations" { u = $3 } END { print r + u }' "$LOG_DIR/merged.text")
if [ "$merged_ops" != $((OPS * SHARDS)) ]; then
  echo "error: the merge holds $merged_ops operations, not $((OPS * SHARDS))" >&2
  FAILED=1
fi

echo "kvperf merge of $SHARDS shards x $OPS operations (workload A, null engine paced at 1 M ops/s per shard, latency from the intended start too; $((bytes / 1024)) KiB of shard JSON), median of $REPEATS repeats [min-max]; $(date -u +%F), $("$KVPERF" --version | head -n 1), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
md_row output "wall s" "peak RSS MiB"
md_row --- ---: ---:
awk -F'\t' "$AWK_STATS"'
  { f[$1] = 1; add(s, $1, $2); add(m, $1, $3 / 1024) }
  END { for (k in f) printf "| %s | %.2f [%.2f-%.2f] | %.1f [%.1f-%.1f] |\n", k, median(s[k]), lo(s[k]), hi(s[k]), median(m[k]), lo(m[k]), hi(m[k]) }
' "$LOG_DIR/times.tsv" | sort
exit "$FAILED"
