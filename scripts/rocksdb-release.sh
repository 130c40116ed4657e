#!/usr/bin/env bash
# RocksDB's own release build of librocksdb, from Maven Central's
# org.rocksdb:rocksdbjni:<version>:jar:linux64 (the x86-64 library of the
# Java binding, which also exports RocksDB's whole C API).
#
#   scripts/rocksdb-release.sh [VERSION]    # prints the directory holding librocksdb.so
#   . scripts/rocksdb-release.sh --export   # sets ROCKSDB_LIB_DIR for cargo (or, with
#                                           # KVPERF_ROCKSDB=source, unsets it) and
#                                           # KVPERF_DEFAULT_TARGET_DIR, the build cache
#                                           # for that build
#
# The jar is fetched with Maven, checked against the SHA-256 pinned below, and
# its librocksdbjni-linux64.so is kept as $KVPERF_CACHE/rocksdb/<version>/librocksdb.so
# (KVPERF_CACHE defaults to ~/.cache/kvperf), once; later calls only print the path.
# VERSION defaults to the release whose C headers the pinned librocksdb-sys
# crate bundles (Cargo.lock: librocksdb-sys 0.17.3+10.4.2), so the Rust
# bindings and the library match exactly.
#
# KVPERF_ROCKSDB=release (default) links that library; KVPERF_ROCKSDB=source
# builds RocksDB from the crate's bundled sources instead (about 20 minutes on
# 2 cores; for your own compiler flags or a patched RocksDB).

# The release kvperf's bindings were generated from (librocksdb-sys 0.17.3+10.4.2).
KVPERF_ROCKSDB_BINDINGS_VERSION=10.4.2

# SHA-256 of each rocksdbjni linux64 jar kvperf accepts, checked after every
# fetch. A version not listed here is refused (add its line, and the version
# to KVPERF_ROCKSDB_RELEASES, after checking it).
rocksdb_release_sha256() {
  case "$1" in
    10.2.1) echo 6c7ad6bbeb0b15abeac117ce2f4281244ac273b2793100917fbc5c253297de6f ;;
    10.4.2) echo 34a9b9ab5bdb128c058363d72a83ab5d0a498a97df9cf1291f1a6e9260bb70b1 ;;
    *) return 1 ;;
  esac
}

KVPERF_ROCKSDB_RELEASES="10.2.1 10.4.2"

# Whether $1, where a release's library goes, is free for it: absent. A
# release is put there whole, by one rename, so an unfinished fetch never
# leaves anything at $1: whatever is there and is no finished release
# (a user's notes, a file named as one of the release's) is not kvperf's
# and is never removed (pass 12 removed a user's directory named SOURCE,
# pass 13 a user's plain file of that name).
rocksdb_release_dir_is_free() {
  local dir=$1
  if [ -e "$dir" ] || [ -L "$dir" ]; then
    echo "kvperf: '$dir' is there but holds no finished RocksDB release, and kvperf did not make it (it puts each release there whole, by one rename); move it away (an older kvperf's fetch cut short may be removed), kvperf keeps that release's library there" >&2
    return 1
  fi
}

