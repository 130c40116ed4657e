#!/usr/bin/env bash
# A bounded soak: one long `kvperf run` (YCSB A on RocksDB by default)
# with its resident memory, open file descriptors and threads sampled
# every INTERVAL seconds, then checks that they stayed flat and that the
# final figures agree with the per-interval status lines.
#
#   KVPERF=~/.cache/kvperf/target/release/kvperf DURATION=3600 scripts/soak.sh
#
# Environment: KVPERF, DURATION (seconds, default 3600), INTERVAL (seconds
# between samples, default 60), ENGINE (default rocksdb), EXTRA (more
# arguments for `kvperf run`, e.g. "-p redis.port=6380"), WORK (scratch
# directory, default a new one under /var/tmp, removed unless KEEP=1).
# Prints a CSV of the samples (seconds, rss_kib, fds, threads) and a
# verdict, and draws the samples into CHART (default ./soak-ENGINE.svg,
# scripts/soak-chart.sh); exits 1 when a check fails.
set -euo pipefail

KVPERF=${KVPERF:-$HOME/.cache/kvperf/target/release/kvperf}
DURATION=${DURATION:-3600}
INTERVAL=${INTERVAL:-60}
ENGINE=${ENGINE:-rocksdb}
EXTRA=${EXTRA:-}
WORK=${WORK:-$(mktemp -d /var/tmp/kvperf-soak.XXXXXX)}
CHART=${CHART:-$PWD/soak-$ENGINE.svg}
[ -x "$KVPERF" ] || { echo "soak: no kvperf at $KVPERF (set KVPERF)" >&2; exit 2; }
mkdir -p "$WORK"
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT
workloads=$(cd "$(dirname "$0")/.." && pwd)/workloads
chart_script=$(cd "$(dirname "$0")" && pwd)/soak-chart.sh
cd "$WORK"
db=()
[ "$ENGINE" = rocksdb ] || [ "$ENGINE" = lmdb ] || [ "$ENGINE" = redb ] && db=(--db "$WORK/db")

# shellcheck disable=SC2086
"$KVPERF" load --engine "$ENGINE" "${db[@]}" -P "$workloads/workloada" \
  -p recordcount=200000 -threads 2 $EXTRA >load.txt 2>load.err
# shellcheck disable=SC2086
"$KVPERF" run --engine "$ENGINE" "${db[@]}" -P "$workloads/workloada" \
  -p recordcount=200000 -p operationcount=0 -p maxexecutiontime="$DURATION" \
  -p status.interval="$INTERVAL" -s -threads 4 $EXTRA >run.txt 2>run.err &
pid=$!
echo "seconds,rss_kib,fds,threads" >samples.csv
start=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  threads=$(awk '/^Threads/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
  [ -n "$rss" ] && echo "$(( $(date +%s) - start )),$rss,$fds,$threads" >>samples.csv
  sleep "$INTERVAL"
done
wait "$pid" || { echo "soak: the run failed: $(tail -n 2 run.err)" >&2; exit 1; }
cat samples.csv
"$chart_script" samples.csv "kvperf soak: $ENGINE, YCSB A, 4 threads, $DURATION s" >"$CHART"
echo "soak: the samples drawn in $CHART"

# Flat: leaving out the first sample (start-up) and the last (shutdown),
# the later half's peaks are those of the earlier half: RSS within 10%
# plus 8 MiB (RocksDB's memtables fill and flush, a sawtooth, not a
# trend), file descriptors within 16, threads within 2. A leak grows.
awk -F, 'NR > 2 { rss[n] = $2; fds[n] = $3; thr[n] = $4; n++ } END {
  n--  # the last sample is the shutdown
  if (n < 4) { print "soak: too few samples to judge (DURATION / INTERVAL < 6)"; exit 1 }
  h = int(n / 2)
  for (i = 0; i < n; i++) {
    if (i < h) { if (rss[i] > r1) r1 = rss[i]; if (fds[i] > f1) f1 = fds[i]; if (thr[i] > t1) t1 = thr[i] }
    else       { if (rss[i] > r2) r2 = rss[i]; if (fds[i] > f2) f2 = fds[i]; if (thr[i] > t2) t2 = thr[i] }
  }
  printf "soak: peaks, earlier half -> later half: rss %d -> %d KiB (%+.1f%%), fds %d -> %d, threads %d -> %d\n",
    r1, r2, (r2 - r1) * 100 / r1, f1, f2, t1, t2
  if (r2 > r1 * 1.10 + 8192 || f2 > f1 + 16 || t2 > t1 + 2) { print "soak: NOT flat"; exit 1 }
}' samples.csv

# The final count agrees with the status lines: the last status line's
# operations are at most the total and within one interval of it. Status
# lines count every operation, failed ones too, as YCSB's do; the totals'
# "Operations" are the successful ones, so every Return= line is added.
total=$(awk -F', ' '/^\[[A-Z-]+\], Return=/ {n += $3} END {print n + 0}' run.txt)
last=$(grep -o '[0-9]* sec: [0-9]* operations' run.err | tail -n 1 | awk '{print $3}')
echo "soak: final operations $total, last status line $last"
[ -n "$last" ] && [ "$last" -le "$total" ] || { echo "soak: status lines and final figures disagree" >&2; exit 1; }
echo "soak: passed"
