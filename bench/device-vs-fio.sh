#!/usr/bin/env bash
# kvperf's device figures against fio on the same filesystem, same run,
# alternating which tool goes first every repeat; decided on medians.
#
#  1. The 4 corners: `kvperf device corners DIR` (io_uring, O_DIRECT) vs fio
#     with the same job (io_uring, direct=1, same block, depth, ramp,
#     runtime) on its own file of the same size.
#  2. How much of the device the engine path reaches: uncached `kvperf bench
#     --benchmarks=readrandom --use_direct_reads` on RocksDB at 1, 8 and 32
#     threads vs fio's 4 KiB random reads with as many synchronous jobs.
#
#   bench/device-vs-fio.sh > device.md
#   REPEATS=1 SIZE=256MiB RUNTIME=2 RAMP=0 NUM=50000 bench/device-vs-fio.sh   # quick check
#
# Env vars (defaults):
#   REPEATS=5          runs per row and tool
#   DIR=$BENCH_CACHE/device   a directory on the device under test (not tmpfs)
#   SIZE=4GiB          test file per tool (direct I/O: the page cache is not
#                      used, so it need not exceed RAM; the device's own cache may)
#   RUNTIME=10 RAMP=2  seconds per corner
#   DEPTHS="1 8 32"    concurrency of the readrandom rows
#   NUM=1000000        keys of the readrandom store (1000-byte values, no
#                      compression: ~1 GB), with an 8 MiB block cache
#   DURATION=10        seconds per readrandom run
#   ROWS="corners readrandom"   which of the two to run
#   IO_BUFFERS=huge    the corners' I/O buffers on both sides: huge (kvperf's
#                      transparent huge pages, fio's --iomem=shmhuge from the
#                      reserved pool: needs `sysctl vm.nr_hugepages=4`) or small
#                      (4 KiB pages: kvperf --io-buffers small, fio's malloc).
#                      On a device that pays per segment the two differ 1.5-5x
#                      (bench/RESULTS.md, section 5, 2026-11-27).
#   KVPERF, BENCH_CACHE: see bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPEATS=${REPEATS:-5}
DIR=${DIR:-$BENCH_CACHE/device}
SIZE=${SIZE:-4GiB}
RUNTIME=${RUNTIME:-10}
RAMP=${RAMP:-2}
DEPTHS=${DEPTHS:-"1 8 32"}
NUM=${NUM:-1000000}
DURATION=${DURATION:-10}
ROWS=${ROWS:-"corners readrandom"}
IO_BUFFERS=${IO_BUFFERS:-huge}
for row in $ROWS; do
  case $row in corners | readrandom) ;; *) echo "error: unknown row '$row' in ROWS (corners, readrandom)" >&2; exit 2 ;; esac
done
case $IO_BUFFERS in
  huge) FIO_IOMEM=shmhuge ;;
  small) FIO_IOMEM=malloc ;;
  *) echo "error: IO_BUFFERS is '$IO_BUFFERS' (huge or small)" >&2; exit 2 ;;
esac

# The script removes its store and test file when it ends: never ones it did not make.
for own in "$DIR/rocksdb" "$DIR/fio-corners.dat"; do
  if [ -e "$own" ]; then
    echo "error: $own exists (left by a run that was killed, or not this script's); remove it or choose another DIR" >&2
    exit 2
  fi
done
require_kvperf
command -v fio >/dev/null || { echo "error: fio is not installed (apt-get install fio)" >&2; exit 2; }
command -v jq >/dev/null || { echo "error: jq is not installed (apt-get install jq)" >&2; exit 2; }
# fio's huge buffers come from the reserved pool: 4 MiB (32 x 128 KiB) plus
# the page fio adds for alignment.
if [ "$IO_BUFFERS" = huge ] && [[ " $ROWS " == *" corners "* ]]; then
  free_huge=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
  if [ "${free_huge:-0}" -lt 3 ]; then
    echo "error: fio needs 3 free 2 MiB huge pages for --iomem=shmhuge ($free_huge free): run 'sysctl vm.nr_hugepages=4' as root, or IO_BUFFERS=small" >&2
    exit 2
  fi
fi
new_log_dir device-vs-fio
mkdir -p "$DIR"
SAMPLES=$LOG_DIR/samples.tsv   # row, depth, tool, repeat, value
: >"$SAMPLES"
BYTES=$(numfmt --from=auto "${SIZE%B}" 2>/dev/null || numfmt --from=iec "${SIZE%iB}")

# kvperf's 4 corners, one sample per corner.
kvperf_corners() { # REPEAT
  local json=$LOG_DIR/kvperf-corners-r$1.json
  "$KVPERF" device corners "$DIR" --size "$SIZE" --runtime "$RUNTIME" --ramp "$RAMP" \
    --io-buffers "$IO_BUFFERS" --format json --output "$json" 2>"$LOG_DIR/kvperf-corners-r$1.err" || { FAILED=1; return; }
  jq -r --arg r "$1" '.measurements[] | [.name, .device.queue_depth, "kvperf", $r,
      (if .device.random then .ops_per_sec else .device.mb_per_sec end)] | @tsv' "$json" >>"$SAMPLES"
}

