#!/usr/bin/env bash
# The main job at a small scale: build kvperf, load RocksDB in a fresh
# directory, run YCSB workloads A-F at a few thread counts, write a report.
#
#   scripts/quickstart.sh                 # 100k records, 200k ops, threads 1 2 4
#   RECORDS=1000000 OPS=2000000 THREADS="1 4 16" scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS="${RECORDS:-100000}"
OPS="${OPS:-200000}"
THREADS="${THREADS:-1 2 4}"
WORKLOADS="${WORKLOADS:-a b c f d e}"

scripts/ensure-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kvperf/target}"
cargo build --release --locked
kvperf="$CARGO_TARGET_DIR/release/kvperf"

out="reports/quickstart-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
db="$out/db"   # fresh, created and marked by kvperf
shape=(-p "recordcount=$RECORDS" -p "operationcount=$OPS")

echo "== load: $RECORDS records into $db"
"$kvperf" load --db "$db" -P workloads/workloada "${shape[@]}" -threads 2 \
  --output "$out/load.txt"
cat "$out/load.txt"

table="$out/report.md"
{
  echo "# kvperf quickstart: RocksDB, $RECORDS records x 10 fields x 100 B, $OPS ops per run"
  echo
  echo "Host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r); $("$kvperf" --version)"
  echo
  echo "| workload | threads | ops/s | read avg (us) | read p99 (us) | write avg (us) | write p99 (us) |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
} >"$table"

field() { # file group metric; "-" when the group is absent
  awk -F', ' -v g="[$2]" -v m="$3" '$1==g && $2==m {v=$3} END {print (v == "" ? "-" : v)}' "$1"
}
avg() { # file group: average latency with one decimal, or "-"
  field "$1" "$2" 'AverageLatency(us)' | awk '{ if ($1 == "-") print "-"; else printf "%.1f\n", $1 }'
}
for t in $THREADS; do
  for w in $WORKLOADS; do
    f="$out/run-$w-t$t.txt"
    echo "== workload $w, $t threads"
    "$kvperf" run --db "$db" -P "workloads/workload$w" "${shape[@]}" -threads "$t" --output "$f"
    grep -E '^\[(OVERALL|READ|UPDATE|INSERT|SCAN|READ-MODIFY-WRITE)\], (Throughput|AverageLatency|99thPercentile)' "$f"
    write_group=UPDATE
    [ "$w" = d ] || [ "$w" = e ] && write_group=INSERT
    read_group=READ
    [ "$w" = e ] && read_group=SCAN
    printf '| %s | %s | %.0f | %s | %s | %s | %s |\n' "${w^^}" "$t" \
      "$(field "$f" OVERALL 'Throughput(ops/sec)')" \
      "$(avg "$f" "$read_group")" \
      "$(field "$f" "$read_group" '99thPercentileLatency(us)')" \
      "$(avg "$f" "$write_group")" \
      "$(field "$f" "$write_group" '99thPercentileLatency(us)')" >>"$table"
  done
done
echo
cat "$table"
echo
echo "Report: $table (raw YCSB-format outputs next to it)"
