"""The cost plan: what a study can confirm, and what a verdict will cost, said before it is spent.

After the baseline launches the study knows its noise (between launches, within a
launch) and what a launch costs (seconds to healthy, seconds of benchmark). From these
and the space's settings ``cost_plan`` works out, with pure arithmetic:

- the smallest gain the answer can confirm: the final comparison's (tuner/stats/final.py:
  ``final_launches`` fresh launches a side, its interval must clear ``stop.min_gain``), at
  the wider of the measured and the shrunk noise, at power 50% and 80%;
- the smallest gain the search's screening test can see (tuner/stats/power.py: the gain
  at which ``compare`` turns significant with ``1 + confirmations`` launches of a
  candidate against ``baseline_launches`` of the baseline, at power 50%), now and once
  the between-launch noise is well measured;
- the launches to a verdict: the quickest "keep the defaults" (baseline + patience) and a
  typical one with one gain found (its search trials, confirmations, a new patience and
  the simplification before the answer), and the hours they take at the measured pace;
- what would lower them: more rounds, more confirmation or baseline launches (each with
  its new minimum), pinned cores, fewer values to try.

``study_plan`` (tuner/study/facts/plan_due.py) gives it once the baseline has its launches.
``CostPlan.to_json`` is what the sweep records (study attr ``tuner_plan``); the sweep
hands the plan to observer.cost_plan, and tuner/views/plan_text.py says it (the lines
printed by the sweep and by `tuner check --plan`). docs/statistics.md ("The cost plan").
The levers (what would lower the figures) are tuner/study/facts/plan_levers.py, the
launches to a verdict tuner/study/facts/plan_launches.py, and what a launch costs
tuner/study/facts/launch_times.py.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from tuner import stats
from tuner.space.objectives import is_multi_objective
from tuner.space.spec import SpaceSpec
from tuner.stats.power import DetectableGain, detectable_gain
from tuner.study.facts.final_size import FinalSizing, answer_gain, default_looks, size_final
from tuner.study.facts.launch_times import LaunchCosts, LaunchTimes
from tuner.study.facts.load_costs import LoadCosts
from tuner.study.facts.load_explained import LoadExplained
from tuner.study.facts.plan_launches import ScreeningPlan, verdict_launches
from tuner.study.facts.plan_levers import Lever, levers

PLAN_POWER = 0.5
"""The plain reading of "the smallest gain it can confirm": confirmed half the time."""
HIGH_POWER = 0.8
"""Shown beside it: the gain confirmed four times in five."""


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
    final_launches: int
    """Launches of each side in the final comparison (stop.final_launches)."""
    final_confidence: float
    """The confidence of one look of the final comparison: stop.final_confidence, less
    its share when a second look is allowed (tuner/stats/final.py)."""
    final: DetectableGain
    """The final comparison's detectable gain above min_gain (its interval must clear
    min_gain, so a gain is confirmed at ``min_gain + final.gain``), at the wider of the
    measured and the shrunk noise, with the dof the final launches will add."""
    final_high_power: DetectableGain
    final_launches_max: int
    """The most launches a side a final comparison may take (stop.final_launches_max)."""
    final_at_most: DetectableGain
    """``final`` at ``final_launches_max`` launches a side: what the study can confirm at all."""
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
    screening: ScreeningPlan | None = None
    """With a ``screening:`` section: both kinds of launch, and the hours with and without."""
    loads: LoadCosts | None = None
    """What a load costs, phase by phase, per fidelity (from the servers' logs)."""
    load: LoadExplained | None = None
    """Why a full load takes that long, and its lever (tuner/study/facts/load_explained.py):
    set by the callers that read the run host's facts (tuner check --plan, the report);
    not among the recorded figures (``to_json``), which the sweep's plan has without it."""
    sizing: FinalSizing | None = None
    """The final comparison sized to this noise (tuner/study/facts/final_size.py); None
    with several objectives (no final comparison)."""

    @property
    def assumed_between(self) -> bool:
        """True while no configuration has two launches: the between part is the prior."""
        return self.noise.n_configs == 0

    @property
    def confirmable(self) -> float:
        """The smallest gain the answer can confirm (half the time): the final comparison's
        interval must clear min_gain, so min_gain plus its detectable gain."""
        return self.min_gain + self.final.gain

    @property
    def confirmable_high_power(self) -> float:
        return self.min_gain + self.final_high_power.gain

    @property
    def confirmable_at_most(self) -> float:
        """The smallest gain the answer can confirm (half the time) with the most final
        launches: below it the study cannot confirm a gain."""
        return self.min_gain + self.final_at_most.gain

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
            "final": {
                "launches_each": self.final_launches,
                "confidence": self.final_confidence,
                "launches_each_max": self.final_launches_max,
                "confirmable": _finite(self.confirmable),
                "cannot_confirm_below": _finite(self.confirmable_at_most),
                "confirmed_four_in_five": _finite(self.confirmable_high_power),
                "mde": mde(self.final),
            },
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
            "screening": self.screening.to_json() if self.screening is not None else None,
            "loads": self.loads.to_json() if self.loads is not None else None,
            "sizing": self.sizing.to_json() if self.sizing is not None else None,
        }


