#!/usr/bin/env bash
# A real single-node Slurm cluster on this Debian machine, for trying the
# srun launcher and for the test suite (tests/slurm.rs). Run it as root:
#
#   scripts/slurm-single-node.sh          # install, configure, start; waits until `srun -N1 hostname` works
#   scripts/slurm-single-node.sh stop     # stops the daemons this script started
#   scripts/slurm-single-node.sh status   # one line: running or not
#
# What it does, each part only when needed (a second run is a no-op):
# - apt-get installs Debian's slurmctld, slurmd, slurm-client and munge
#   (with `apt-get update` first when apt knows none of them); services are
#   not started by the packages (policy-rc.d), this script starts them;
# - creates a munge key when there is none (an existing one is used as is);
# - writes /etc/slurm/slurm.conf for this host: one node named
#   `hostname -s` at 127.0.0.1, CPUs from nproc, RealMemory from
#   /proc/meminfo less headroom, one partition `debug`, select/cons_tres
#   with CR_CPU, proctrack/linuxproc and task/none (no cgroups needed), no
#   accounting; state in /var/spool/slurmctld and /var/spool/slurmd, logs in
#   /var/log/slurm. The file carries a marker line; a slurm.conf without it
#   is someone else's and is never touched: the script refuses instead;
# - starts munged, slurmctld and slurmd directly (they daemonize; no
#   systemd needed), records their pids in /run/kvperf-slurm, and waits
#   (bounded) until sinfo shows the node idle and `srun -N1 hostname` runs.
# Every failure is one line on stderr and a non-zero exit.
set -euo pipefail

MARKER="# kvperf-single-node: written by scripts/slurm-single-node.sh; it may rewrite or remove this file"
CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
STATE=/run/kvperf-slurm
LOGS=/var/log/slurm
WAIT=${SLURM_SETUP_WAIT:-60}     # seconds for each wait below
NODE=$(hostname -s)

die() { echo "slurm-single-node: $*" >&2; exit 1; }
say() { echo "slurm-single-node: $*" >&2; }

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { [ -s "$1" ] && tr -dc 0-9 <"$1" || true; }

# The pid of a running daemon, from its pid file, if the process is that
# daemon (a stale pid file whose number was reused does not count).
running() {
  local name=$1 file=$2 pid
  pid=$(pid_of "$file")
  alive "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] && echo "$pid"
}

munge_pidfile=/run/munge/munged.pid
ctld_pidfile=/run/slurmctld.pid
slurmd_pidfile=/run/slurmd.pid

stop() {
  [ -d "$STATE" ] || { say "nothing to stop (no $STATE)"; return 0; }
  # slurmd first, then the controller, then munge: the reverse of starting.
  local name pid
  for name in slurmd slurmctld munged; do
    [ -s "$STATE/$name.pid" ] || continue
    pid=$(pid_of "$STATE/$name.pid")
    if alive "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]; then
      kill "$pid"
      for _ in $(seq 1 $((WAIT * 5))); do alive "$pid" || break; sleep 0.2; done
      alive "$pid" && die "$name (pid $pid) did not stop within ${WAIT}s"
      say "stopped $name (pid $pid)"
    fi
    rm -f "$STATE/$name.pid"
  done
  rmdir "$STATE" 2>/dev/null || true
}

case "${1:-start}" in
  start) ;;
  stop) stop; exit 0 ;;
  status)
    if running slurmctld "$ctld_pidfile" >/dev/null && running slurmd "$slurmd_pidfile" >/dev/null; then
      echo "running: $(sinfo -h -N -n "$NODE" -o '%N %t %c CPUs' 2>/dev/null || echo 'sinfo failed')"
    else
      echo "not running"; exit 1
    fi
    exit 0 ;;
  *) die "usage: $0 [start|stop|status]" ;;
esac

[ "$(id -u)" -eq 0 ] || die "must run as root (it installs packages and starts munged, slurmctld and slurmd)"
command -v apt-get >/dev/null 2>&1 || die "needs apt-get (a Debian or Ubuntu machine)"
started_at=$(date +%s.%N)

# --- packages ---------------------------------------------------------------
missing=()
command -v munged >/dev/null 2>&1 || missing+=(munge)
command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
command -v srun >/dev/null 2>&1 || missing+=(slurm-client)
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-cache show "${missing[@]}" >/dev/null 2>&1; then
    apt-get update -qq || die "apt-get update failed"
  fi
  # The packages' maintainer scripts must not start the daemons
  # (unconfigured): this script starts them.
  . "$(dirname "$0")/apt-without-services.sh"
  say "installing ${missing[*]}"
  apt_install_without_services slurm-single-node -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
fi
id slurm >/dev/null 2>&1 || die "the slurm packages did not create the 'slurm' user"
id munge >/dev/null 2>&1 || die "the munge package did not create the 'munge' user"

# --- munge key --------------------------------------------------------------
if [ ! -s /etc/munge/munge.key ]; then
  install -d -m 700 -o munge -g munge /etc/munge
  if command -v mungekey >/dev/null 2>&1; then
    mungekey --create --keyfile=/etc/munge/munge.key >/dev/null || die "mungekey --create failed"
  else
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
  say "created a munge key in /etc/munge/munge.key"