# fio's 4 corners with the job kvperf's --with-fio runs.
fio_corners() { # REPEAT
  local rw bs json
  # A new file every repeat, which fio lays out before its first job, as
  # `kvperf device corners` makes and lays out its own on every run: the
  # same work on both sides (bench/RESULTS.md, section 5, 18:48 and 18:57).
  rm -f "$DIR/fio-corners.dat"
  for rw in read randread write randwrite; do
    case $rw in rand*) bs=4096 ;; *) bs=131072 ;; esac
    json=$LOG_DIR/fio-$rw-r$1.json
    fio --name=corner --filename="$DIR/fio-corners.dat" --size="$BYTES" --rw=$rw --bs=$bs \
      --iodepth=32 --ioengine=io_uring --direct=1 --iomem="$FIO_IOMEM" --time_based --ramp_time="$RAMP" \
      --runtime="$RUNTIME" --randrepeat=0 --output-format=json >"$json" 2>&1 || { FAILED=1; continue; }
    jq -r --arg rw $rw --arg r "$1" '.jobs[0] | (if ($rw | test("write")) then .write else .read end) as $d
        | [$rw, 32, "fio", $r, (if ($rw | startswith("rand")) then $d.iops else $d.bw_bytes / 1e6 end)] | @tsv' \
      <(sed -n '/^{/,$p' "$json") >>"$SAMPLES"
  done
}

# Uncached RocksDB point reads through kvperf at Q threads.
kvperf_readrandom() { # Q REPEAT
  local log=$LOG_DIR/kvperf-readrandom-q$1-r$2.txt
  "$KVPERF" bench --no-progress --db="$DIR/rocksdb" --use_existing_db=1 --benchmarks=readrandom \
    --num="$NUM" --value_size=1000 --compression_type=none --cache_size=8388608 \
    --use_direct_reads=true --threads="$1" --duration="$DURATION" >"$log" 2>&1 || { FAILED=1; return; }
  printf 'readrandom\t%s\tkvperf\t%s\t%s\n' "$1" "$2" \
    "$(awk '$1 == "readrandom" && $6 == "ops/sec" { v = $5 } END { print v }' "$log")" >>"$SAMPLES"
}

# fio's 4 KiB random reads with Q synchronous jobs (one I/O in flight each).
fio_readrandom() { # Q REPEAT
  local json=$LOG_DIR/fio-randread-q$1-r$2.json
  fio --name=randread --filename="$DIR/fio-corners.dat" --size="$BYTES" --rw=randread --bs=4096 \
    --ioengine=psync --numjobs="$1" --group_reporting --direct=1 --time_based \
    --runtime="$DURATION" --randrepeat=0 --output-format=json >"$json" 2>&1 || { FAILED=1; return; }
  printf 'readrandom\t%s\tfio\t%s\t%s\n' "$1" "$2" \
    "$(sed -n '/^{/,$p' "$json" | jq '.jobs[0].read.iops')" >>"$SAMPLES"
}

echo "kvperf vs fio on $(df --output=source "$DIR" | tail -n 1) ($(findmnt -no FSTYPE -T "$DIR")), $SIZE per tool, corners on $IO_BUFFERS pages, $REPEATS alternating repeats ($("$KVPERF" --version | head -n 1); $(fio --version); $(nproc) cores; $(date -u +%F))"
echo
trap 'rm -rf "$DIR/rocksdb" "$DIR/fio-corners.dat"' EXIT
if [[ " $ROWS " == *" readrandom "* ]]; then
  echo "# $(date +%T) readrandom store: fillseq of $NUM keys" >&2
  "$KVPERF" bench --no-progress --db="$DIR/rocksdb" --benchmarks=fillseq,compact --num="$NUM" \
    --value_size=1000 --compression_type=none >"$LOG_DIR/fillseq.txt" 2>&1
fi
for r in $(seq 1 "$REPEATS"); do
  echo "# $(date +%T) repeat $r" >&2
  if [ $((r % 2)) = 1 ]; then order="kvperf fio"; else order="fio kvperf"; fi
  if [[ " $ROWS " == *" corners "* ]]; then
    for tool in $order; do "${tool}_corners" "$r"; done
  fi
  if [[ " $ROWS " == *" readrandom "* ]]; then
    for q in $DEPTHS; do
      for tool in $order; do "${tool}_readrandom" "$q" "$r"; done
    done
  fi
done

awk -F'\t' -v kvperf="$KVPERF" "$AWK_STATS"'
  { key = $1 SUBSEP $2; add(V, key SUBSEP $3, $5); if (!(key in seen)) { seen[key] = 1; rows[++n] = key } }
  END {
    print "| row | concurrency | unit | fio median (min-max) | kvperf median (min-max) | kvperf / fio | kvperf vs fio, 95% CI |"
    print "| --- | ---: | --- | ---: | ---: | ---: | --- |"
    for (i = 1; i <= n; i++) {
      split(rows[i], k, SUBSEP); f = rows[i] SUBSEP "fio"; m = rows[i] SUBSEP "kvperf"
      unit = (k[1] ~ /^rand/) ? "IOPS" : (k[1] == "readrandom" ? "reads/s" : "MB/s")
      label = (k[1] == "readrandom") ? "readrandom (RocksDB, direct reads) vs fio randread psync" : k[1]
      if (!(f in V) || !(m in V)) { printf "| %s | %s | %s | - | - | a run failed | - |\n", label, k[2], unit; continue }
      printf "| %s | %s | %s | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | %.2f | %s |\n", label, k[2], unit,
        median(V[f]), lo(V[f]), hi(V[f]), median(V[m]), lo(V[m]), hi(V[m]), median(V[m]) / median(V[f]),
        judge(V[f], V[m], "higher")
    }
  }' "$SAMPLES"
echo
echo "Samples (one line per run): $SAMPLES"
exit "$FAILED"