# Prints the directory holding librocksdb.so of release $1, fetching it first
# when it is not cached. Messages go to stderr; returns non-zero on failure.
rocksdb_release_dir() {
  local version=$1 want cache dir tmp jar got log
  if ! want=$(rocksdb_release_sha256 "$version"); then
    echo "kvperf: RocksDB release '$version' has no pinned checksum in scripts/rocksdb-release.sh; known: $KVPERF_ROCKSDB_RELEASES" >&2
    return 2
  fi
  cache=${KVPERF_CACHE:-${HOME:-/root}/.cache/kvperf}/rocksdb
  dir=$cache/$version
  if [ -f "$dir/.complete" ] && [ -f "$dir/librocksdb.so" ]; then
    echo "$dir"
    return 0
  fi
  for tool in mvn unzip sha256sum flock; do
    command -v "$tool" >/dev/null 2>&1 || { echo "kvperf: '$tool' is needed to fetch RocksDB $version (scripts/ensure-deps.sh installs it)" >&2; return 2; }
  done
  mkdir -p "$cache" || return 3
  (
    # One fetch at a time per cache; a second caller waits and finds it
    # done. The lock is opened to append (never truncated) and only as a
    # regular file of its own: a link there led to a user's file, emptied.
    lock=$cache/.$version.lock
    if [ -L "$lock" ] || { [ -e "$lock" ] && [ ! -f "$lock" ]; }; then
      echo "kvperf: '$lock' is not kvperf's lock file (a link, or not a file); move it away" >&2
      exit 2
    fi
    exec 9>>"$lock"
    flock 9
    if [ -f "$dir/.complete" ] && [ -f "$dir/librocksdb.so" ]; then exit 0; fi
    rocksdb_release_dir_is_free "$dir" || exit 2
    tmp=$(mktemp -d "$cache/.fetch-$version.XXXXXX") || exit 3
    trap 'rm -rf "$tmp"' EXIT
    # A new file each time (mktemp creates it exclusively), kept only when
    # the fetch fails: a link at a fixed name led to a user's file.
    log=$(mktemp "$cache/$version-fetch-XXXXXX.log") || exit 3
    echo "kvperf: fetching RocksDB $version's release library (org.rocksdb:rocksdbjni:$version:jar:linux64) with Maven" >&2
    if ! mvn -B -q -Dstyle.color=never dependency:copy \
        -Dartifact="org.rocksdb:rocksdbjni:$version:jar:linux64" \
        -DoutputDirectory="$tmp" >"$log" 2>&1; then
      tail -n 20 "$log" >&2
      echo "kvperf: Maven could not fetch org.rocksdb:rocksdbjni:$version:jar:linux64 (log: $log)" >&2
      exit 3
    fi
    rm -f "$log"
    jar=$tmp/rocksdbjni-$version-linux64.jar
    got=$(sha256sum "$jar" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
      echo "kvperf: rocksdbjni-$version-linux64.jar has SHA-256 $got, not the pinned $want; not used" >&2
      exit 3
    fi
    unzip -q -o "$jar" librocksdbjni-linux64.so -d "$tmp" || exit 3
    mkdir -p "$tmp/lib"
    mv "$tmp/librocksdbjni-linux64.so" "$tmp/lib/librocksdb.so"
    echo "$want  rocksdbjni-$version-linux64.jar" >"$tmp/lib/SOURCE"
    touch "$tmp/lib/.complete"
    # The directory appears whole or not at all; mv -n replaces nothing
    # (RENAME_NOREPLACE: a user's directory made meanwhile, even empty).
    mv -nT "$tmp/lib" "$dir"
    if [ -e "$tmp/lib" ]; then
      echo "kvperf: something was put at '$dir' while RocksDB $version was fetched; left as it is" >&2
      exit 3
    fi
  ) || return $?
  echo "$dir"
}

if [ "${1:-}" = "--export" ]; then
  # Sourced by scripts/quickstart.sh, scripts/test.sh and bench scripts.
  case "${KVPERF_ROCKSDB:-release}" in
    release)
      ROCKSDB_LIB_DIR=$(rocksdb_release_dir "$KVPERF_ROCKSDB_BINDINGS_VERSION") || exit $?
      export ROCKSDB_LIB_DIR
      unset ROCKSDB_STATIC
      KVPERF_DEFAULT_TARGET_DIR=${KVPERF_CACHE:-${HOME:-/root}/.cache/kvperf}/target
      echo "kvperf: linking RocksDB $KVPERF_ROCKSDB_BINDINGS_VERSION's release library ($ROCKSDB_LIB_DIR/librocksdb.so); KVPERF_ROCKSDB=source builds it from source" >&2
      ;;
    source)
      unset ROCKSDB_LIB_DIR ROCKSDB_STATIC
      # Its own build cache: switching builds in one would recompile RocksDB each time.
      KVPERF_DEFAULT_TARGET_DIR=${KVPERF_CACHE:-${HOME:-/root}/.cache/kvperf}/target-source
      echo "kvperf: building RocksDB from the librocksdb-sys crate's sources (KVPERF_ROCKSDB=source)" >&2
      ;;
    *)
      echo "kvperf: KVPERF_ROCKSDB must be 'release' or 'source', not '${KVPERF_ROCKSDB}'" >&2
      exit 2
      ;;
  esac
elif [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # Run as a command (kvperf runs it as `bash -c SCRIPT` for rocksdb.version).
  set -euo pipefail
  rocksdb_release_dir "${1:-$KVPERF_ROCKSDB_BINDINGS_VERSION}"
fi
