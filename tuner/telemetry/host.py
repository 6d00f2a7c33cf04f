"""Host telemetry with psutil: the machine's CPU and a process tree's CPU and memory.

The tree is the server: its root pid and every descendant (vLLM starts an API
process, an engine core and one worker per GPU), found afresh each tick so
workers that appear late are counted and processes that vanish are skipped.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import psutil

from tuner.telemetry.sampler import PeriodicSampler

_MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class HostSample:
    """One host reading.

    ``host_cpu_pct`` is 0-100 over all CPUs; ``tree_cpu_pct`` is in percent of one CPU,
    summed over the tree (as ``top`` shows it: 800 means eight busy cores). CPU figures
    are None on the first reading, which only sets the baseline; tree figures are None
    when no root pid is watched or the root has exited.
    """

    time_s: float
    host_cpu_pct: float | None
    tree_cpu_pct: float | None
    tree_rss_mib: float | None
    tree_procs: int | None


@dataclass(frozen=True)
class HostSummary:
    """Host figures over a span of samples; None where no sample had the figure."""

    samples: int = 0
    host_cpu_mean_pct: float | None = None
    host_cpu_max_pct: float | None = None
    tree_cpu_mean_pct: float | None = None
    tree_cpu_max_pct: float | None = None
    tree_rss_max_mib: float | None = None
    tree_procs_max: int | None = None

    def to_dict(self) -> dict[str, float | int | None]:
        return dict(self.__dict__)


class HostSampler(PeriodicSampler[HostSample]):
    """Samples host CPU and, when ``root_pid`` is given, the CPU and RSS of its process tree."""

    thread_name = "tuner-host-sampler"

    def __init__(
        self,
        root_pid: int | None = None,
        *,
        interval_s: float = 1.0,
        max_samples: int = 100_000,
    ) -> None:
        super().__init__(interval_s, max_records=max_samples)
        self.root_pid = root_pid
        # psutil measures a process's CPU between two calls on the same Process object,
        # so the objects are kept across ticks, keyed by (pid, create time) against pid reuse.
        self._procs: dict[tuple[int, float], psutil.Process] = {}
        self._last_cpu: tuple[float, float] | None = None  # (busy, total) CPU seconds
        self._primed = False

    def _prime(self) -> None:
        self._last_cpu = _cpu_busy_total()

    def _read(self) -> Iterable[HostSample]:
        host = self._host_cpu_pct()
        cpu, rss, count = self._tree()
        first = not self._primed
        self._primed = True
        return [
            HostSample(
                time_s=time.time(),
                host_cpu_pct=None if first else host,
                tree_cpu_pct=None if first else cpu,
                tree_rss_mib=rss,
                tree_procs=count,
            )
        ]

    def _host_cpu_pct(self) -> float | None:
        # From cpu_times deltas kept here, not psutil.cpu_percent(), whose baseline is
        # module-global and would be moved by anyone else in the process calling it.
        now = _cpu_busy_total()
        last, self._last_cpu = self._last_cpu, now
        if last is None or now[1] <= last[1]:
            return None
        return max(0.0, min(100.0, 100.0 * (now[0] - last[0]) / (now[1] - last[1])))

    def _tree(self) -> tuple[float | None, float | None, int | None]:
        if self.root_pid is None:
            return None, None, None
        try:
            root = psutil.Process(self.root_pid)
            members = [root, *root.children(recursive=True)]
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            return None, None, None
        cpu = rss = 0.0
        count = 0
        seen: dict[tuple[int, float], psutil.Process] = {}
        for member in members:
            try:
                key = (member.pid, member.create_time())
                proc = self._procs.get(key, member)
                with proc.oneshot():
                    pct = proc.cpu_percent(interval=None)  # 0.0 on a process's first call
                    mem = proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                continue  # exited between listing and reading: it is simply not counted
            seen[key] = proc
            cpu += pct
            rss += mem
            count += 1
        self._procs = seen  # forget the processes that are gone
        return cpu, rss / _MIB, count


def _cpu_busy_total() -> tuple[float, float]:
    times = psutil.cpu_times()
    # Linux counts guest time inside user time too; psutil's own cpu_percent drops it.
    total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    idle = times.idle + getattr(times, "iowait", 0.0)
    return total - idle, total


def summarize_host(samples: Sequence[HostSample]) -> HostSummary:
    """Mean and max of each host figure over ``samples`` (e.g. one level's window)."""

    def values(name: str) -> list[float]:
        return [v for s in samples if (v := getattr(s, name)) is not None]

    def mean(xs: list[float]) -> float | None:
        return sum(xs) / len(xs) if xs else None

    host, tree, rss = values("host_cpu_pct"), values("tree_cpu_pct"), values("tree_rss_mib")
    procs = [s.tree_procs for s in samples if s.tree_procs is not None]
    return HostSummary(
        samples=len(samples),
        host_cpu_mean_pct=mean(host),
        host_cpu_max_pct=max(host, default=None),
        tree_cpu_mean_pct=mean(tree),
        tree_cpu_max_pct=max(tree, default=None),
        tree_rss_max_mib=max(rss, default=None),
        tree_procs_max=max(procs, default=None),
    )
