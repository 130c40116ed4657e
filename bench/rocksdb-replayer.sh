#!/usr/bin/env bash
# The RocksDB-replayer anchor (issue 49): RocksDB's own query trace of a
# kvperf run (-p rocksdb.trace=FILE), replayed by RocksDB's own Replayer
# (db_bench -benchmarks=replay, or bench/rocksdb_replay.cc, the same calls
# without db_bench's flags) and by `kvperf replay` of the
# same trace imported (`kvperf trace import --from rocksdb`), each on a
# fresh copy of the store the trace was recorded on (`kvperf replay
# --existing`), as fast as each goes with one thread. Prints the
# operations RocksDB itself counted on each side (its statistics) and the
# trace's queries per second side by side, with the ratio.
#
#   bench/rocksdb-replayer.sh > rocksdb-replayer.md
#
# Env vars (defaults):
#   KVPERF, BENCH_CACHE  see bench/lib.sh
#   DB_BENCH             db_bench to replay with (default: the one
#                        bench/build-db-bench.sh built, if it did)
#   ANCHOR               db_bench, or rocksdb_replay (bench/rocksdb_replay.cc,
#                        compiled here against the RocksDB release library
#                        kvperf links; about 20 s); default db_bench when
#                        one is found, else rocksdb_replay
#   REPEATS=5            replays per side, the side that goes first
#                        alternating
#   RECORDS=100000       records loaded (workload B's 10 fields of 100 B)
#   OPERATIONS=200000    operations of the traced run (workload B, 1 thread)
#
# Both sides open the store with kvperf's RocksDB defaults (32 MiB LRU
# block cache, 4 KiB blocks, no filter, snappy, 64 MiB memtables, two of
# them, 2 background jobs, all files open, format 7) and statistics on.
# db_bench's replay needs a column family handle for the trace's default
# column family, which it has only when it opens column families
# (--num_column_families=2: its copy of the store gets one more, empty,
# column family that no query touches; rocksdb_replay opens the default
# one's handle itself). The anchor's figure is its replay's time, from
# opening the trace file to the replay's end (db_bench's replay benchmark
# times the same span); kvperf's its measured window (the imported trace
# is in memory by then).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPEATS=${REPEATS:-5}
RECORDS=${RECORDS:-100000}
OPERATIONS=${OPERATIONS:-200000}

require_kvperf
require_tool jq "install it with apt-get install jq"
VERSION=$(awk '/^name = "librocksdb-sys"$/ { getline; gsub(/^version = "|"$/, ""); print; exit }' "$REPO_DIR/Cargo.lock")
DB_BENCH=${DB_BENCH:-$HOME/.cache/kvperf/db_bench/$VERSION/db_bench}
if [ -z "${ANCHOR:-}" ]; then
  ANCHOR=rocksdb_replay
  [ -x "$DB_BENCH" ] && ANCHOR=db_bench
fi

# own_replayer: bench/rocksdb_replay.cc built against the release library
# kvperf links and the same release's headers (the librocksdb-sys crate's);
# prints its path.
own_replayer() {
  local src lib out
  src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"librocksdb-sys-$VERSION"/rocksdb 2>/dev/null | head -n 1)
  [ -n "$src" ] || { echo "error: no source of librocksdb-sys $VERSION; run 'cargo fetch'" >&2; return 2; }
  lib=$("$REPO_DIR/scripts/rocksdb-release.sh" | tail -n 1) || return 2
  out=$BENCH_CACHE/rocksdb_replay-${VERSION#*+}
  if [ ! -x "$out" ] || [ "$BENCH_DIR/rocksdb_replay.cc" -nt "$out" ]; then
    mkdir -p "$BENCH_CACHE"
    g++ -std=c++17 -O2 -D_GLIBCXX_USE_CXX11_ABI=0 -DROCKSDB_PLATFORM_POSIX -DOS_LINUX \
      -I"$src/include" "$BENCH_DIR/rocksdb_replay.cc" -o "$out.tmp" \
      -L"$lib" -lrocksdb -Wl,-rpath,"$lib" >&2 || return 2
    mv -f "$out.tmp" "$out"
  fi
  echo "$out"
}

