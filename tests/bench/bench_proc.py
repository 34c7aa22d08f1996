"""bench_proc.py: figures read from /proc: a process and its descendants, their CPU
time and RSS, the kernel's slab memory, and the CPU other jobs used during a run
(Noise). Standard library only."""
import os
import resource
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    return data[data.rindex(")") + 2:].split()  # fields from "state" (field 3) on


def proc_tree(pid):
    """pid and all its descendants (prefork children), by scanning /proc for ppid."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                parents[int(name)] = int(_stat_fields(name)[1])
            except (OSError, ValueError, IndexError):
                pass
    tree, frontier = [pid], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        tree += kids
        frontier += kids
    return tree


def cpu_seconds(pids):
    """utime + stime of the processes (all their threads, live and exited), plus
    cutime + cstime: the children they reaped. A process that exits during a run
    (a postgres backend whose client left) moves from the live sum into its
    parent's (the postmaster's) reaped sum instead of dropping out."""
    total = 0
    for pid in pids:
        try:
            f = _stat_fields(pid)
            total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
        except (OSError, IndexError, ValueError):
            pass
    return total / CLK_TCK


def rss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def host_busy_seconds():
    """CPU time the whole host spent busy (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / CLK_TCK


def children_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Noise:
    """CPU the host spent on anything but the server under test and our client
    during a run: other jobs on a shared machine. In cores (1.0 = one core)."""

    def __init__(self, cpu):
        self.cpu = cpu
        self.t = time.monotonic()
        self.host = host_busy_seconds()
        self.kids = children_cpu_seconds()
        self.ours = sum(cpu_seconds(f()) for f in cpu.values())

    def done(self, r):
        wall = time.monotonic() - self.t
        ours = sum(cpu_seconds(f()) for f in self.cpu.values()) - self.ours
        client = children_cpu_seconds() - self.kids
        foreign = host_busy_seconds() - self.host - ours - client
        r["client_cpu_s"] = client
        r["foreign_cpu_cores"] = max(0.0, foreign / wall) if wall > 0 else None
        r["loadavg1"] = float(open("/proc/loadavg").read().split()[0])


def slab_kib():
    """Kernel slab memory (socket structures live there, not in any process's RSS)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("Slab:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None
