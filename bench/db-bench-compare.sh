#!/usr/bin/env bash
# kvperf bench vs db_bench, built (release) from the very RocksDB source the
# rocksdb crate bundles (bench/build-db-bench.sh), same machine, same flags,
# each tool on its own data directory of the same kind. Every row runs
# REPEATS times, the two tools alternating (which goes first flips each
# repeat), and is decided on the medians: this 2-vCPU machine swings +-25%
# between single runs.
#
#   bench/db-bench-compare.sh > db-bench.md
#   REPEATS=1 THREADS="1 2" NUM=20000 DURATION=2 bench/db-bench-compare.sh   # quick check
#
# Env vars (defaults):
#   REPEATS=5            runs per row and tool
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
# Per row: each tool's median ops/s with min-max, the ratio of medians, the
# median P99 (from the --histogram=1 block, which both compute the same way
# in db_bench's buckets) and its ratio; for readwhilewriting also each
# tool's median writer rate (keys written per second, from --statistics).
# The "95% CI" columns: `kvperf verdict` over the repeats of each side (the
# ratio kvperf / db_bench, its exact 95% interval and faster/slower/~, as
# `kvperf compare` judges cells; docs/semantics.md, comparisons over repeats).
# Verdict: "ok" when kvperf's median ops/s is 0.95-1.10x db_bench's and
# its median P99 within 10%; otherwise what missed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPEATS=${REPEATS:-5}
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
SAMPLES=$LOG_DIR/samples.tsv   # row, threads, tool, repeat, ops/s, P99 us, writer keys/s
: >"$SAMPLES"

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

# P99 of the last "Microseconds per <op>:" block of the log.
p99() { # LOG OP
  awk -v h="Microseconds per $2:" '$0 == h { want = 1; next }
    want && /^Percentiles:/ { for (i = 1; i < NF; i++) if ($i == "P99:") v = $(i + 1); want = 0 }
    END { print v }' "$1" 2>/dev/null || true
}
# Keys written per second over the benchmark (RocksDB's statistics count
# every write, the readwhilewriting writer's included).
writer_rate() { # LOG
  awk -v d="$DURATION" '$1 == "rocksdb.number.keys.written" { v = $4 } END { if (v != "") printf "%.0f\n", v / d }' "$1" 2>/dev/null || true
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

# sample ROW THREADS TOOL REPEAT LOG NAME OP: one line of $SAMPLES.
sample() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" \
    "$(bench_ops_per_sec "$5" "$6")" "$(p99 "$5" "$7")" "$(writer_rate "$5")" >>"$SAMPLES"
}

# One repeat of every row for TOOL at THREADS.
measure() { # TOOL THREADS REPEAT
  local tool=$1 t=$2 r=$3 L
  L=$LOG_DIR/$tool-t$t-r$r
  rm -rf "$DATA/$tool"
  mkdir -p "$DATA"
  # fillrandom on a fresh store, then fillseq (single thread) as the
  # precondition every read row uses: every key present.
  run_tool "$tool" "$L-fillrandom.txt" --benchmarks=fillrandom --threads="$t" --duration="$DURATION" || FAILED=1
  sample fillrandom "$t" "$tool" "$r" "$L-fillrandom.txt" fillrandom write
  rm -rf "$DATA/$tool"
  run_tool "$tool" "$L-fillseq.txt" --benchmarks=fillseq --threads=1 || FAILED=1
  # Every read row starts with db_bench's waitforcompaction (not measured),
  # so both tools read an LSM tree with no compaction running.
  run_tool "$tool" "$L-readrandom-cached.txt" --benchmarks=waitforcompaction,readrandom,readrandom --use_existing_db=1 \
    --threads="$t" --duration="$DURATION" --cache_size="$BIG_CACHE" || FAILED=1
  sample "readrandom (in cache)" "$t" "$tool" "$r" "$L-readrandom-cached.txt" readrandom read
  drop_page_cache
  run_tool "$tool" "$L-readrandom-uncached.txt" --benchmarks=waitforcompaction,readrandom --use_existing_db=1 \
    --threads="$t" --duration="$DURATION" || FAILED=1
  sample "readrandom (uncached)" "$t" "$tool" "$r" "$L-readrandom-uncached.txt" readrandom read
  run_tool "$tool" "$L-readwhilewriting.txt" --benchmarks=waitforcompaction,readwhilewriting --use_existing_db=1 \
    --threads="$t" --duration="$DURATION" --statistics=1 || FAILED=1
  sample readwhilewriting "$t" "$tool" "$r" "$L-readwhilewriting.txt" readwhilewriting read
  run_tool "$tool" "$L-readrandomwriterandom.txt" --benchmarks=waitforcompaction,readrandomwriterandom --use_existing_db=1 \
    --readwritepercent=80 --threads="$t" --duration="$DURATION" || FAILED=1
  sample "readrandomwriterandom 80/20" "$t" "$tool" "$r" "$L-readrandomwriterandom.txt" readrandomwriterandom read
}

