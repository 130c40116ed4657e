# Shared helpers for the side-by-side benchmark scripts in bench/.
# Source it (`. "$(dirname "$0")/lib.sh"`); it does nothing on its own.
#
# Env vars it reads (defaults):
#   KVPERF=~/.cache/kvperf/target/release/kvperf   the kvperf binary
#   BENCH_CACHE=~/.cache/kvperf/bench               jars, data dirs and raw logs
#   JAVA_OPTS=""                                    extra JVM flags, e.g. -Xmx2g

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
WORKLOADS_DIR=$REPO_DIR/workloads   # kvperf's core workloads; same values as YCSB 0.17.0's
BENCH_CACHE=${BENCH_CACHE:-$HOME/.cache/kvperf/bench}
KVPERF=${KVPERF:-$HOME/.cache/kvperf/target/release/kvperf}
JAVA_OPTS=${JAVA_OPTS:-}
FAILED=0   # set to 1 by callers when a phase fails; scripts exit with it

require_kvperf() {
  if [ ! -x "$KVPERF" ]; then
    echo "error: no kvperf binary at $KVPERF; build it with scripts/quickstart.sh (or '. scripts/rocksdb-release.sh --export; CARGO_TARGET_DIR=~/.cache/kvperf/target cargo build --release --locked') in the repo, or set KVPERF=/path/to/kvperf" >&2
    exit 2
  fi
}

# example_beside_kvperf NAME: the path of Cargo example NAME in KVPERF's
# target dir, built there from this checkout first if it is missing.
example_beside_kvperf() {
  local bin
  bin=$(dirname "$KVPERF")/examples/$1
  if [ ! -x "$bin" ]; then
    # Linked as kvperf was (KVPERF_ROCKSDB, scripts/rocksdb-release.sh).
    (cd "$REPO_DIR" && . scripts/rocksdb-release.sh --export && \
      CARGO_TARGET_DIR="$(dirname "$(dirname "$KVPERF")")" \
      cargo build --release --locked --example "$1" >&2)
  fi
  echo "$bin"
}

# require_tool TOOL HINT: one line and exit 2 unless TOOL is on the PATH.
require_tool() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: '$1' not found; $2" >&2; exit 2; }
}

# Finds latte (`cargo install latte-cli`): LATTE if set, else latte on PATH or
# in ~/.cache/kvperf/latte/bin; sets LATTE to its absolute path (latte runs
# from a log directory, where it writes its own log file).
require_latte() {
  if [ -z "${LATTE:-}" ]; then
    LATTE=latte
    [ -x "$HOME/.cache/kvperf/latte/bin/latte" ] && LATTE=$HOME/.cache/kvperf/latte/bin/latte
  fi
  require_tool "$LATTE" "install it with 'cargo install latte-cli --locked' or set LATTE=/path/to/latte"
  LATTE=$(command -v "$LATTE")
}

# latte_args OP IN_FLIGHT SECONDS RECORDS JSON: sets LATTE_ARGS to latte's
# `run` of bench/latte/ycsb.rn's OP with IN_FLIGHT requests (2 threads of
# IN_FLIGHT/2), at consistency ONE and without retries, as kvperf's runs,
# over RECORDS rows, its report in JSON. The caller adds the hosts.
latte_args() {
  LATTE_ARGS=(run "$BENCH_DIR/latte/ycsb.rn" -f "$1" -q -t 2 -p $(($2 / 2)) -d "${3}s"
    --consistency ONE --retries 0 -P rows="$4" -o "$5")
}

# start_loaded_server SERVER PORT RECORDS [CASSANDRA_STORAGE_PORT]: starts
# SERVER with `kvperf server start` in $LOG_DIR/SERVER-data (DATA), stops it
# when the script exits, and loads RECORDS records that the server's own
# tools read too: 1 field of 1 KB, keys user000000000000.. (zero-padded to
# 12 digits, as redis-benchmark's __rand_int__ and pgbench's lpad); for
# Cassandra latte's user0..userN-1, read uniformly, the load then settled.
# Sets PROPS, the -p flags that reach those records; for PostgreSQL also
# PGBENCH_READ, pgbench's script reading one of them by the same key.
start_loaded_server() {
  local start=()
  DATA=$LOG_DIR/$1-data
  PROPS=(-p "$1.port=$2" -p recordcount="$3" -p fieldcount=1 -p fieldlength=1024
    -p insertorder=ordered)
  if [ "$1" = cassandra ]; then
    PROPS+=(-p requestdistribution=uniform)
    start=(-p cassandra_storage_port="${4:-17011}")
  else
    PROPS+=(-p zeropadding=12)
  fi
  "$KVPERF" server start "$1" --dir "$DATA" --port "$2" "${start[@]}" >&2
  STARTED_SERVER=$1
  trap '"$KVPERF" server stop "$STARTED_SERVER" --dir "$DATA" >&2 || true' EXIT
  "$KVPERF" load --engine "$1" "${PROPS[@]}" -P "$WORKLOADS_DIR/workloada" --fresh -threads 8 \
    >"$LOG_DIR/load.txt" 2>&1
  if [ "$1" = cassandra ]; then
    "$KVPERF" settle --engine cassandra "${PROPS[@]}" >"$LOG_DIR/settle.txt" 2>&1
  fi
  if [ "$1" = postgres ]; then
    PGBENCH_READ=$LOG_DIR/pgbench-read.sql
    printf '\\set k random(0, :keys - 1)\nSELECT * FROM usertable WHERE ycsb_key = %s;\n' \
      "'user' || lpad(:k, 12, '0')" >"$PGBENCH_READ"
  fi
}

