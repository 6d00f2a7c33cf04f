"""The cost plan: what a study can confirm, and what a verdict will cost, said before it is spent.

After the baseline launches the study knows its noise (between launches, within a
launch) and what a launch costs (seconds to healthy, seconds of benchmark). From these
and the space's settings ``cost_plan`` works out, with pure arithmetic:

- the smallest gain the study can confirm (tuner/stats/power.py: the gain at which
  ``compare`` turns significant with ``1 + confirmations`` launches of a candidate
  against ``baseline_launches`` of the baseline, at power 50%), now and once the
  between-launch noise is well measured, against ``stop.min_gain``;
- the launches to a verdict: the quickest "keep the defaults" (baseline + patience) and a
  typical one with one gain found (its search trials, confirmations, a new patience and
  the simplification before the answer), and the hours they take at the measured pace;
- what would lower them: more rounds, more confirmation or baseline launches (each with
  its new minimum), pinned cores, fewer values to try.

``CostPlan.to_json`` is what the sweep records (study attr ``tuner_plan``); the sweep
hands the plan to observer.cost_plan, and tuner/views/plan_text.py says it (the lines
printed by the sweep and by `tuner check --plan`). docs/statistics.md ("The cost plan").
The levers' sentences (``Lever.change``, ``Lever.effect``) stay here, written beside the
what-ifs that compute their figures; ``pct_text`` and ``seconds_text`` word figures for
both.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tuner import stats
from tuner.space.spec import SpaceSpec
from tuner.stats.estimates import DEFAULT_PRIOR_REL_SD
from tuner.stats.power import DetectableGain, detectable_gain, with_requests, with_rounds
from tuner.stats.wording import percent
from tuner.storage import LaunchRow, LaunchStatus
from tuner.study.effects.model import levels
from tuner.study.facts.analysis import StudyAnalysis

PLAN_POWER = 0.5
"""The plain reading of "the smallest gain it can confirm": confirmed half the time."""
HIGH_POWER = 0.8
"""Shown beside it: the gain confirmed four times in five."""


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


@dataclass(frozen=True)
class Lever:
    """One change that would lower the cost or the smallest confirmable gain."""

    change: str
    """What to change, as the space file says it: 'benchmark.rounds: 6'."""
    effect: str
    """What it does, in words with the figures."""
    gain: float | None = None
    """The smallest confirmable gain (now) after the change, where it moves it."""


@dataclass(frozen=True)
class CostPlan:
    """The plan of one study (see the module)."""

    noise: stats.NoiseEstimate
    rounds: int
    confidence: float
    min_gain: float
    candidate_launches: int
    baseline_launches: int
    baseline_measured: int
    """Baseline launches the noise was measured from (the plan comes after them)."""
    now: DetectableGain
    """For the first candidate: the noise as known now, plus a degree of freedom for each
    launch still to come before its verdict (its own repeats, the rest of the baseline)."""
    settled: DetectableGain
    """Once the between-launch noise is well measured (today's estimate, known exactly)."""
    high_power: DetectableGain
    patience: int
    values: int
    """Setting values the search tries (every non-default level of every param)."""
    trials_to_try_all: int
    quickest: int
    typical: int
    typical_parts: str
    typical_futile: int | None
    """Launches with one gain found when the futility stop ends the search after it
    (futility.MIN_TRIALS search trials instead of the patience); None when it is off."""
    budget: int | None
    times: LaunchTimes
    levers: tuple[Lever, ...]

    @property
    def assumed_between(self) -> bool:
        """True while no configuration has two launches: the between part is the prior."""
        return self.noise.n_configs == 0

    @property
    def confirmable(self) -> float:
        """What a verdict 'better' needs: above the noise now and above min_gain."""
        return max(self.now.gain, self.min_gain)

    def hours(self, launches: int) -> float | None:
        per = self.times.per_launch_s
        return None if per is None else launches * per / 3600

    def to_json(self) -> dict[str, Any]:
        """What the study records (attr ``tuner_plan``): the figures (views/plan_text says them)."""

        def mde(d: DetectableGain) -> dict[str, Any]:
            return {
                k: (None if isinstance(v, float) and math.isinf(v) else v)
                for k, v in dataclasses.asdict(d).items()
            }

        return {
            "noise": self.noise.to_json(),
            "between_assumed": self.assumed_between,
            "rounds": self.rounds,
            "confidence": self.confidence,
            "min_gain": self.min_gain,
            "power": PLAN_POWER,
            "detectable_gain": _finite(self.now.gain),
            "detectable_gain_settled": _finite(self.settled.gain),
            "detectable_gain_high_power": _finite(self.high_power.gain),
            "cannot_confirm_below_min_gain": self.now.gain > self.min_gain,
            "mde": mde(self.now),
            "launches": {
                "keep_defaults": self.quickest,
                "one_gain": self.typical,
                "one_gain_parts": self.typical_parts,
                "one_gain_futile": self.typical_futile,
                "budget": self.budget,
            },
            "seconds": {
                "to_healthy": self.times.healthy_s,
                "benchmark_and_stop": self.times.rest_s,
                "per_launch": self.times.per_launch_s,
                "launches_timed": self.times.launches,
            },
            "hours": {
                "keep_defaults": self.hours(self.quickest),
                "one_gain": self.hours(self.typical),
            },
            "levers": [dataclasses.asdict(lever) for lever in self.levers],
        }


def cost_plan(
    spec: SpaceSpec,
    noise: stats.NoiseEstimate,
    times: LaunchTimes,
    *,
    baseline_measured: int,
    budget: int | None = None,
    futility_min_trials: int | None = None,
) -> CostPlan:
    """The plan for a study of ``spec`` at this noise and pace (see the module).

    ``baseline_measured`` is how many baseline launches the noise was measured from.

    ``futility_min_trials`` is the futility stop's floor of search trials (None: the
    stop is off): what a study with one gain may save when the model rules the rest out.
    """
    stop = spec.stop
    rounds = spec.benchmark.rounds
    candidate, baseline = 1 + stop.confirmations, stop.baseline_launches

    def mde(
        n: stats.NoiseEstimate,
        r: int = rounds,
        k_candidate: int = candidate,
        k_baseline: int = baseline,
        power: float = PLAN_POWER,
    ) -> DetectableGain:
        return detectable_gain(
            n,
            rounds=r,
            candidate_launches=k_candidate,
            baseline_launches=k_baseline,
            confidence=stop.confidence,
            power=power,
            direction=spec.direction,
        )

    # The first candidate's confirmation is judged with its own repeats (and the rest of
    # the baseline's) in the noise estimate: a degree of freedom each.
    first_noise = dataclasses.replace(
        noise, dof=noise.dof + (candidate - 1) + max(0, baseline - baseline_measured)
    )
    now = mde(first_noise)
    settled = mde(well_measured(noise))
    values = sum(len(levels(p)) - 1 for p in spec.params.values())
    per_launch = max(1, spec.search.max_changes)
    to_try_all = -(-values // per_launch) if values else 0
    quickest = baseline + stop.patience
    to_gain = max(1, -(-to_try_all // 2))
    typical = baseline + to_gain + stop.confirmations + stop.patience + candidate
    typical_futile = None
    if futility_min_trials is not None:
        after = min(stop.patience, futility_min_trials)
        typical_futile = baseline + to_gain + stop.confirmations + after + candidate
    parts = (
        f"{baseline} baseline + ~{to_gain} search to it + {stop.confirmations} to confirm it "
        f"+ {stop.patience} search after it + {candidate} for the simpler form"
    )
    levers = _levers(spec, first_noise, times, now, mde, values, to_try_all)
    return CostPlan(
        noise=noise,
        rounds=rounds,
        confidence=stop.confidence,
        min_gain=stop.min_gain,
        candidate_launches=candidate,
        baseline_launches=baseline,
        baseline_measured=baseline_measured,
        now=now,
        settled=settled,
        high_power=mde(first_noise, power=HIGH_POWER),
        patience=stop.patience,
        values=values,
        trials_to_try_all=to_try_all,
        quickest=quickest,
        typical=typical,
        typical_parts=parts,
        typical_futile=typical_futile,
        budget=budget,
        times=times,
        levers=tuple(levers),
    )


def study_plan(
    facts: StudyAnalysis,
    times: LaunchTimes,
    *,
    budget: int | None = None,
    futility_min_trials: int | None = None,
) -> CostPlan | None:
    """The plan once the baseline has its ``stop.baseline_launches`` launches; else None.

    ``times`` is what the study's launches cost (``launch_times``); ``facts`` its analysis.
    """
    baseline = facts.baseline
    spec = facts.space.spec
    if baseline is None or facts.noise is None:
        return None
    if len(baseline.launches) < spec.stop.baseline_launches:
        return None
    return cost_plan(
        spec,
        facts.noise,
        times,
        baseline_measured=len(baseline.launches),
        budget=budget,
        futility_min_trials=futility_min_trials,
    )


def well_measured(noise: stats.NoiseEstimate) -> stats.NoiseEstimate:
    """Today's noise estimate as if known exactly (infinite degrees of freedom)."""
    return dataclasses.replace(noise, dof=math.inf, within_dof=math.inf)


def _levers(
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


def _moves(before: float, after: float, how: str) -> str:
    if after < 0.95 * before:
        return f"{how}: {pct_text(before)} -> {pct_text(after)}"
    return (
        f"hardly moves it ({pct_text(before)} -> {pct_text(after)}): between-launch noise "
        "dominates, and only more launches per configuration lower that"
    )


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else value


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
