"""The cost plan in sentences: the sweep's summary after the baseline, and the whole plan.

The figures are tuner/study/facts/plan.py's ``CostPlan`` (the arithmetic, what the study
records as ``tuner_plan``); here they are said. ``plan_summary`` is what the sweep prints
between trial lines (five plain lines: a person reads it mid-run); ``plan_lines`` is the
whole arithmetic, one line per point, for `tuner check --plan` and the report. The levers
carry their own sentences (``Lever.change``, ``Lever.effect``), written in
study/facts/plan_levers.py beside the what-ifs that compute them. docs/statistics.md
("The cost plan").
"""

from __future__ import annotations

import math
from typing import Any

from tuner.stats.wording import percent
from tuner.study.facts.launch_times import LaunchTimes
from tuner.study.facts.load_costs import load_costs_sentence
from tuner.study.facts.plan import CostPlan
from tuner.study.facts.plan_launches import ScreeningPlan
from tuner.study.facts.plan_levers import lowers, pct_text, seconds_text


def plan_lines(plan: CostPlan) -> list[str]:
    """The whole plan, one line per point: `tuner check --plan` and the report."""
    n = plan.noise
    within = n.within_rel_sd
    within_text = (
        f"within a launch ±{percent(within)} per round "
        f"(±{percent(within / math.sqrt(plan.rounds))} for a {plan.rounds}-round mean)"
        if within is not None
        else "within a launch: unknown (one round per launch)"
    )
    if plan.assumed_between:
        between = (
            f"between launches ±{percent(n.rel_sd)} assumed (the prior: no configuration "
            "has two launches yet, so this part is assumed until two exist)"
        )
    else:
        seen = (
            f"measured ±{percent(math.sqrt(n.observed_var))}"
            if n.observed_var is not None
            else "not measured"
        )
        between = (
            f"between launches ±{percent(n.rel_sd)} ({seen} from {n.n_launches} launches, "
            f"shrunk towards the prior ±{percent(n.prior_rel_sd)})"
        )
    out = [
        f"cost plan after {plan.baseline_measured} baseline launch"
        f"{'es' if plan.baseline_measured != 1 else ''}:",
        *([f"  {sizing_line(plan)}"] if plan.sizing is not None else []),
        f"  noise: {between}; {within_text}",
        f"  smallest gain the search can see: {pct_text(plan.now.gain)} for the first "
        f"candidate, {pct_text(plan.settled.gain)} once the between-launch noise is well "
        f"measured ({plan.confidence:.0%} confidence, {plan.candidate_launches} launches of a "
        f"candidate against {plan.baseline_launches} of the baseline; power 50%: a real "
        f"gain this size is seen half the time, {pct_text(plan.high_power.gain)} four "
        "times in five)",
        f"  the answer: a change is recommended only when its final comparison "
        f"({plan.final_launches} fresh launches of it and {plan.final_launches} of the "
        f"defaults, interleaved{_more_launches(plan)}) puts its {plan.final_confidence * 100:g}% "
        f"interval above min_gain ({pct_text(plan.min_gain)}): at this noise that takes a "
        f"gain of {pct_text(plan.confirmable)} (half the time; "
        f"{pct_text(plan.confirmable_high_power)} four times in five)"
        + (
            f", {pct_text(plan.confirmable_at_most)} at {plan.final_launches_max} a side"
            if plan.final_launches_max > plan.final_launches
            else ""
        ),
        f"  this study cannot confirm gains below {pct_text(plan.confirmable_at_most)}",
    ]
    out.append(f"  to a verdict: {_launches_text(plan)}")
    if plan.screening is not None:
        out += _screening_lines(plan.screening)
    loads = load_costs_sentence(plan.loads) if plan.loads is not None else None
    if loads is not None:
        out.append(f"  a load: {loads}")
    if plan.load is not None:  # why, and the lever most likely to cut it
        out.append(f"  why: {plan.load.sentence()}")
    if plan.levers:
        out.append("  what would lower them:")
        out.extend(f"    {lever.change}: {lever.effect}" for lever in plan.levers)
    return out


