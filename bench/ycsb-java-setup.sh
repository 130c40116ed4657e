#!/usr/bin/env bash
# Prepares YCSB 0.17.0 (Java) for kvperf's side-by-side benchmarks and prints
# the directory to put on the classpath (`java -cp "$DIR/*" site.ycsb.Client ...`).
#
#   bench/ycsb-java-setup.sh            # idempotent; fast when already done
#
# Env vars (defaults):
#   BENCH_CACHE=~/.cache/kvperf/bench   everything lands here, never in the repo:
#                                       ycsb/pom.xml, ycsb/lib/*.jar, ycsb/m2 (maven's local repo)
#   ROCKSDBJNI_VERSION=10.2.1           org.rocksdb:rocksdbjni for our RocksDB binding
#
# What it does:
#   1. resolves site.ycsb:core:0.17.0 and org.rocksdb:rocksdbjni (with their
#      transitive jars: HdrHistogram, jackson-*-asl, htrace) from Maven Central with
#      `mvn dependency:copy-dependencies` on a generated pom;
#   2. compiles bench/java/src/kvperf/bench/RocksDBClient.java (our own site.ycsb.DB
#      for RocksDB; YCSB publishes no binding on Maven Central) into
#      ycsb/lib/kvperf-ycsb-rocksdb.jar, again whenever the source is newer.
# Only the classpath directory goes to stdout; progress goes to stderr.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BENCH_CACHE=${BENCH_CACHE:-$HOME/.cache/kvperf/bench}
ROCKSDBJNI_VERSION=${ROCKSDBJNI_VERSION:-10.2.1}
Y=$BENCH_CACHE/ycsb
LIB=$Y/lib
SRC=$HERE/java/src/kvperf/bench/RocksDBClient.java
JAR=$LIB/kvperf-ycsb-rocksdb.jar

for tool in java javac jar mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "error: '$tool' not found; install a JDK (17+) and Maven (e.g. apt-get install openjdk-17-jdk-headless maven)" >&2
    exit 2
  fi
done

mkdir -p "$Y"

# A version change must not leave the old rocksdbjni jar next to the new one.
if [ ! -f "$LIB/core-0.17.0.jar" ] || [ ! -f "$LIB/rocksdbjni-$ROCKSDBJNI_VERSION.jar" ]; then
  echo "# ycsb-java-setup: resolving jars from Maven Central into $LIB" >&2
  cat > "$Y/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kvperf.bench</groupId>
  <artifactId>ycsb-java-deps</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>site.ycsb</groupId><artifactId>core</artifactId><version>0.17.0</version></dependency>
    <dependency><groupId>org.rocksdb</groupId><artifactId>rocksdbjni</artifactId><version>$ROCKSDBJNI_VERSION</version></dependency>
  </dependencies>
</project>
POM
  rm -rf "$LIB"
  if ! (cd "$Y" && mvn -B -Dstyle.color=never -Dmaven.repo.local="$Y/m2" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIB") >"$Y/mvn.log" 2>&1; then
    tail -n 30 "$Y/mvn.log" >&2
    echo "error: maven could not resolve the jars (full log: $Y/mvn.log)" >&2
    exit 1
  fi
fi

if [ ! -f "$JAR" ] || [ "$SRC" -nt "$JAR" ]; then
  echo "# ycsb-java-setup: compiling $SRC" >&2
  rm -rf "$Y/classes"
  mkdir -p "$Y/classes"
  javac -nowarn --release 11 -cp "$LIB/*" -d "$Y/classes" "$SRC" >&2
  jar --create --file "$JAR.tmp" -C "$Y/classes" . >&2
  mv -f "$JAR.tmp" "$JAR"
fi

echo "$LIB"