case $ANCHOR in
  db_bench) [ -x "$DB_BENCH" ] || { echo "error: no db_bench at '$DB_BENCH' (bench/build-db-bench.sh builds one)" >&2; exit 2; } ;;
  rocksdb_replay) OWN_REPLAYER=$(own_replayer) || exit 2 ;;
  *) echo "error: ANCHOR=$ANCHOR is not db_bench or rocksdb_replay" >&2; exit 2 ;;
esac
new_log_dir rocksdb-replayer
base=$LOG_DIR/store          # the store the trace is recorded on; never replayed on
work=$LOG_DIR/replay-store   # a fresh copy of it for each replay
trace=$LOG_DIR/run.rocksdb-trace
imported=$LOG_DIR/run.kvtrace

workload=(-P "$WORKLOADS_DIR/workloadb" -p recordcount="$RECORDS")
run_phase "$LOG_DIR/load.txt" "$KVPERF" load --db "$base" --fresh "${workload[@]}" -threads 2 || exit 1
cp -a "$base" "$work"
run_phase "$LOG_DIR/traced-run.txt" "$KVPERF" run --db "$work" "${workload[@]}" \
  -p operationcount="$OPERATIONS" -threads 1 -p rocksdb.trace="$trace" || exit 1
rm -rf "$work"
"$KVPERF" trace import "$trace" --from rocksdb --output "$imported" 2>"$LOG_DIR/import.txt" ||
  { cat "$LOG_DIR/import.txt" >&2; exit 1; }
# "N operations imported ... from RocksDB's trace: G Get, W write batches (P Put, ...), S iterator seeks, M MultiGet (K keys)"
counts=$(sed -n "s/.*from RocksDB's trace: \([0-9]*\) Get, \([0-9]*\) write batches (\([0-9]*\) Put.*, \([0-9]*\) iterator seeks, \([0-9]*\) MultiGet.*/\1 \2 \3 \4 \5/p" "$LOG_DIR/import.txt")
read -r gets batches puts seeks multigets <<<"$counts"
queries=$((gets + batches + seeks + multigets))

ROCKSDB_FLAGS=(--cache_size=33554432 --cache_type=lru_cache --block_size=4096 --bloom_bits=0
  --compression_type=snappy --write_buffer_size=67108864 --max_write_buffer_number=2
  --max_background_jobs=2 --open_files=-1 --format_version=7)

# replay SIDE LOG: one replay on a fresh copy of the store; prints
# "seconds keys_read keys_written seeks".
replay() {
  local side=$1 log=$2 rc=0
  rm -rf "$work"
  cp -a "$base" "$work"
  echo "# $(date +%T) $(basename "$log" .txt)" >&2
  if [ "$side" != kvperf ]; then
    if [ "$side" = rocksdb_replay ]; then
      "$OWN_REPLAYER" "$work" "$trace" >"$log" 2>&1 || rc=$?
    else
      "$DB_BENCH" --benchmarks=replay --trace_file="$trace" --use_existing_db=true --db="$work" \
        --trace_replay_fast_forward=1000000000 --trace_replay_threads=1 --num_column_families=2 \
        --statistics=1 "${ROCKSDB_FLAGS[@]}" >"$log" 2>&1 || rc=$?
    fi
    grep -q '^Replay completed' "$log" && [ "$rc" = 0 ] ||
      { echo "error: $side's replay failed (exit $rc); see $log" >&2; tail -n 5 "$log" >&2; return 1; }
    awk '$1 == "replay" && $2 == ":" { s = $7 }
      $1 == "rocksdb.number.keys.read" { r = $4 } $1 == "rocksdb.number.keys.written" { w = $4 }
      $1 == "rocksdb.number.db.seek" { k = $4 }
      END { print s, r, w, k }' "$log"
  else
    "$KVPERF" replay "$imported" --engine rocksdb --db "$work" --existing -p rocksdb.statistics=true \
      --format json --output "${log%.txt}.json" >"$log" 2>&1 || rc=$?
    [ "$rc" = 0 ] || { echo "error: kvperf replay failed (exit $rc); see $log" >&2; tail -n 5 "$log" >&2; return 1; }
    jq -r '.measurements[0] | [.runtime_s, .engine_stats["keys-read"], .engine_stats["keys-written"],
      .engine_stats["db-seek"]] | map(tostring) | join(" ")' "${log%.txt}.json"
  fi
  rm -rf "$work"
}

