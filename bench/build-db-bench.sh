#!/usr/bin/env bash
# Builds a release db_bench from exactly the RocksDB source that kvperf links:
# the copy bundled in the librocksdb-sys crate pinned by Cargo.lock. Prints the
# binary's path on its last line; everything else goes to stderr.
#
#   bench/build-db-bench.sh          # idempotent; instant when already built
#
# Env vars (defaults):
#   DB_BENCH_CACHE=~/.cache/kvperf/db_bench   output: <cache>/<crate version>/{src,build,db_bench}
#   DB_BENCH_PORTABLE=<derived>               RocksDB's cmake PORTABLE: 1 = baseline x86-64
#                                             (no -march), or a CPU name for -march=<name>.
#                                             Derived from target-cpu in RUSTFLAGS, else 1.
#   DB_BENCH_JOBS=2                           parallel compile jobs (run under nice -n 19)
#   CARGO_HOME=~/.cargo                       where the crate sources live (run `cargo fetch` first)
#
# Fairness: librocksdb-sys (build.rs) compiles RocksDB with cc at the cargo
# profile's opt level (-O3 for release) and -march=x86-64 -msse2 -std=c++20
# -DNDEBUG -DHAVE_UINT128_EXTENSION -DHAVE_ALIGNED_NEW: no -march=native, so
# software CRC32C (it passes -march=<cpu> only when RUSTFLAGS has
# -Ctarget-cpu=<cpu>). We build the same way: CMAKE_BUILD_TYPE=Release
# (-O3 -DNDEBUG, no assertions), PORTABLE as above, the two defines RocksDB's
# CMake forgets (its Makefile and the crate set them), and not the two the
# crate does not set (ROCKSDB_MALLOC_USABLE_SIZE, ROCKSDB_PTHREAD_ADAPTIVE_MUTEX);
# static library; no io_uring and no jemalloc (the crate enables neither by
# default); snappy, lz4, zstd, zlib and bzip2 (the rocksdb crate's default
# features). Differences that remain: the crate builds the compression
# libraries from its own sources (snappy bundled, lz4 1.10.0, zstd 1.5.7),
# db_bench uses Debian's (snappy 1.1.9, lz4 1.9.4, zstd 1.5.4, zlib 1.2.13);
# RocksDB's CMake adds -fno-rtti, -fno-builtin-memcmp and
# -momit-leaf-frame-pointer, and links an executable instead of -fPIC code.
set -euo pipefail

die() { echo "error: build-db-bench: $*" >&2; exit 2; }

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
LOCK=$REPO/Cargo.lock
JOBS=${DB_BENCH_JOBS:-2}