echo "kvperf bench vs db_bench, value_size=$VALUE_SIZE num=$NUM duration=${DURATION}s, $REPEATS alternating repeats per row ($("$KVPERF" --version | head -n 1); db_bench from the same RocksDB source; $(nproc) cores; $(date -u +%F))"
echo

for r in $(seq 1 "$REPEATS"); do
  for t in $THREADS; do
    # The tool that goes first alternates with every repeat and thread count.
    if [ $(((r + t) % 2)) = 0 ]; then order="db_bench kvperf"; else order="kvperf db_bench"; fi
    for tool in $order; do measure "$tool" "$t" "$r"; done
  done
done
rm -rf "$DATA"

# The table: medians with min-max per (row, threads, tool).
awk -F'\t' -v threads="$THREADS" -v kvperf="$KVPERF" "$AWK_STATS"'
  { key = $1 SUBSEP $2 SUBSEP $3; add(OPS, key, $5); add(P99, key, $6); add(W, key, $7)
    if (!($1 in seen)) { seen[$1] = 1; rows[++nrows] = $1 } }
  END {
    print "| benchmark | threads | db_bench ops/s median (min-max) | kvperf ops/s median (min-max) | ops ratio | kvperf / db_bench ops/s, 95% CI over repeats | db_bench P99 us | kvperf P99 us | P99 ratio | kvperf / db_bench P99, 95% CI | writer keys/s db_bench / kvperf | verdict |"
    print "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | --- |"
    nt = split(threads, ts, " ")
    for (i = 1; i <= nrows; i++) for (j = 1; j <= nt; j++) {
      row = rows[i]; t = ts[j]; d = row SUBSEP t SUBSEP "db_bench"; k = row SUBSEP t SUBSEP "kvperf"
      if (!(d in OPS) || !(k in OPS)) { printf "| %s | %s | - | - | - | - | - | - | - | - | - | a run failed |\n", row, t; continue }
      dm = median(OPS[d]); km = median(OPS[k]); ratio = km / dm
      dp = (d in P99) ? median(P99[d]) : 0; kp = (k in P99) ? median(P99[k]) : 0
      pr = dp > 0 ? kp / dp : 0
      w = "-"; if ((d in W) && (k in W)) w = sprintf("%.0f / %.0f", median(W[d]), median(W[k]))
      verdict = "ok"
      if (ratio < 0.95) verdict = "kvperf slower"
      else if (ratio > 1.10) verdict = "kvperf >10% faster"
      if (pr > 1.10 || (pr > 0 && pr < 0.90)) verdict = (verdict == "ok" ? "" : verdict ", ") "P99 off by " sprintf("%+.0f%%", (pr - 1) * 100)
      printf "| %s | %s | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | %.2f | %s | %.1f | %.1f | %.2f | %s | %s | %s |\n",
        row, t, dm, lo(OPS[d]), hi(OPS[d]), km, lo(OPS[k]), hi(OPS[k]), ratio, judge(OPS[d], OPS[k], "higher"),
        dp, kp, pr, judge(P99[d], P99[k], "lower"), w, verdict
    }
  }' "$SAMPLES"
echo
echo "Samples (one line per run): $SAMPLES"
exit "$FAILED"
