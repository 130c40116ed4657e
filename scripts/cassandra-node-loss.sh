#!/usr/bin/env bash
# A 3-node Cassandra cluster (kvperf server start cassandra --nodes 3) under
# replication factor 3 loses one node (kill -9); YCSB A then runs at
# consistency ONE, QUORUM and ALL against the two that are left. ONE and
# QUORUM (2 of 3 replicas) must go on without a failed operation; at ALL
# every operation must fail, and kvperf's counts must say so.
#
#   scripts/cassandra-node-loss.sh            # about 10 minutes, 3 JVMs of 512 MiB heap
#
# Env: KVPERF (default ~/.cache/kvperf/target/release/kvperf), PORT (CQL,
# default 19142), STORAGE_PORT (default 17100), RECORDS (default 5000), OPS
# (per run, default 3000), WORK (scratch dir, default a new one under /var/tmp,
# removed at the end unless KEEP=1).
# Prints one line per consistency level: operations, failed, exit code, and
# PASS or FAIL; exits 1 when any expectation fails.
set -euo pipefail

KVPERF=${KVPERF:-$HOME/.cache/kvperf/target/release/kvperf}
PORT=${PORT:-19142}
export KVPERF_CASSANDRA_STORAGE_PORT=${STORAGE_PORT:-17100}
RECORDS=${RECORDS:-5000}
OPS=${OPS:-3000}
WORK=${WORK:-$(mktemp -d /var/tmp/kvperf-node-loss.XXXXXX)}
workloads=$(cd "$(dirname "$0")/.." && pwd)/workloads
[ -x "$KVPERF" ] || { echo "node-loss: no kvperf at $KVPERF (set KVPERF)" >&2; exit 2; }
mkdir -p "$WORK"
servers=$WORK/cluster
cleanup() {
  "$KVPERF" server stop cassandra --dir "$servers" >/dev/null 2>&1 || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

"$KVPERF" server start cassandra --nodes 3 --dir "$servers" --port "$PORT" -p cassandra_heap=512M >"$WORK/start.txt"
cat "$WORK/start.txt"
common=(--engine cassandra -P "$workloads/workloada" -p "recordcount=$RECORDS"
  -p cassandra.hosts=127.0.0.1,127.0.0.2,127.0.0.3 -p "cassandra.port=$PORT" -threads 4)
# Loaded at ALL, so every replica holds every record before a node goes.
"$KVPERF" load "${common[@]}" -p cassandra.replication_factor=3 -p cassandra.write_consistency=all \
  >"$WORK/load.txt" 2>"$WORK/load.err"

pid=$(cat "$servers/node3/cassandra.pid")
kill -9 "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
echo "killed node 3 (127.0.0.3, pid $pid)"

failed=0
for level in one quorum all; do
  set +e
  "$KVPERF" run "${common[@]}" -p "operationcount=$OPS" -p onerror=continue \
    -p "cassandra.read_consistency=$level" -p "cassandra.write_consistency=$level" \
    --format json --output "$WORK/run-$level.json" >"$WORK/run-$level.txt" 2>"$WORK/run-$level.err"
  code=$?
  set -e
  # Operations and failures as the result counts them, over every op type.
  read -r ops bad < <(python3 - "$WORK/run-$level.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["measurements"][-1]
returns = [o["returns"] for o in m["ops"].values()]
ops = sum(sum(r.values()) for r in returns)
bad = sum(n for r in returns for k, n in r.items() if k != "OK")
print(ops, bad)
PY
)
  case $level in
    all) [ "$ops" -gt 0 ] && [ "$bad" = "$ops" ] && verdict=PASS || verdict=FAIL ;;
    *) [ "$ops" -gt 0 ] && [ "$bad" = 0 ] && verdict=PASS || verdict=FAIL ;;
  esac
  [ "$verdict" = PASS ] || failed=1
  echo "consistency $level: $ops operations, $bad failed, kvperf exit $code: $verdict ($(tail -n 1 "$WORK/run-$level.err"))"
done
exit "$failed"
