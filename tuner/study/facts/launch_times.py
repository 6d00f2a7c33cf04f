"""What a launch costs, from the stored launches: seconds to healthy and seconds after.

The cost plan (tuner/study/facts/plan.py) turns launches into hours with these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tuner.storage import LaunchRow, LaunchStatus
from tuner.study.attrs import SCREEN
from tuner.study.facts.load_costs import LoadCosts, load_costs


@dataclass(frozen=True)
class LaunchTimes:
    """What a launch costs, from the stored launches: means in seconds (None: not timed)."""

    launches: int
    healthy_s: float | None
    """Start to healthy: the model load."""
    rest_s: float | None
    """Healthy to stopped: the benchmark rounds and the server's stop."""

    @property
    def per_launch_s(self) -> float | None:
        if self.healthy_s is None or self.rest_s is None:
            return None
        return self.healthy_s + self.rest_s


def _no_times() -> LaunchTimes:
    return LaunchTimes(0, None, None)


@dataclass(frozen=True)
class LaunchCosts:
    """A study's time: seconds spent on launches so far, and a launch's cost per fidelity."""

    spent_s: float = 0.0
    """Start to stop of every finished launch, failed ones included."""
    full: LaunchTimes = field(default_factory=_no_times)
    screen: LaunchTimes = field(default_factory=_no_times)
    loads: LoadCosts = field(default_factory=LoadCosts)
    """Each fidelity's load split into its phases, from the servers' logs."""


def launch_costs(rows: Sequence[LaunchRow]) -> LaunchCosts:
    """The study's time from its launches (see ``LaunchCosts``)."""
    spent = sum(
        (row.finished_at - row.started_at).total_seconds()
        for row in rows
        if row.finished_at is not None and row.started_at is not None
    )
    return LaunchCosts(
        spent_s=spent,
        full=launch_times([r for r in rows if r.fidelity != SCREEN]),
        screen=launch_times([r for r in rows if r.fidelity == SCREEN]),
        loads=load_costs(rows),
    )


def launch_times(rows: Sequence[LaunchRow]) -> LaunchTimes:
    """Mean seconds to healthy and to stopped over the measured launches among ``rows``."""
    healthy: list[float] = []
    rest: list[float] = []
    for row in rows:
        if row.status not in (LaunchStatus.COMPLETE, LaunchStatus.PRUNED):
            continue
        if row.seconds_to_healthy is None or row.finished_at is None:
            continue
        total = (row.finished_at - row.started_at).total_seconds()
        healthy.append(row.seconds_to_healthy)
        rest.append(max(0.0, total - row.seconds_to_healthy))
    if not healthy:
        return LaunchTimes(0, None, None)
    return LaunchTimes(len(healthy), sum(healthy) / len(healthy), sum(rest) / len(rest))