declare -A secs=() read_keys=() written_keys=() seek_count=()
for r in $(seq 1 "$REPEATS"); do
  order="$ANCHOR kvperf"
  [ $((r % 2)) = 0 ] && order="kvperf $ANCHOR"
  for side in $order; do
    if ! figures=$(replay "$side" "$LOG_DIR/$side-$r.txt"); then FAILED=1; continue; fi
    read -r s k w q <<<"$figures"
    secs[$side]="${secs[$side]:-} $s"
    read_keys[$side]="${read_keys[$side]:-} $k"
    written_keys[$side]="${written_keys[$side]:-} $w"
    seek_count[$side]="${seek_count[$side]:-} $q"
  done
done

echo "RocksDB's trace of a kvperf run replayed by RocksDB's Replayer ($ANCHOR) and by kvperf, $REPEATS repeats per side, the first side alternating ($(date -u +%F\ %H:%M) UTC, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
case $ANCHOR in
  db_bench) anchor_is="db_bench $DB_BENCH, $(grep -h -m 1 '^RocksDB:' "$LOG_DIR"/db_bench-*.txt 2>/dev/null | head -n 1 | tr -s ' ')" ;;
  *) anchor_is="bench/rocksdb_replay.cc on the release library $("$REPO_DIR/scripts/rocksdb-release.sh" | tail -n 1)" ;;
esac
echo "kvperf: $("$KVPERF" --version | head -n 1); anchor: $anchor_is"
echo "Trace: workload B, $RECORDS records, $OPERATIONS operations, 1 thread: $queries queries ($gets Get, $batches write batches of $puts Put, $seeks seeks, $multigets MultiGet)"
echo
md_row side "queries" "RocksDB keys read" "RocksDB keys written" "RocksDB seeks" "seconds median (min-max)" "queries/s median (min-max)"
md_row --- ---: ---: ---: ---: ---: ---:
for side in "$ANCHOR" kvperf; do
  awk -v side="$side" -v q="$queries" -v s="${secs[$side]:-}" -v k="${read_keys[$side]:-}" \
    -v w="${written_keys[$side]:-}" -v n="${seek_count[$side]:-}" "$AWK_STATS"'
    function span(list) { return lo(list) == hi(list) ? lo(list) : lo(list) "-" hi(list) }
    BEGIN {
      if (s == "") { printf "| %s | %d | - | - | - | - | - |\n", side, q; exit }
      printf "| %s | %d | %s | %s | %s | %.3f (%.3f-%.3f) | %.0f (%.0f-%.0f) |\n", side, q,
        span(k), span(w), span(n), median(s), lo(s), hi(s), q / median(s), q / hi(s), q / lo(s)
    }'
done
# kvperf / anchor queries per second: the inverse ratio of the times.
awk -v a="${secs[$ANCHOR]:-}" -v b="${secs[kvperf]:-}" -v anchor="$ANCHOR" -v kvperf="$KVPERF" "$AWK_STATS"'
  BEGIN {
    if (a == "" || b == "") exit
    printf "\nkvperf / %s queries/s (the inverse ratio of the median times): %.3f; kvperf verdict on the times, kvperf against %s (lower is better): %s\n",
      anchor, median(a) / median(b), anchor, judge(a, b, "lower")
  }'
echo
echo "Raw outputs: $LOG_DIR"
rm -rf "$base" "$work"
exit "$FAILED"