# Resolves YCSB's jars and our binding (bench/ycsb-java-setup.sh); sets YCSB_LIB.
ycsb_java_setup() {
  local rc=0
  YCSB_LIB=$("$BENCH_DIR/ycsb-java-setup.sh") || rc=$?
  [ "$rc" = 0 ] || exit "$rc"
}

# Makes a fresh directory for this run's raw outputs; sets LOG_DIR.
new_log_dir() { # $1 script name
  LOG_DIR=$BENCH_CACHE/logs/$1-$(date +%Y%m%d-%H%M%S)
  mkdir -p "$LOG_DIR"
  echo "# raw outputs in $LOG_DIR" >&2
}

# One line describing the tools, for the top of a report.
versions() {
  local java_version
  java_version=$(java -version 2>&1 | head -n 1)
  echo "$("$KVPERF" --version | head -n 1); YCSB 0.17.0 on ${java_version}; $(nproc) cores"
}

# run_phase LOG COMMAND...: runs one benchmark phase with all its output in LOG.
# Fails (with the log's tail on stderr) unless the command succeeded, printed
# a YCSB summary with a non-zero throughput, and no binding failed to start
# (YCSB Java reports a DBException from init() and still exits 0); a failed
# phase's LOG is renamed *.FAILED.txt. Warns about any Return= other than OK.
run_phase() {
  local log=$1 rc=0 bad
  shift
  echo "# $(date +%T) $(basename "$log" .txt)" >&2
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" != 0 ] || ! positive_throughput "$log" || grep -q '^site\.ycsb\.DBException' "$log"; then
    mv -f "$log" "${log%.txt}.FAILED.txt"   # so tables show "-" for this phase
    echo "error: $(basename "$log" .txt) failed (exit $rc); last lines of ${log%.txt}.FAILED.txt:" >&2
    grep -v '^[[:space:]]*at ' "${log%.txt}.FAILED.txt" | tail -n 15 >&2
    return 1
  fi
  bad=$(non_ok_returns "$log")
  if [ -n "$bad" ]; then echo "warning: $(basename "$log" .txt): $bad" >&2; fi
}

# ycsb_value FILE GROUP METRIC: the value of the line "[GROUP], METRIC, value"
# of a YCSB summary (YCSB Java and kvperf print the same format); empty if absent.
ycsb_value() {
  awk -F', ' -v g="[$2]" -v m="$3" '$1 == g && $2 == m { v = $3 } END { print v }' "$1" 2>/dev/null || true
}
throughput() { ycsb_value "$1" OVERALL 'Throughput(ops/sec)'; }
positive_throughput() { awk -v x="$(throughput "$1")" 'BEGIN { exit !(x + 0 > 0) }'; }
p99_us() { ycsb_value "$1" "$2" '99thPercentileLatency(us)'; }

# Counts of every Return= other than OK, e.g. "[READ] NOT_FOUND=3; [UPDATE] ERROR=1".
non_ok_returns() {
  awk -F', ' '$2 ~ /^Return=/ && $2 != "Return=OK" && $3 > 0 {
    printf "%s%s %s=%s", sep, $1, substr($2, 8), $3; sep = "; " }' "$1"
}

# ratio A B: A/B with 2 decimals; "-" if either is missing or B is 0.
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'
}

# A whole number for a table cell; "-" if missing.
num() {
  awk -v x="$1" 'BEGIN { if (x == "") print "-"; else printf "%.0f\n", x }'
}

# awk functions (POSIX awk; Debian's default mawk has no asort) over a
# space-separated list of numbers: median, lo (min),
# hi (max), and add(ARR, KEY, V) to append V to ARR[KEY]. Use as
# awk "$AWK_STATS"'  ...program... '
AWK_STATS='
  function sorted(list, a,   n, i, j, v) { n = split(list, a, " ")
    for (i = 2; i <= n; i++) { v = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
    return n }
  function median(list,   a, n) { n = sorted(list, a); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function lo(list,   a) { sorted(list, a); return a[1] }
  function hi(list,   a, n) { n = sorted(list, a); return a[n] }
  function add(arr, key, v) { if (v != "") arr[key] = (key in arr) ? arr[key] " " v : v }
  # judge(base, new, better): `kvperf verdict` over two lists of repeats (awk -v kvperf=BIN):
  # "1.23x [1.05x, 1.40x] at 96.8%: faster", "~", or "need >= 4 repeats".
  function judge(base, new, better,   cmd, line) {
    if (kvperf == "" || base == "" || new == "") return "-"
    cmd = kvperf " verdict --better " better " --base \"" base "\" --new \"" new "\""
    line = "-"; cmd | getline line; close(cmd); sub(/^new\/base /, "", line); return line }
'

# bench_ops_per_sec LOG NAME: db_bench's (and `kvperf bench`'s) ops/s of
# benchmark NAME, from "<name> : <x> micros/op <ops> ops/sec ..."; the last
# such line of a benchmark is the measured one.
bench_ops_per_sec() {
  awk -v n="$2" '$1 == n && $2 == ":" && $6 == "ops/sec" { v = $5 } END { print v }' "$1" 2>/dev/null || true
}

# md_row CELL...: one markdown table row.
md_row() {
  local row="|" cell
  for cell in "$@"; do row+=" $cell |"; done
  echo "$row"
}