[ -f "$LOCK" ] || die "no Cargo.lock at $LOCK"
VERSION=$(awk '/^name = "librocksdb-sys"$/ { getline; gsub(/^version = "|"$/, ""); print; exit }' "$LOCK")
[ -n "$VERSION" ] || die "librocksdb-sys not found in $LOCK (is the rocksdb feature gone?)"
ROCKSDB_VERSION=${VERSION#*+}

CRATE_DIR=
for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"librocksdb-sys-$VERSION"; do
  [ -f "$d/rocksdb/CMakeLists.txt" ] && { CRATE_DIR=$d; break; }
done
[ -n "$CRATE_DIR" ] || die "source of librocksdb-sys $VERSION not in ${CARGO_HOME:-$HOME/.cargo}/registry/src; run 'cargo fetch' in $REPO"

if [ -n "${DB_BENCH_PORTABLE:-}" ]; then
  PORTABLE=$DB_BENCH_PORTABLE
else
  PORTABLE=$(printf '%s\n' "${RUSTFLAGS:-}" | sed -n 's/.*target-cpu=\([^ ]*\).*/\1/p')
  PORTABLE=${PORTABLE:-1}
fi

OUT=${DB_BENCH_CACHE:-$HOME/.cache/kvperf/db_bench}/$VERSION
SRC=$OUT/src
BUILD=$OUT/build
BIN=$OUT/db_bench

CMAKE_ARGS=(
  -DCMAKE_BUILD_TYPE=Release
  -DPORTABLE="$PORTABLE"
  -DROCKSDB_BUILD_SHARED=OFF
  -DWITH_GFLAGS=ON
  -DWITH_SNAPPY=ON -DWITH_LZ4=ON -DWITH_ZSTD=ON -DWITH_ZLIB=ON -DWITH_BZ2=ON
  -DWITH_LIBURING=OFF -DWITH_JEMALLOC=OFF
  -DWITH_TESTS=OFF -DWITH_BENCHMARK_TOOLS=ON
  -DWITH_TOOLS=OFF -DWITH_CORE_TOOLS=OFF -DWITH_TRACE_TOOLS=OFF
  -DFAIL_ON_WARNINGS=OFF
  "-DCMAKE_CXX_FLAGS=-DHAVE_UINT128_EXTENSION -DHAVE_ALIGNED_NEW"
  -DHAVE_MALLOC_USABLE_SIZE=OFF -DHAVE_PTHREAD_MUTEX_ADAPTIVE_NP=OFF
)
STAMP_TEXT="librocksdb-sys $VERSION; cmake ${CMAKE_ARGS[*]}"

if [ -x "$BIN" ] && [ "$(cat "$OUT/build.stamp" 2>/dev/null)" = "$STAMP_TEXT" ]; then
  echo "$BIN"
  exit 0
fi

command -v cmake >/dev/null 2>&1 || die "cmake not found (apt-get install cmake)"
command -v g++ >/dev/null 2>&1 || command -v c++ >/dev/null 2>&1 || die "no C++ compiler (apt-get install g++)"

# Debian/Ubuntu: install the compression and gflags dev packages that are missing.
PKGS="libsnappy-dev liblz4-dev libzstd-dev libgflags-dev zlib1g-dev libbz2-dev"
if command -v dpkg-query >/dev/null 2>&1; then
  MISSING=
  for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || MISSING="$MISSING $p"
  done
  if [ -n "$MISSING" ]; then
    SUDO=
    if [ "$(id -u)" != 0 ]; then
      sudo -n true 2>/dev/null || die "missing packages:$MISSING (install them with apt-get, or run as root)"
      SUDO="sudo -n"
    fi
    echo "# build-db-bench: installing$MISSING" >&2
    { $SUDO apt-get install -y --no-install-recommends $MISSING >&2 ||
      { $SUDO apt-get update >&2 && $SUDO apt-get install -y --no-install-recommends $MISSING >&2; }; } ||
      die "apt-get install$MISSING failed"
  fi
fi

mkdir -p "$OUT"

# A private copy of the bundled source, so the build never writes near the registry.
if [ ! -f "$SRC/.copied" ]; then
  echo "# build-db-bench: copying $CRATE_DIR/rocksdb to $SRC" >&2
  rm -rf "$SRC" "$SRC.tmp"
  cp -a "$CRATE_DIR/rocksdb" "$SRC.tmp" || die "could not copy the source to $SRC"
  mv "$SRC.tmp" "$SRC"
  echo "$CRATE_DIR" > "$SRC/.copied"
fi

echo "# build-db-bench: RocksDB $ROCKSDB_VERSION, PORTABLE=$PORTABLE, $JOBS jobs; log in $OUT/build.log" >&2
START=$(date +%s)
# A build directory configured with other flags is thrown away, so stale cache
# entries cannot leak into this build; an interrupted build with the same
# flags is resumed.
if [ -d "$BUILD" ] && [ "$(cat "$BUILD/kvperf-config.txt" 2>/dev/null)" != "$STAMP_TEXT" ]; then
  rm -rf "$BUILD"
fi
{
  nice -n 19 cmake -S "$SRC" -B "$BUILD" "${CMAKE_ARGS[@]}" &&
  echo "$STAMP_TEXT" > "$BUILD/kvperf-config.txt" &&
  nice -n 19 cmake --build "$BUILD" --target db_bench -j "$JOBS"
} >"$OUT/build.log" 2>&1 || {
  tail -n 25 "$OUT/build.log" >&2
  die "cmake build failed (full log: $OUT/build.log)"
}
[ -x "$BUILD/db_bench" ] || die "build finished but $BUILD/db_bench is missing (log: $OUT/build.log)"

# Refuse a build with assertions: db_bench prints this warning when NDEBUG is unset.
if "$BUILD/db_bench" --benchmarks=fillseq --num=10 --db="$OUT/smoke-db" 2>&1 | grep -q 'Assertions are enabled'; then
  rm -rf "$OUT/smoke-db"
  die "$BUILD/db_bench was built with assertions enabled"
fi
rm -rf "$OUT/smoke-db"

cp -f "$BUILD/db_bench" "$BIN.tmp" && mv -f "$BIN.tmp" "$BIN"
echo "$STAMP_TEXT" > "$OUT/build.stamp"
echo "# build-db-bench: built in $(( $(date +%s) - START )) s" >&2
echo "$BIN"
