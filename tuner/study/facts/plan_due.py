"""When the cost plan is due: once the baseline has its launches, from the study's facts.

The plan (tuner/study/facts/plan.py) needs the noise, and the noise needs the baseline's
``stop.baseline_launches`` launches (with screening, its ``screening.baseline_launches``
full ones too, whose pace the plan's hours use). Before then there is no plan to say;
the sweep says it once, after them (tuner/study/policy/next_launch.py), and a resumed
study works it out again from the same launches.
"""

from __future__ import annotations

from tuner.study.facts.analysis import StudyAnalysis
from tuner.study.facts.launch_times import LaunchCosts, LaunchTimes
from tuner.study.facts.plan import CostPlan, cost_plan


def study_plan(
    facts: StudyAnalysis,
    times: LaunchTimes,
    *,
    budget: int | None = None,
    futility_min_trials: int | None = None,
    costs: LaunchCosts | None = None,
) -> CostPlan | None:
    """The plan once the baseline has its ``stop.baseline_launches`` launches (and, with
    screening, its ``screening.baseline_launches`` full ones); else None.

    ``times`` is what the study's launches cost (``launch_times``); ``facts`` its analysis.
    """
    baseline = facts.baseline
    spec = facts.space.spec
    if baseline is None or facts.noise is None:
        return None
    if len(baseline.launches) < spec.stop.baseline_launches:
        return None
    if spec.screening is not None and len(facts.full_opening or ()) < (
        spec.screening.baseline_launches
    ):
        return None
    return cost_plan(
        spec,
        facts.noise,
        times,
        baseline_measured=len(baseline.launches),
        budget=budget,
        futility_min_trials=futility_min_trials,
        costs=costs,
    )
