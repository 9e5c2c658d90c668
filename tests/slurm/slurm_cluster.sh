#!/usr/bin/env bash
# A real single-node Slurm cluster in a temporary directory, for the fleet tests.
#   tests/slurm/slurm_cluster.sh start DIR   munged + slurmctld + slurmd on 127.0.0.1, config in DIR;
#                                            waits until sinfo shows the node idle
#   tests/slurm/slurm_cluster.sh stop DIR    stops the daemons (by their pid files)
# After start, `export SLURM_CONF=DIR/etc/slurm.conf` points sbatch/squeue/sinfo at it.
# Nothing outside DIR is touched (no systemd, no /etc/slurm, no /run/munge).
# Exit status: 0 started/stopped; 77 the daemons cannot run here (the reason is printed
# on a line starting "SKIP:"); 1 anything else. A failed start stops what it started.
set -Eeuo pipefail
SKIP=77

die() { echo "slurm_cluster: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit $SKIP; }

pidof_file() { [ -s "$1" ] && cat "$1" 2>/dev/null || true; }

stop_daemon() { # pidfile name
  local pid
  pid=$(pidof_file "$1")
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "slurm_cluster: $2 ($pid) ignored SIGTERM, killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$1"
}

do_stop() {
  local d=$1
  # Jobs first: slurmd's steps (slurmstepd) outlive slurmd otherwise.
  if [ -f "$d/etc/slurm.conf" ] && [ -s "$d/run/slurmctld.pid" ]; then
    SLURM_CONF=$d/etc/slurm.conf timeout 5 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
  fi
  stop_daemon "$d/run/slurmd.pid" slurmd
  # slurmstepd processes of this cluster (their command line names our spool dir) that are left
  for pid in $(pgrep -f "slurmstepd.*" 2>/dev/null || true); do
    if tr '\0' ' ' < "/proc/$pid/environ" 2>/dev/null | grep -q "SLURM_CONF=$d/etc/slurm.conf"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  stop_daemon "$d/run/slurmctld.pid" slurmctld
  stop_daemon "$d/run/munged.pid" munged
}

free_port() {
  python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

do_start() {
  local d=$1
  [ "$(id -u)" = 0 ] || skip "the Slurm daemons need root here (slurmd starts jobs as their user); run as root"
  local m
  for m in munged slurmctld slurmd sbatch sinfo squeue scancel; do
    command -v "$m" >/dev/null || skip "$m not found (apt-get install slurm-wlm munge; tools/deps.sh test does it)"
  done
  mkdir -p "$d"
  d=$(cd "$d" && pwd)
  # anything unexpected below stops what was started
  trap 'rc=$?; trap - ERR; echo "slurm_cluster: start failed (line $LINENO)" >&2; do_stop "$d"; exit $rc' ERR
  do_stop "$d" # daemons of an earlier run in DIR that was killed before it could stop them
  chmod 0700 "$d"
  mkdir -p "$d"/{etc,munge,state,spool,log,run}
  chmod 0700 "$d/munge"

  # munged: own key, socket, pid, seed and log in DIR/munge.
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$d/munge/munge.key"
  if ! munged --force --key-file="$d/munge/munge.key" --socket="$d/munge/munge.sock" \
       --pid-file="$d/run/munged.pid" --seed-file="$d/munge/munged.seed" \
       --log-file="$d/log/munged.log" >"$d/log/munged.out" 2>&1; then
    cat "$d/log/munged.out" "$d/log/munged.log" 2>/dev/null >&2 || true
    do_stop "$d"
    skip "munged would not start here (its output is above)"
  fi
  for _ in $(seq 50); do [ -S "$d/munge/munge.sock" ] && break; sleep 0.1; done
  [ -S "$d/munge/munge.sock" ] || { do_stop "$d"; die "munged made no socket (see $d/log/munged.log)"; }

  # This host as the one node, with what slurmd measures.
  local host conf cpus mem ctl_port d_port
  host=$(hostname -s)
  conf=$(slurmd -C | head -n1)
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$conf")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$conf")
  [ -n "$cpus" ] && [ -n "$mem" ] || { do_stop "$d"; die "cannot read CPUs/RealMemory from 'slurmd -C': $conf"; }
  local topo
  topo=$(grep -o 'Boards=[0-9]* SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*' <<<"$conf" || true)
  ctl_port=$(free_port)
  d_port=$(free_port)
  while [ "$d_port" = "$ctl_port" ]; do d_port=$(free_port); done
  cat >"$d/etc/slurm.conf" <<CONF
# Written by tests/slurm/slurm_cluster.sh: one node (this host), everything under $d.
ClusterName=qktest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups (none delegated in a container, no systemd): processes tracked by
# parent pid, tasks bound to their CPUs with sched_setaffinity.
ProctrackType=proctrack/linuxproc
MailProg=/bin/true
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=3600
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
Waittime=0
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus $topo RealMemory=$mem State=UNKNOWN
PartitionName=qktest Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  : >"$d/etc/cgroup.conf"
  export SLURM_CONF=$d/etc/slurm.conf

  if ! slurmctld -f "$SLURM_CONF" -i >"$d/log/slurmctld.out" 2>&1; then
    cat "$d/log/slurmctld.out" "$d/log/slurmctld.log" 2>/dev/null >&2 || true
    do_stop "$d"
    die "slurmctld did not start (its log is above)"
  fi
  if ! slurmd -f "$SLURM_CONF" -N "$host" >"$d/log/slurmd.out" 2>&1; then
    cat "$d/log/slurmd.out" "$d/log/slurmd.log" 2>/dev/null >&2 || true
    do_stop "$d"
    die "slurmd did not start (its log is above)"
  fi
  local state=""
  for _ in $(seq 120); do
    state=$(sinfo -h -n "$host" -o '%T' 2>/dev/null | head -n1 || true)
    [ "$state" = idle ] && break
    sleep 0.5
  done
  if [ "$state" != idle ]; then
    echo "slurm_cluster: node $host is '${state:-unreachable}', not idle, after 60 s" >&2
    tail -n 30 "$d/log/slurmctld.log" "$d/log/slurmd.log" >&2 2>/dev/null || true
    do_stop "$d"
    die "the cluster did not come up"
  fi
  trap - ERR
  echo "slurm_cluster: up in $d (node $host: $cpus CPUs, ${mem} MB; SLURM_CONF=$SLURM_CONF)"
}

case "${1:-}" in
  start) [ $# = 2 ] || die "usage: $0 start|stop DIR"; do_start "$2" ;;
  stop) [ $# = 2 ] || die "usage: $0 start|stop DIR"; [ -d "$2" ] || exit 0; do_stop "$(cd "$2" && pwd)" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
