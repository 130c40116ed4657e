#!/usr/bin/env bash
# Prepares YCSB 0.17.0 (Java) with kvperf's Cassandra binding
# (bench/java/src/kvperf/bench/CassandraCQLClient.java) and prints the
# classpath to run it with (`java -cp "$(...)" site.ycsb.Client -db
# kvperf.bench.CassandraCQLClient ...`).
#
#   bench/ycsb-cassandra-setup.sh CASSANDRA_LIB   # idempotent; fast when already done
#
# CASSANDRA_LIB is the lib/ directory of the Cassandra the server runs from
# (`kvperf server start cassandra` puts cassandra-all and its dependencies in
# ~/.cache/kvperf/servers/cassandra-<version>/lib): the binding uses that
# directory's Java driver (cassandra-driver-core-*-shaded.jar, the driver
# cassandra-stress itself is built on), guava and slf4j.
#
# Env vars (defaults):
#   BENCH_CACHE=~/.cache/kvperf/bench   everything lands here, never in the repo:
#                                       ycsb-cassandra/pom.xml, lib/*.jar (site.ycsb:core and
#                                       its jars, from Maven Central), m2/, the compiled binding
# Only the classpath goes to stdout; progress goes to stderr. Exit 2 when a
# tool or the driver jar is missing.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BENCH_CACHE=${BENCH_CACHE:-$HOME/.cache/kvperf/bench}
Y=$BENCH_CACHE/ycsb-cassandra
LIB=$Y/lib
SRC=$HERE/java/src/kvperf/bench/CassandraCQLClient.java
JAR=$Y/kvperf-ycsb-cassandra.jar
CLIB=${1:-}

for tool in java javac jar mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "error: '$tool' not found; install a JDK (17+) and Maven (e.g. apt-get install openjdk-17-jdk-headless maven)" >&2
    exit 2
  fi
done
if [ -z "$CLIB" ] || [ ! -d "$CLIB" ]; then
  echo "error: usage: $0 CASSANDRA_LIB (the server's lib/ directory; got '${CLIB}')" >&2
  exit 2
fi
driver=$(ls "$CLIB"/cassandra-driver-core-*-shaded.jar 2>/dev/null | head -n 1 || true)
if [ -z "$driver" ]; then
  echo "error: no cassandra-driver-core-*-shaded.jar in $CLIB (the Java driver cassandra-all depends on)" >&2
  exit 2
fi
extra=()
for pattern in 'guava-[0-9]*.jar' 'failureaccess-*.jar' 'slf4j-api-*.jar'; do
  # shellcheck disable=SC2206  # the glob is meant to expand
  found=("$CLIB"/$pattern)
  if [ ! -f "${found[0]}" ]; then
    echo "error: no $pattern in $CLIB (the driver needs it)" >&2
    exit 2
  fi
  extra+=("${found[0]}")
done

mkdir -p "$Y"
if [ ! -f "$LIB/core-0.17.0.jar" ]; then
  echo "# ycsb-cassandra-setup: resolving site.ycsb:core:0.17.0 from Maven Central into $LIB" >&2
  cat > "$Y/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kvperf.bench</groupId>
  <artifactId>ycsb-cassandra-deps</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>site.ycsb</groupId><artifactId>core</artifactId><version>0.17.0</version></dependency>
  </dependencies>
</project>
POM
  rm -rf "$LIB"
  if ! (cd "$Y" && mvn -B -Dstyle.color=never -Dmaven.repo.local="$Y/m2" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIB") >"$Y/mvn.log" 2>&1; then
    tail -n 30 "$Y/mvn.log" >&2
    echo "error: maven could not resolve site.ycsb:core:0.17.0 (full log: $Y/mvn.log)" >&2
    exit 1
  fi
fi

# Recompile when the source or the driver changed.
stamp=$Y/driver.txt
if [ ! -f "$JAR" ] || [ "$SRC" -nt "$JAR" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$driver" ]; then
  echo "# ycsb-cassandra-setup: compiling $SRC against $(basename "$driver")" >&2
  rm -rf "$Y/classes"
  mkdir -p "$Y/classes"
  javac -nowarn --release 11 -cp "$LIB/*:$driver" -d "$Y/classes" "$SRC" >&2
  jar --create --file "$JAR.tmp" -C "$Y/classes" . >&2
  mv -f "$JAR.tmp" "$JAR"
  echo "$driver" >"$stamp"
fi

# YCSB's jars first (its HdrHistogram), then the binding, the driver and what it needs.
cp="$LIB/*:$JAR:$driver"
for j in "${extra[@]}"; do cp+=":$j"; done
echo "$cp"