def cost_plan(
    spec: SpaceSpec,
    noise: stats.NoiseEstimate,
    times: LaunchTimes,
    *,
    baseline_measured: int,
    budget: int | None = None,
    futility_min_trials: int | None = None,
    costs: LaunchCosts | None = None,
) -> CostPlan:
    """The plan for a study of ``spec`` at this noise and pace (see the module).

    ``costs``: a launch's cost per fidelity, for a study with screening (both kinds of
    launch, and its hours against the same study without screening).

    ``baseline_measured`` is how many baseline launches the noise was measured from.

    ``futility_min_trials`` is the futility stop's floor of search trials (None: the
    stop is off): what a study with one gain may save when the model rules the rest out.
    """
    stop = spec.stop
    # The search's launches are screening ones where the study screens, and they may run
    # fewer rounds (screening.benchmark); the answer's are full launches (answer_gain).
    rounds = spec.benchmark_for("screen").rounds
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
    final_k = stop.final_launches
    # The first look's level (tuner/stats/looks.py): the sized look's is the sizing's.
    look_confidence = default_looks(spec).level(stop.final_confidence, 1)

    def final_mde(power: float, k: int = final_k) -> DetectableGain:
        return answer_gain(spec, noise, k, look_confidence, power)

    sizing = None if is_multi_objective(spec) else size_final(spec, noise)
    # The final comparison's launches as the budget keeps them: both sides of its sized look.
    final_size = 2 * (sizing.looks.sized if sizing is not None else final_k)
    counted = verdict_launches(spec, final_size, futility_min_trials, times, costs)
    found = levers(spec, first_noise, times, now, mde, counted.values, counted.to_try_all)
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
        final_launches=final_k,
        final_confidence=look_confidence,
        final=final_mde(PLAN_POWER),
        final_high_power=final_mde(HIGH_POWER),
        final_launches_max=spec.final_launches_most,
        final_at_most=final_mde(PLAN_POWER, spec.final_launches_most),
        patience=spec.search_patience,
        values=counted.values,
        trials_to_try_all=counted.to_try_all,
        quickest=counted.quickest,
        typical=counted.typical,
        typical_parts=counted.parts,
        typical_futile=counted.typical_futile,
        budget=budget,
        times=times,
        levers=tuple(found),
        screening=counted.screening,
        loads=costs.loads if costs is not None else None,
        sizing=sizing,
    )


def well_measured(noise: stats.NoiseEstimate) -> stats.NoiseEstimate:
    """Today's noise estimate as if known exactly (infinite degrees of freedom)."""
    return dataclasses.replace(noise, dof=math.inf, within_dof=math.inf)


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else value
