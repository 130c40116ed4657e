#!/usr/bin/env bash
# kvperf bench vs db_bench, built (release) from the very RocksDB source the
# rocksdb crate bundles (bench/build-db-bench.sh), same machine, same flags,
# each tool on its own data directory of the same kind.
#
#   bench/db-bench-compare.sh > db-bench.md
#   THREADS="1 2" NUM=20000 DURATION=2 bench/db-bench-compare.sh     # quick check
#
# Env vars (defaults):
#   NUM=100000           keys (4 KB values: ~400 MB raw, ~200 MB after snappy)
#   VALUE_SIZE=4096      bytes per value
#   THREADS="1 2 8 32"   thread counts
#   DURATION=10          seconds per measured benchmark
#   BIG_CACHE=1073741824 block cache for the "in cache" readrandom rows
#   DROP_CACHES=1        drop the page cache before the uncached readrandom
#                        (needs root; set 0 where it is not allowed)
#   KVPERF, BENCH_CACHE: see bench/lib.sh; DB_BENCH=path to skip the build
#
# Rows, per thread count: fillrandom (fresh store, DURATION s);
# readrandom with the store in a 1 GiB block cache (a first pass warms it,
# the second is reported); readrandom with the default 32 MiB block cache
# (the store is 6x larger) after dropping the page cache; readwhilewriting
# (one extra writer thread); readrandomwriterandom at 80% reads.
# Each row prints both tools' ops/s and P99 (from the --histogram=1 block,
# which both compute the same way in db_bench's buckets) and the ratios.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

NUM=${NUM:-100000}
VALUE_SIZE=${VALUE_SIZE:-4096}
THREADS=${THREADS:-"1 2 8 32"}
DURATION=${DURATION:-10}
BIG_CACHE=${BIG_CACHE:-1073741824}
DROP_CACHES=${DROP_CACHES:-1}

require_kvperf
DB_BENCH=${DB_BENCH:-$("$BENCH_DIR/build-db-bench.sh" | tail -n 1)}
[ -x "$DB_BENCH" ] || { echo "error: no db_bench at '$DB_BENCH'" >&2; exit 2; }
new_log_dir db-bench-compare
DATA=$BENCH_CACHE/dbbench-data
COMMON=(--value_size="$VALUE_SIZE" --num="$NUM" --compression_ratio=0.5 --histogram=1 --seed=42)

# run_tool TOOL LOG FLAGS...: one invocation of db_bench or kvperf bench.
run_tool() {
  local tool=$1 log=$2
  shift 2
  if [ "$tool" = db_bench ]; then
    run_phase "$log" "$DB_BENCH" "${COMMON[@]}" --db="$DATA/db_bench" "$@"
  else
    run_phase "$log" "$KVPERF" bench --no-progress "${COMMON[@]}" --db="$DATA/kvperf" "$@"
  fi
}

# Both tools print "<name> : <x> micros/op <ops> ops/sec ..."; the last
# such line of a benchmark is the measured one.
ops_per_sec() { # LOG NAME
  awk -v n="$2" '$1 == n && $2 == ":" && $6 == "ops/sec" { v = $5 } END { print v }' "$1"
}
# P99 of the last "Microseconds per <op>:" block of the log.
p99() { # LOG OP
  awk -v h="Microseconds per $2:" '$0 == h { want = 1; next }
    want && /^Percentiles:/ { for (i = 1; i < NF; i++) if ($i == "P99:") v = $(i + 1); want = 0 }
    END { print v }' "$1"
}

drop_page_cache() {
  if [ "$DROP_CACHES" = 1 ]; then
    sync
    echo 3 >/proc/sys/vm/drop_caches || { echo "error: cannot drop caches; set DROP_CACHES=0" >&2; exit 2; }
  fi
}

positive_throughput() { # run_phase's check, db_bench style
  awk '$2 == ":" && $6 == "ops/sec" && $5 + 0 > 0 { ok = 1 } END { exit !ok }' "$1"
}

echo "kvperf bench vs db_bench, value_size=$VALUE_SIZE num=$NUM duration=${DURATION}s ($("$KVPERF" --version | head -n 1); db_bench from the same RocksDB source; $(nproc) cores; $(date -u +%F))"
echo
md_row benchmark threads "db_bench ops/s" "kvperf ops/s" "ops ratio" "db_bench P99 us" "kvperf P99 us" "P99 ratio"
md_row --- ---: ---: ---: ---: ---: ---: ---:

# row LABEL THREADS OP DB_BENCH_LOG KVPERF_LOG NAME
row() {
  local d k
  d=$(ops_per_sec "$4" "$6")
  k=$(ops_per_sec "$5" "$6")
  md_row "$1" "$2" "$(num "$d")" "$(num "$k")" "$(ratio "$k" "$d")" \
    "$(p99 "$4" "$3")" "$(p99 "$5" "$3")" "$(ratio "$(p99 "$5" "$3")" "$(p99 "$4" "$3")")"
}

first=db_bench
for t in $THREADS; do
  order="db_bench kvperf"
  [ "$first" = kvperf ] && order="kvperf db_bench"
  for tool in $order; do
    L=$LOG_DIR/$tool-t$t
    rm -rf "$DATA/$tool"
    mkdir -p "$DATA"
    # fillrandom on a fresh store, then fillseq (single thread) as the
    # precondition every read row uses: every key present.
    run_tool "$tool" "$L-fillrandom.txt" --benchmarks=fillrandom --threads="$t" --duration="$DURATION" || FAILED=1
    rm -rf "$DATA/$tool"
    run_tool "$tool" "$L-fillseq.txt" --benchmarks=fillseq --threads=1 || FAILED=1
    # Every read row starts with db_bench's waitforcompaction (not measured),
    # so both tools read an LSM tree with no compaction running.
    run_tool "$tool" "$L-readrandom-cached.txt" --benchmarks=waitforcompaction,readrandom,readrandom --use_existing_db=1 \
      --threads="$t" --duration="$DURATION" --cache_size="$BIG_CACHE" || FAILED=1
    drop_page_cache
    run_tool "$tool" "$L-readrandom-uncached.txt" --benchmarks=waitforcompaction,readrandom --use_existing_db=1 \
      --threads="$t" --duration="$DURATION" || FAILED=1
    run_tool "$tool" "$L-readwhilewriting.txt" --benchmarks=waitforcompaction,readwhilewriting --use_existing_db=1 \
      --threads="$t" --duration="$DURATION" || FAILED=1
    run_tool "$tool" "$L-readrandomwriterandom.txt" --benchmarks=waitforcompaction,readrandomwriterandom --use_existing_db=1 \
      --readwritepercent=80 --threads="$t" --duration="$DURATION" || FAILED=1
  done
  D=$LOG_DIR/db_bench-t$t
  K=$LOG_DIR/kvperf-t$t
  row fillrandom "$t" write "$D-fillrandom.txt" "$K-fillrandom.txt" fillrandom
  row "readrandom (in cache)" "$t" read "$D-readrandom-cached.txt" "$K-readrandom-cached.txt" readrandom
  row "readrandom (uncached)" "$t" read "$D-readrandom-uncached.txt" "$K-readrandom-uncached.txt" readrandom
  row readwhilewriting "$t" read "$D-readwhilewriting.txt" "$K-readwhilewriting.txt" readwhilewriting
  row "readrandomwriterandom 80/20" "$t" read "$D-readrandomwriterandom.txt" "$K-readrandomwriterandom.txt" readrandomwriterandom
  [ "$first" = db_bench ] && first=kvperf || first=db_bench
done
rm -rf "$DATA"
exit "$FAILED"
