#!/usr/bin/env bash
# RocksDB's release library vs RocksDB compiled from source (issue 46,
# item 3): the same kvperf commit built twice, once linking the library
# scripts/rocksdb-release.sh fetches (the default build) and once with
# KVPERF_ROCKSDB=source (the librocksdb-sys crate compiling RocksDB's C++),
# run side by side on the same machine: a YCSB load, workloads A and C, and
# `kvperf bench` fillrandom and readrandom, at each thread count. Every row
# runs REPEATS times, the two builds alternating (which goes first flips
# each repeat), each on its own store in $BENCH_CACHE/release-vs-source/.
#
#   bench/rocksdb-release-vs-source.sh > parity.md
#   REPEATS=1 RECORDS=20000 OPS=50000 DURATION=2 bench/rocksdb-release-vs-source.sh   # quick check
#
# Env vars (defaults):
#   KVPERF_RELEASE=~/.cache/kvperf/target/release/kvperf          the default build
#   KVPERF_SOURCE=~/.cache/kvperf/target-source/release/kvperf    KVPERF_ROCKSDB=source's build
#   REPEATS=5 THREADS="1 2" RECORDS=200000 (1 KB records) OPS=500000
#   NUM=200000 (db_bench keys, 1 KB values) DURATION=10 (s per bench row)
#   BENCH_ARGS: more flags for every `kvperf bench` row, e.g.
#     "--compression_type=none" to take snappy out of the comparison
#   PROFILE=1: for each row whose verdict is not "~" (PROFILE=all: every
#     row), one `perf record -g`
#     of each build on that row (repeat 1's settings) and the top symbols by
#     library, so a difference is named (compiler flags, a different
#     allocator, ...). Needs perf (apt-get install linux-perf).
#
# Output: a markdown table, one row per phase and thread count: each
# build's median (min-max) ops/s, release/source of the medians and
# `kvperf verdict` (release vs source: its 95% interval, faster/slower/~).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KVPERF_RELEASE=${KVPERF_RELEASE:-$HOME/.cache/kvperf/target/release/kvperf}
KVPERF_SOURCE=${KVPERF_SOURCE:-$HOME/.cache/kvperf/target-source/release/kvperf}
REPEATS=${REPEATS:-5}
THREADS=${THREADS:-"1 2"}
RECORDS=${RECORDS:-200000}
OPS=${OPS:-500000}
NUM=${NUM:-200000}
DURATION=${DURATION:-10}
PROFILE=${PROFILE:-0}

for side in RELEASE SOURCE; do
  bin=KVPERF_$side
  if [ ! -x "${!bin}" ]; then
    echo "error: no kvperf binary at ${!bin} ($bin); build it: '. scripts/rocksdb-release.sh --export; CARGO_TARGET_DIR=\$KVPERF_DEFAULT_TARGET_DIR cargo build --release --locked --no-default-features --features rocksdb' (with KVPERF_ROCKSDB=source for the source build)" >&2
    exit 2
  fi
done
# Both must be this machine's builds of RocksDB: the versions they load.
RELEASE_VERSION=$("$KVPERF_RELEASE" --version | head -n 1 || true)
SOURCE_VERSION=$("$KVPERF_SOURCE" --version | head -n 1 || true)
# The same kvperf on both sides, or the row measures more than the library.
commit_of() { "$1" --version | sed -n 's/.*(commit \([0-9a-f]*\).*/\1/p' | head -n 1; }
if [ "$(commit_of "$KVPERF_RELEASE")" != "$(commit_of "$KVPERF_SOURCE")" ]; then
  echo "error: the two builds are of different commits ($(commit_of "$KVPERF_RELEASE") and $(commit_of "$KVPERF_SOURCE")); build both from one checkout" >&2
  exit 2
fi
KVPERF=$KVPERF_RELEASE   # `kvperf verdict` (lib.sh's judge)
new_log_dir rocksdb-release-vs-source
DATA=$BENCH_CACHE/release-vs-source
SAMPLES=$LOG_DIR/samples.tsv
: >"$SAMPLES"
YCSB_SHAPE=(-p "recordcount=$RECORDS" -p "operationcount=$OPS" -p fieldcount=1 -p fieldlength=1024)
# shellcheck disable=SC2206 # BENCH_ARGS is split on purpose: extra flags
BENCH_SHAPE=(--num="$NUM" --value_size=1024 --no-progress ${BENCH_ARGS:-})

binary() { # SIDE
  case $1 in release) echo "$KVPERF_RELEASE" ;; source) echo "$KVPERF_SOURCE" ;; esac
}


