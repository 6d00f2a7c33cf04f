"""What would lower a plan's cost or its smallest confirmable gain: the levers, in figures.

Each lever is one change to the space file (more rounds, more requests, one more
confirmation or baseline launch, pinned cores, fewer values) with its figure worked out
by the same arithmetic as the plan (tuner/stats/power.py), and a sentence saying it
beside the what-if that computes it. ``pct_text`` and ``seconds_text`` word figures for
these sentences and for tuner/views/plan_text.py.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from tuner import stats
from tuner.space.spec import SpaceSpec
from tuner.stats.estimates import DEFAULT_PRIOR_REL_SD
from tuner.stats.power import DetectableGain, with_requests, with_rounds
from tuner.stats.wording import percent
from tuner.study.facts.launch_times import LaunchTimes


@dataclass(frozen=True)
class Lever:
    """One change that would lower the cost or the smallest confirmable gain."""

    change: str
    """What to change, as the space file says it: 'benchmark.rounds: 6'."""
    effect: str
    """What it does, in words with the figures."""
    gain: float | None = None
    """The smallest confirmable gain (now) after the change, where it moves it."""


def levers(
    spec: SpaceSpec,
    noise: stats.NoiseEstimate,
    times: LaunchTimes,
    now: DetectableGain,
    mde: Callable[..., DetectableGain],
    values: int,
    to_try_all: int,
) -> list[Lever]:
    stop, bench = spec.stop, spec.benchmark
    rounds = bench.rounds
    out: list[Lever] = []
    extra = f"; each launch about {seconds_text(times.rest_s)} longer" if times.rest_s else ""
    doubled = mde(with_rounds(noise, 2.0), 2 * rounds)
    out.append(
        Lever(
            f"benchmark.rounds: {2 * rounds}",
            _moves(now.gain, doubled.gain, "halves the within-launch variance of a launch mean")
            + extra,
            doubled.gain,
        )
    )
    if noise.within_var is not None:
        longer = mde(with_requests(noise, 2.0))
        out.append(
            Lever(
                f"benchmark.requests: {2 * bench.requests}",
                _moves(
                    now.gain,
                    longer.gain,
                    "a longer round halves one round's variance (if requests are what "
                    "scatter it), and the prior on restart noise follows it down to "
                    f"{percent(DEFAULT_PRIOR_REL_SD)}",
                )
                + extra,
                longer.gain,
            )
        )
    confirm = mde(dataclasses.replace(noise, dof=noise.dof + 1), k_candidate=2 + stop.confirmations)
    out.append(
        Lever(
            f"stop.confirmations: {stop.confirmations + 1}",
            f"{pct_text(now.gain)} -> {pct_text(confirm.gain)}, one more launch per candidate",
            confirm.gain,
        )
    )
    more_baseline = mde(
        dataclasses.replace(noise, dof=noise.dof + 1), k_baseline=stop.baseline_launches + 1
    )
    out.append(
        Lever(
            f"stop.baseline_launches: {stop.baseline_launches + 1}",
            f"{pct_text(now.gain)} -> {pct_text(more_baseline.gain)}, one more launch now",
            more_baseline.gain,
        )
    )
    if spec.server.cpus is None or bench.cpus is None:
        pins = (("server.cpus", spec.server.cpus), ("benchmark.cpus", bench.cpus))
        unset = [name for name, cpus in pins if cpus is None]
        out.append(
            Lever(
                ", ".join(unset),
                "pinned cores keep other work off the server and the client: both kinds of "
                "noise drop on a shared or CPU-bound host (not set)",
            )
        )
    if values:
        out.append(
            Lever(
                "fewer params or values",
                f"{values} values to try take {to_try_all} search trials at "
                f"{spec.search.max_changes} per launch before the model can clear them all",
            )
        )
    return out


def lowers(before: float, after: float) -> bool:
    """Whether a change lowers a gain enough to name: by 5% of it or more (less is noise
    in the arithmetic's inputs, not a lever worth a line)."""
    return after < 0.95 * before


def _moves(before: float, after: float, how: str) -> str:
    if lowers(before, after):
        return f"{how}: {pct_text(before)} -> {pct_text(after)}"
    return (
        f"hardly moves it ({pct_text(before)} -> {pct_text(after)}): between-launch noise "
        "dominates, and only more launches per configuration lower that"
    )


def pct_text(value: float) -> str:
    """A gain as the plan says it: 0.026 -> '2.6%'."""
    return "more than 1000%" if math.isinf(value) else f"{value * 100:.1f}%"


def seconds_text(value: float | None) -> str:
    """Seconds as the plan says them: '4.2 s', '42 s', '7 min'; '?' when not timed."""
    if value is None:
        return "?"
    if value >= 120:
        return f"{value / 60:.0f} min"
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"