def plan_summary(plan: CostPlan) -> list[str]:
    """The plan as the sweep prints it between trial lines: five plain lines of under 100
    characters (the noise between launches, the smallest gain the study can confirm, the
    launches and hours to an answer, whether --trials holds them, the change that helps
    most). The figures are the plan's; ``plan_lines`` says how they were worked out, for
    `tuner check --plan` and the report."""
    n = plan.noise
    if plan.assumed_between:
        source = "assumed: none repeated yet"
    else:
        configs = "the defaults" if n.n_configs == 1 else f"{n.n_configs} settings"
        source = f"{n.n_launches} launches of {configs}"
    return [
        f"cost plan (in full: tuner check --plan): launches vary by ±{percent(n.rel_sd)} "
        f"({source})",
        f"  smallest gain this study can confirm: {pct_text(plan.confirmable_at_most)} (with "
        f"up to {plan.final_launches_max} launches a side at the end)",
        f"  to an answer: {_answer_cost(plan)}",
        f"  {_trials_text(plan)}",
        f"  {_best_lever(plan)}",
    ]


def _answer_cost(plan: CostPlan) -> str:
    """Launches (and hours) to keep the defaults, and with one gain found."""
    s = plan.screening
    if s is not None:

        def hours(value: float | None) -> str:
            return f" ({_duration(value)})" if value is not None else ""

        keep, gain = s.keep_defaults, s.one_gain
        return (
            f"{keep[0]} screening + {keep[1]} full{hours(s.keep_hours)} to keep the defaults, "
            f"{gain[0]} + {gain[1]}{hours(s.gain_hours)} with a gain"
        )
    low, high = plan.hours(plan.quickest), plan.hours(plan.typical)
    if low is None or high is None:
        return (
            f"{plan.quickest} launches to keep the defaults, about {plan.typical} with a gain"
            " (not timed yet)"
        )
    return (
        f"{plan.quickest} launches ({_duration(low)}) to keep the defaults, about "
        f"{plan.typical} ({_duration(high)}) with a gain"
    )


def _trials_text(plan: CostPlan) -> str:
    """Whether --trials holds the launches to an answer, and the --trials that would.
    With screening --trials counts full loads only, so it is held against those."""
    s = plan.screening
    keep, gain = (plan.quickest, plan.typical) if s is None else (s.keep_defaults[1], s.one_gain[1])
    loads = "" if s is None else " (full loads)"
    budget = plan.budget
    if budget is None or budget >= gain:
        return f"--trials {gain if budget is None else budget}{loads} holds them"
    held = "them only without a gain" if budget >= keep else "neither"
    return f"--trials {budget}{loads} holds {held}: use --trials {gain}"


def _best_lever(plan: CostPlan) -> str:
    """The lever that lowers the search's smallest gain most, else one without a figure."""
    figured = [lever for lever in plan.levers if lever.gain is not None]
    best = min(figured, key=lambda lever: lever.gain or 0.0, default=None)
    if best is not None and best.gain is not None and lowers(plan.now.gain, best.gain):
        return (
            f"helps most: {best.change} (the search would see {pct_text(best.gain)} gains, "
            f"not {pct_text(plan.now.gain)})"
        )
    unfigured = [lever.change for lever in plan.levers if lever.gain is None]
    if unfigured:
        return f"may help: {unfigured[0]} (no figure for it)"
    return "no change listed lowers the smallest gain much"


def _more_launches(plan: CostPlan) -> str:
    sized = plan.sizing.looks.sized if plan.sizing is not None else plan.final_launches_max
    if sized <= plan.final_launches:
        return ""
    return (
        f"; up to {sized} each, sized to the noise, when the first look leaves it open: "
        "each look at its share of the error rate"
    )