# phase SIDE ROW THREADS REPEAT: runs one row once for SIDE; one line of $SAMPLES.
phase() {
  local side=$1 row=$2 t=$3 r=$4 bin db log v
  bin=$(binary "$side")
  db=$DATA/$side-$row
  log=$LOG_DIR/$side-$row-t$t-r$r.txt
  case $row in
    load)
      rm -rf "$DATA/$side-ycsb"
      run_phase "$log" "$bin" load --fresh --engine rocksdb --db "$DATA/$side-ycsb" \
        -P "$WORKLOADS_DIR/workloada" "${YCSB_SHAPE[@]}" -threads "$t" || FAILED=1
      v=$(throughput "$log") ;;
    a | c)
      run_phase "$log" "$bin" run --engine rocksdb --db "$DATA/$side-ycsb" \
        -P "$WORKLOADS_DIR/workload$row" "${YCSB_SHAPE[@]}" -p seed="$r" -threads "$t" || FAILED=1
      v=$(throughput "$log") ;;
    fillrandom)
      rm -rf "$db"
      run_bench "$log" "$bin" --db="$db" --benchmarks=fillrandom --threads="$t" --duration="$DURATION"
      v=$(bench_ops_per_sec "$log" fillrandom) ;;
    readrandom)
      # Its store is made once per side (fillseq, compactions waited for).
      if [ ! -d "$db" ]; then
        run_bench "$LOG_DIR/$side-readrandom-fill.txt" "$bin" --db="$db" --benchmarks=fillseq,waitforcompaction --threads=1
      fi
      run_bench "$log" "$bin" --db="$db" --use_existing_db=1 --benchmarks=readrandom \
        --threads="$t" --duration="$DURATION"
      v=$(bench_ops_per_sec "$log" readrandom) ;;
  esac
  printf '%s\t%s\t%s\t%s\t%s\n' "$row" "$t" "$side" "$r" "$v" >>"$SAMPLES"
}

run_bench() { # LOG BIN ARGS...
  local log=$1 rc=0
  shift
  echo "# $(date +%T) $(basename "$log" .txt)" >&2
  "$1" bench "${BENCH_SHAPE[@]}" "${@:2}" >"$log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    mv -f "$log" "${log%.txt}.FAILED.txt"
    echo "error: $(basename "$log" .txt) failed (exit $rc); last lines:" >&2
    tail -n 15 "${log%.txt}.FAILED.txt" >&2
    FAILED=1
  fi
}

# The YCSB rows in their order (a load makes the store A and C run on).
ROWS=${ROWS:-"load a c fillrandom readrandom"}
rm -rf "$DATA"
mkdir -p "$DATA"
for t in $THREADS; do
  for r in $(seq 1 "$REPEATS"); do
    order="release source"
    [ $((r % 2)) = 0 ] && order="source release"
    for row in $ROWS; do
      for side in $order; do
        phase "$side" "$row" "$t" "$r"
      done
    done
  done
done

echo "RocksDB's release library vs RocksDB built from source: $REPEATS alternating repeats per row; YCSB $RECORDS records of 1 x 1 KB, $OPS operations per run; bench $NUM keys of 1 KB, ${DURATION} s per row${BENCH_ARGS:+, $BENCH_ARGS} ($(date -u +%F\ %H:%M) UTC, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "- release: $KVPERF_RELEASE ($RELEASE_VERSION)"
echo "- source: $KVPERF_SOURCE ($SOURCE_VERSION)"
echo
md_row row threads "release ops/s" "source ops/s" "release/source" "release vs source, 95% CI"
md_row --- ---: ---: ---: ---: ---
VERDICTS=$LOG_DIR/verdicts.tsv
: >"$VERDICTS"
for t in $THREADS; do
  for row in $ROWS; do
    rel=$(awk -F'\t' -v w="$row" -v t="$t" '$1 == w && $2 == t && $3 == "release" { printf " %s", $5 }' "$SAMPLES")
    src=$(awk -F'\t' -v w="$row" -v t="$t" '$1 == w && $2 == t && $3 == "source" { printf " %s", $5 }' "$SAMPLES")
    awk -v w="$row" -v t="$t" -v b="$src" -v k="$rel" -v kvperf="$KVPERF" -v out="$VERDICTS" "$AWK_STATS"'
      function cell(list) { return list ~ /[0-9]/ ? sprintf("%.0f (%.0f-%.0f)", median(list), lo(list), hi(list)) : "-" }
      BEGIN {
        r = (b ~ /[0-9]/ && k ~ /[0-9]/ && median(b) > 0) ? sprintf("%.2f", median(k) / median(b)) : "-"
        v = judge(b, k, "higher")
        printf "| %s | %s | %s | %s | %s | %s |\n", w, t, cell(k), cell(b), r, v
        printf "%s\t%s\t%s\n", w, t, v >> out
      }'
  done
done

if [ "$PROFILE" = 1 ] || [ "$PROFILE" = all ]; then
  require_tool perf "install it with 'apt-get install linux-perf'"
  echo
  echo "## Profiles of the rows that differ"
  while IFS=$'\t' read -r row t verdict; do
    case $PROFILE:$verdict in all:* | *faster* | *slower*) ;; *) continue ;; esac
    for side in release source; do
      data=$LOG_DIR/$side-$row-t$t.perf.data
      echo
      echo "### $row, $t threads, $side ($verdict)"
      echo
      echo '```'
      perf record -g -o "$data" -- bash -c "$(declare -f phase run_bench run_phase binary bench_ops_per_sec throughput ycsb_value positive_throughput non_ok_returns); $(declare -p YCSB_SHAPE BENCH_SHAPE LOG_DIR DATA SAMPLES KVPERF_RELEASE KVPERF_SOURCE WORKLOADS_DIR DURATION FAILED); SAMPLES=/dev/null; phase $side $row $t 99" >/dev/null 2>&1 || true
      # A flat profile: the top symbols with the library each is in.
      { perf report -i "$data" --no-children --sort dso,sym --stdio -g none 2>/dev/null || true; } |
        grep -v '^#' | grep -v '^$' | head -n 20 || true
      echo '```'
    done
  done <"$VERDICTS"
fi
echo
echo "Raw outputs: $LOG_DIR"
exit "$FAILED"
