#!/usr/bin/env bash
# Prints the path of sushy-static (OpenStack's sushy-tools, from PyPI), the
# Redfish service tests/bmc.rs reads power from, installing it first into
# a virtualenv in the cache outside the clone (KVPERF_CACHE, default
# ~/.cache/kvperf) when it is not there yet (about 20 s). Exit 3 when the
# install fails, with pip's last lines on stderr.
#
#   scripts/sushy-tools.sh          # install if needed, print the path
#   scripts/sushy-tools.sh cached   # print the path if installed, else exit 1
set -euo pipefail

version=2.2.0
dir=${KVPERF_CACHE:-${HOME:-/root}/.cache/kvperf}/sushy-tools-$version
bin=$dir/bin/sushy-static
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
[ "${1:-}" = cached ] && exit 1
mkdir -p "$(dirname "$dir")"
# One install at a time; a second caller waits and finds it done.
exec 9>"$dir.lock"
flock 9
if [ ! -x "$bin" ]; then
  # A virtualenv's scripts name its directory, so it is made in place; a
  # failed install is removed whole and `bin` appears only at the end.
  log=$dir.log
  rm -rf "$dir"
  if ! { python3 -m venv "$dir" && "$dir/bin/pip" install --quiet "sushy-tools==$version"; } >"$log" 2>&1 \
      || [ ! -x "$bin" ]; then
    echo "kvperf: installing sushy-tools $version failed:" >&2
    tail -5 "$log" >&2
    rm -rf "$dir"
    exit 3
  fi
  rm -f "$log"
fi
echo "$bin"
