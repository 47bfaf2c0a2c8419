#!/usr/bin/env bash
# Start a single-node Slurm cluster on this machine (munge, slurmctld, slurmd; no cgroups), for the Slurm
# integration test (tests/sweep/test_store_slurm.py). Debian/Ubuntu: needs `apt-get install -y slurm-wlm munge` and root.
# Usage: bash .ci/slurm_local.sh [start|stop]. Prints "slurm up" when sinfo shows the node idle.
set -euo pipefail
action="${1:-start}"
conf=/etc/slurm/slurm.conf
node="$(hostname -s)"
if [ "$action" = stop ]; then
  for p in /run/slurmd.pid /run/slurmctld.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true; done
  exit 0
fi
command -v slurmctld >/dev/null || { echo "slurm_local: slurmctld not installed (apt-get install -y slurm-wlm munge)"; exit 1; }
if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mix)'; then echo "slurm up (already running)"; exit 0; fi
marker="# written by dganalysis .ci/slurm_local.sh"
if [ -f "$conf" ] && ! grep -qF "$marker" "$conf"; then
  echo "slurm_local: $conf exists and is not ours; not overwriting it"; exit 1
fi
cpus="$(nproc)"
mem_mb="$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)"
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat > "$conf" <<CONF
$marker
ClusterName=dgalocal
SlurmctldHost=${node}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
KillWait=2
MinJobAge=300
NodeName=${node} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem_mb} State=UNKNOWN
PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
printf "CgroupPlugin=autodetect\nCgroupMountpoint=/sys/fs/cgroup\nConstrainCores=no\nConstrainRAMSpace=no\nConstrainDevices=no\n" > /etc/slurm/cgroup.conf
chown munge:munge /run/munge 2>/dev/null || true
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged || /usr/sbin/munged --force
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 1 30); do
  if sinfo -h -o %T 2>/dev/null | grep -qE '^idle'; then echo "slurm up: $(sinfo -h -o '%P %D %T %C')"; exit 0; fi
  sleep 1
done
echo "slurm_local: the node did not come up; last log lines:"
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log 2>/dev/null || true
exit 1