fi

# --- slurm.conf -------------------------------------------------------------
if [ -e "$CONF" ] && ! grep -qxF "$MARKER" "$CONF"; then
  die "$CONF exists and was not written by this script (no marker line); refusing to touch it"
fi
cpus=$(nproc)
mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
# Headroom: slurmd refuses a node whose configured memory exceeds what it
# finds, and the OS needs some; keep 10% (at least 256 MB) back.
headroom=$(( mem_mb / 10 > 256 ? mem_mb / 10 : 256 ))
real_mem=$(( mem_mb - headroom ))
[ "$real_mem" -gt 0 ] || die "too little memory ($mem_mb MB) for a Slurm node"
conf=$(cat <<EOF
$MARKER
# A single-node cluster on $NODE for kvperf's srun launcher and its tests.
ClusterName=kvperf
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=slurm
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$ctld_pidfile
SlurmdPidFile=$slurmd_pidfile
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
MinJobAge=300
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_mem State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
)
install -d -m 755 "$CONF_DIR"
changed=no
if [ ! -e "$CONF" ] || [ "$(cat "$CONF")" != "$conf" ]; then
  printf '%s\n' "$conf" >"$CONF.tmp.$$"
  chmod 644 "$CONF.tmp.$$"
  mv "$CONF.tmp.$$" "$CONF"
  changed=yes
  say "wrote $CONF ($NODE: $cpus CPUs, RealMemory=$real_mem MB)"
fi

install -d -m 755 -o slurm -g slurm /var/spool/slurmctld "$LOGS"
install -d -m 755 /var/spool/slurmd
install -d -m 755 "$STATE"

# --- daemons ----------------------------------------------------------------
# A daemon this script started earlier is restarted when slurm.conf changed.
if [ "$changed" = yes ]; then
  for name in slurmd slurmctld; do
    pid=$(pid_of "$STATE/$name.pid")
    if alive "$pid"; then
      kill "$pid"
      for _ in $(seq 1 $((WAIT * 5))); do alive "$pid" || break; sleep 0.2; done
      alive "$pid" && die "$name (pid $pid) did not stop for the new slurm.conf"
      rm -f "$STATE/$name.pid"
    fi
  done
fi

wait_for_pidfile() { # name file
  local pid
  for _ in $(seq 1 $((WAIT * 5))); do
    pid=$(running "$1" "$2" || true)
    [ -n "$pid" ] && { echo "$pid"; return 0; }
    sleep 0.2
  done
  return 1
}

if pid=$(running munged "$munge_pidfile"); then
  :  # someone's munged (maybe ours from an earlier run) serves us
else
  install -d -m 755 -o munge -g munge /run/munge /var/log/munge /var/lib/munge
  runuser -u munge -- /usr/sbin/munged || die "munged did not start (see /var/log/munge/munged.log)"
  pid=$(wait_for_pidfile munged "$munge_pidfile") || die "munged wrote no pid file within ${WAIT}s (see /var/log/munge/munged.log)"
  echo "$pid" >"$STATE/munged.pid"
  say "started munged (pid $pid)"
fi
munge -n | unmunge >/dev/null 2>&1 || die "munge does not work (munge -n | unmunge failed; see /var/log/munge/munged.log)"

if ! pid=$(running slurmctld "$ctld_pidfile"); then
  /usr/sbin/slurmctld || die "slurmctld did not start (see $LOGS/slurmctld.log)"
  pid=$(wait_for_pidfile slurmctld "$ctld_pidfile") || die "slurmctld did not come up within ${WAIT}s (see $LOGS/slurmctld.log)"
  echo "$pid" >"$STATE/slurmctld.pid"
  say "started slurmctld (pid $pid)"
fi
if ! pid=$(running slurmd "$slurmd_pidfile"); then
  /usr/sbin/slurmd || die "slurmd did not start (see $LOGS/slurmd.log)"
  pid=$(wait_for_pidfile slurmd "$slurmd_pidfile") || die "slurmd did not come up within ${WAIT}s (see $LOGS/slurmd.log)"
  echo "$pid" >"$STATE/slurmd.pid"
  say "started slurmd (pid $pid)"
fi

# --- ready? -----------------------------------------------------------------
node_state=""
for _ in $(seq 1 $((WAIT * 2))); do
  node_state=$(sinfo -h -N -n "$NODE" -o %t 2>/dev/null | head -1 || true)
  [ "$node_state" = idle ] && break
  # A node left down or drained by an earlier run of this script's cluster.
  case "$node_state" in
    down*|drain*|drng*) scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true ;;
  esac
  sleep 0.5
done
[ "$node_state" = idle ] || die "node $NODE is '${node_state:-unknown}', not idle, after ${WAIT}s (see $LOGS/slurmctld.log and $LOGS/slurmd.log)"
out=$(timeout "$WAIT" srun -N1 -t 1 hostname 2>&1) || die "srun -N1 hostname failed: $(echo "$out" | tail -1)"
[ "$out" = "$NODE" ] || [ "$out" = "$(hostname)" ] || die "srun -N1 hostname printed '$out', not $NODE"
elapsed=$(awk -v a="$started_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
say "ready in ${elapsed}s: node $NODE idle, $cpus CPUs, srun works"