def sizing_line(plan: CostPlan) -> str:
    """The final comparison's size and whether --trials holds it beside a search, in one
    line ("at ±3.0% between launches a 6.5% gain takes 6 launches a side to confirm ...")."""
    sizing = plan.sizing
    assert sizing is not None
    k = sizing.looks.sized
    reach = (
        f"a {pct_text(sizing.target_gain)} gain (what the search can see) takes {k} launch"
        f"{'es' if k != 1 else ''} a side to confirm"
        if sizing.reached
        else f"{k} launches a side (the most) confirm {pct_text(sizing.confirmable)}, not the "
        f"{pct_text(sizing.target_gain)} the search can see"
    )
    text = (
        f"final comparison: at ±{percent(sizing.noise_rel_sd)} between launches {reach} "
        f"(four times in five)"
    )
    budget, needed = plan.budget, sizing.trials_needed
    if budget is None:
        return f"{text}; --trials {needed} holds it beside a search"
    search = budget - needed + plan.patience if plan.screening is None else None
    if budget >= needed:
        left = f": --trials {budget} leaves {search} for the search" if search is not None else ""
        return f"{text}{left}"
    short = f"--trials {budget} cannot hold it beside a search"
    if search is not None and search > 0:
        short = f"--trials {budget} leaves {search} for the search"
    return f"{text}: {short}; --trials {needed} would (answers may end 'not settled' until then)"


def _launches_text(plan: CostPlan) -> str:
    quick = f"{plan.quickest} launches to keep the defaults ({plan.baseline_launches} "
    quick += f"baseline + {plan.patience} search), about {plan.typical} with one gain "
    quick += f"found ({plan.typical_parts}"
    if plan.typical_futile is not None and plan.typical_futile < plan.typical:
        quick += f"; {plan.typical_futile} if the model rules the rest out after it"
    quick += ")"
    if plan.budget is not None:
        quick += f"; budget {plan.budget}"
    if plan.screening is not None:
        return quick + "; their hours, by kind of launch, below"
    times = plan.times
    if times.per_launch_s is None or times.healthy_s is None or times.rest_s is None:
        return quick + "; time: unknown (no timed launch yet)"
    low, high = plan.hours(plan.quickest), plan.hours(plan.typical)
    assert low is not None and high is not None
    return (
        f"{quick}; at {seconds_text(times.per_launch_s)} a launch "
        f"({seconds_text(times.healthy_s)} to healthy + {seconds_text(times.rest_s)} benchmark "
        f"and stop): {_duration(low)} to {_duration(high)}"
    )


def _screening_lines(s: ScreeningPlan) -> list[str]:
    """Both kinds of launch with their measured cost, and the hours with and without."""

    def kind(name: str, t: LaunchTimes) -> str:
        if t.healthy_s is None or t.per_launch_s is None:
            return f"{name}: not timed yet"
        return (
            f"{name} {seconds_text(t.healthy_s)} to healthy, {seconds_text(t.per_launch_s)} a "
            f"launch ({t.launches} timed)"
        )

    def hours(value: float | None) -> str:
        return _duration(value) if value is not None else "time unknown"

    line = f"  launches: {kind('a full load', s.full)}; {kind('a screening launch', s.screen)}"
    if s.full.per_launch_s and s.screen.per_launch_s:
        line += f": a screening launch saves {1 - s.screen.per_launch_s / s.full.per_launch_s:.0%}"
    keep, gain = s.keep_defaults, s.one_gain
    return [
        line,
        f"  with screening: {keep[0]} screening + {keep[1]} full launches to keep the defaults "
        f"({hours(s.keep_hours)}), {gain[0]} + {gain[1]} with one gain found "
        f"({hours(s.gain_hours)}; at most {s.max_launches} screening launches)",
        f"  without screening (every launch a full load): {s.without[0]} launches to keep the "
        f"defaults ({hours(s.keep_hours_without)}), {s.without[1]} with one gain "
        f"({hours(s.gain_hours_without)})",
    ]


def _duration(hours: float) -> str:
    if hours >= 1:
        return f"{hours:.1f} h"
    minutes = hours * 60
    return f"{minutes:.0f} min" if minutes >= 1 else f"{minutes * 60:.0f} s"


def plan_json(plan: CostPlan) -> dict[str, Any]:
    """The plan's figures (``CostPlan.to_json``), why a load takes what it takes (``load``)
    and its lines as ``text``: `--format json`."""
    load = plan.load.to_json() if plan.load is not None else None
    return {**plan.to_json(), "load": load, "text": plan_lines(plan)}
