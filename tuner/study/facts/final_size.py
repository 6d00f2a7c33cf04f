"""The final comparison sized to the noise: how many launches a side the answer needs.

After the baseline launches the study knows its between-launch noise: the cost plan sizes
the comparison then, and the budget keeps that many launches from then on. When the
comparison starts, the search's launches have measured the noise far better, and it is
sized again (never above what the budget holds): either way the sizes are fixed before
the comparison's first launch, so its level holds (tuner/stats/looks.py). The final
comparison (tuner/stats/final.py) is sized for a **target gain**: the gain the search
itself can see (its test's detectable gain at power 50% once the noise is well measured,
the cost plan's ``settled``), and at least twice ``stop.min_gain``. Why that gain: a
smaller one the search would rarely single out, so launches sized for it would mostly
confirm what was never found; and a target at the bar itself would need endless launches.
The sized look is the fewest launches a side, from ``stop.final_launches`` to the space's
most (``SpaceSpec.final_launches_most``), at which a gain of the target is confirmed with
power ``FINAL_POWER`` (80%) at that look's level (tuner/stats/looks.py). Where even the
most does not reach the target, the most is taken and the plan says which gain it does
confirm.

The budget keeps ``2 x sized`` full launches for the comparison from then on
(``Snapshot.final_reserve``), and ``trials_needed`` is the ``--trials`` that holds them
beside a search worth its name (the opening's full launches and one patience of search
launches): the cost plan says in one line when ``--trials`` is below it.

Pure: the plan's figures in, a sizing out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from tuner import stats
from tuner.space.spec import SpaceSpec
from tuner.stats.looks import FINAL_POWER, LookPlan
from tuner.stats.power import DetectableGain, detectable_gain, final_detectable_gain


@dataclass(frozen=True)
class FinalSizing:
    """The final comparison's looks as sized, and what they can confirm."""

    looks: LookPlan
    target_gain: float
    confirmable: float
    """The gain the sized look confirms with power FINAL_POWER (the target, or more where
    the most launches a side do not reach it)."""
    reached: bool
    """Whether the sized look reaches the target within the space's most launches a side."""
    trials_needed: int
    """The --trials that hold the opening, a patience of search and the sized comparison."""
    noise_rel_sd: float

    def to_json(self) -> dict[str, object]:
        return {
            "launches_each": self.looks.sized,
            "first_look": self.looks.first,
            "target_gain": self.target_gain,
            "confirmable_four_in_five": self.confirmable,
            "reached": self.reached,
            "trials_needed": self.trials_needed,
            "power": FINAL_POWER,
        }


def default_looks(spec: SpaceSpec) -> LookPlan:
    """The looks before the plan sized them (or in a study from before sizing): the first
    look of ``stop.final_launches`` and the space's most launches a side."""
    return LookPlan(first=spec.stop.final_launches, sized=spec.final_launches_most)


def answer_gain(
    spec: SpaceSpec, noise: stats.NoiseEstimate, k: int, confidence: float, power: float
) -> DetectableGain:
    """The detectable gain above min_gain of the answer's test (tuner/stats/final.py): k
    fresh launches a side at ``confidence``, at the wider of the measured noise (no prior)
    and the shrunk one, each with the dof still to come (k more of the baseline, the
    candidate's confirmations and final launches)."""
    return final_detectable_gain(
        noise,
        launches=k,
        rounds=spec.benchmark.rounds,
        confidence=confidence,
        power=power,
        direction=spec.direction,
        extra_dof=k + spec.stop.confirmations + k,
    )


def search_gain(spec: SpaceSpec, noise: stats.NoiseEstimate) -> float:
    """The gain the search's own test sees half the time once the noise is well measured
    (the cost plan's ``settled``): ``1 + confirmations`` launches of a candidate against
    ``baseline_launches`` of the defaults, at ``stop.confidence``."""
    stop = spec.stop
    exact = dataclasses.replace(noise, dof=math.inf, within_dof=math.inf)
    return detectable_gain(
        exact,
        rounds=spec.benchmark_for("screen").rounds,
        candidate_launches=1 + stop.confirmations,
        baseline_launches=stop.baseline_launches,
        confidence=stop.confidence,
        direction=spec.direction,
    ).gain


def size_final(spec: SpaceSpec, noise: stats.NoiseEstimate) -> FinalSizing:
    """The sized looks for this noise (see the module)."""
    stop = spec.stop
    seen = search_gain(spec, noise)
    target = max(seen, 2 * stop.min_gain)
    first, most = stop.final_launches, max(stop.final_launches, spec.final_launches_most)
    confirmable = float("inf")
    sized = most
    for k in range(first, most + 1):
        looks = LookPlan(first=first, sized=k)
        level = looks.level(stop.final_confidence, len(looks.planned))
        confirmable = stop.min_gain + answer_gain(spec, noise, k, level, FINAL_POWER).gain
        if confirmable <= target:
            sized = k
            break
    opening = stop.baseline_launches if spec.screening is None else spec.screening.baseline_launches
    search = spec.search_patience if spec.screening is None else 0
    return FinalSizing(
        looks=LookPlan(first=first, sized=sized, target_gain=target),
        target_gain=target,
        confirmable=confirmable,
        reached=confirmable <= target,
        trials_needed=opening + search + 2 * sized,
        noise_rel_sd=noise.rel_sd,
    )
