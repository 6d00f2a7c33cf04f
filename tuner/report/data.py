"""What `tuner report` shows, as typed data gathered from what tuner already stores and computes.

``build_report`` reads one study: the answer (views/best.best_report), the history of
launches with the baseline's noise band, each setting's effect from the search's model
(study/effects/model.EffectModel), throughput and latency per concurrency for the baseline,
best and recommended configurations, their telemetry over time (GPU when it was
sampled, host otherwise), the time each launch spent loading, warming up and
benchmarking, what a load costs per fidelity (its phases from the server's log:
study/facts/load_costs), the failures, the cost plan the sweep said after the baseline
in full (study/run/plan_launch.said_plan), a Pareto front only for a study with several
objectives, and, when asked, the study beside others (views/compare_studies). Every
value is read from the store, where secrets are already redacted. The figures per launch
and configuration are gathered in tuner/report/launches.py, the failed trials and the
Pareto front in tuner/report/trials.py; this module joins them with the answer.
The renderer (tuner/report/html.py) draws this data and computes nothing.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tuner.errors import NoAnswerError
from tuner.report.launches import (
    ConfigCurve,
    HistoryPoint,
    LaunchTiming,
    LevelPoint,
    curves,
    history,
    timings,
)
from tuner.report.telemetry import TelemetryChart, telemetry_charts
from tuner.report.trials import Failure, Pareto, ParetoPoint, failures, pareto
from tuner.space.settings import canonical_value
from tuner.stats import NOT_SETTLED
from tuner.storage import LaunchRow, LaunchStatus
from tuner.study import attrs
from tuner.study.effects.model import EffectModel
from tuner.study.facts import analysis
from tuner.study.facts.load_costs import LoadCosts, load_costs
from tuner.study.facts.load_explained import LoadExplained, explain_study_load
from tuner.study.run.plan_launch import said_plan
from tuner.views.best import BestReport, ConfigEntry, best_report, no_answer_sentence
from tuner.views.best_headline import badge as verdict_badge
from tuner.views.compare_studies import StudiesComparison, compare_studies
from tuner.views.plan_text import plan_lines
from tuner.views.study_access import open_study

__all__ = [
    "ConfigCurve",
    "Effect",
    "Failure",
    "HistoryPoint",
    "LaunchTiming",
    "LevelPoint",
    "NoiseBand",
    "Pareto",
    "ParetoPoint",
    "ReportData",
    "build_report",
    "curves",
    "effects",
    "failures",
    "history",
    "noise_band",
    "pareto",
    "timings",
    "verdict_sentence",
]

EFFECT_SEED = 0
"""The effects' posterior draws are seeded: the same study gives the same report."""


@dataclass(frozen=True)
class NoiseBand:
    """Where a launch of the defaults falls: the baseline's mean ± 2 s.d. of launch noise."""

    center: float
    low: float
    high: float
    rel_sd: float


@dataclass(frozen=True)
class Effect:
    """One setting's estimated effect on the objective, relative (0.02 is +2%)."""

    param: str
    value: str
    median: float
    low: float
    high: float
    p_effect: float
    """The share of posterior draws in which the setting has any effect at all."""
    launches: int


@dataclass(frozen=True)
class ReportData:
    """Everything the HTML report shows."""

    answer: BestReport
    verdict: str
    generated_at: str
    history: tuple[HistoryPoint, ...]
    band: NoiseBand | None
    effects: tuple[Effect, ...]
    curves: tuple[ConfigCurve, ...]
    telemetry_kind: str
    """gpu, host, or none."""
    telemetry: tuple[TelemetryChart, ...]
    timings: tuple[LaunchTiming, ...]
    failures: tuple[Failure, ...]
    pareto: Pareto | None
    studies: StudiesComparison | None = None
    """This study beside others (`tuner report --compare B C`), as compare-studies has it."""
    load_costs: LoadCosts = LoadCosts()
    """What a load costs per fidelity, its phases as the server's logs told them."""
    load: LoadExplained | None = None
    """Why a full load takes that long, and its lever (tuner/study/facts/load_explained.py)."""
    badge: str = ""
    """The verdict in a few words, above the sentence: Confirmed, No gain — keep the
    defaults, Not settled — about N more launches a side (views/best_verdict.py)."""
    plan: tuple[str, ...] = ()
    """The cost plan the sweep said after the baseline, whole (views/plan_text.plan_lines:
    the sweep printed only its summary); empty before the study said one."""


def build_report(storage: str, study: str, compare: Sequence[str] = ()) -> ReportData:
    """The report's data for ``study`` (beside the studies ``compare`` names, if any);
    NoAnswerError (exit 3) without a completed trial."""
    answer = best_report(storage, study)
    if answer.trials.complete == 0:
        raise NoAnswerError(no_answer_sentence(answer))
    opened = open_study(storage, study)
    facts = analysis.analyze(opened.store, opened.space)
    launches = opened.store.launches(study)
    named = _named_configs(answer)
    trials = opened.optuna_study.get_trials(deepcopy=False)
    kind, charts = telemetry_charts(opened.store, _first_launches(launches, named))
    recorded = opened.optuna_study.user_attrs.get(attrs.PLAN)
    said = said_plan(opened.store, opened.space, launches, recorded)
    return ReportData(
        answer=answer,
        verdict=verdict_sentence(answer),
        generated_at=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        history=history(launches),
        band=noise_band(facts),
        effects=effects(facts),
        curves=curves(opened.store, launches, named),
        telemetry_kind=kind,
        telemetry=charts,
        timings=timings(opened.store, launches),
        failures=failures(trials, launches),
        pareto=pareto(opened.optuna_study),
        studies=compare_studies(storage, [study, *compare]) if compare else None,
        load_costs=load_costs(launches),
        load=explain_study_load(opened.store, opened.space, launches),
        badge=verdict_badge(answer),
        plan=tuple(plan_lines(said)) if said is not None else (),
    )


def verdict_sentence(answer: BestReport) -> str:
    """The answer in a sentence: keep the defaults, or deploy a trial's settings for a gain
    (with screening, said to rest on full launches only)."""
    text = _verdict(answer)
    if answer.screening is None:
        return text
    n = answer.screening.facts.screen_launches
    return (
        f"{text} (The answer rests on full launches only; {n} screening launch"
        f"{'es' if n != 1 else ''} searched.)"
    )


def _verdict(answer: BestReport) -> str:
    rec = answer.recommended
    if rec is None or answer.best is None:
        return no_answer_sentence(answer)
    if answer.verdict == NOT_SETTLED:  # never read as "keep the defaults" for good
        said = answer.not_settled.sentence if answer.not_settled is not None else rec.reason
        return f"Not settled: {_after('not settled: ', said or '')}."
    if answer.keep_defaults:
        if answer.final is not None:  # the search's choice, refuted on fresh launches
            drift = answer.final.drift
            moved = f" Drift: {drift.text}." if drift is not None and drift.text else ""
            return f"Keep the defaults: {answer.final.text}.{moved}"
        if answer.could_have_missed is not None:
            text = answer.could_have_missed.text
            return text[0].upper() + text[1:] + "."
        return "Keep the defaults."
    gain = answer.gain_vs_baseline
    head = f"Deploy the settings of trial {rec.trial}"
    if gain is None:
        return f"{head}: {rec.reason}"
    level = answer.final.confidence if answer.final is not None else answer.confidence
    return (
        f"{head}: {gain.rel_diff:+.1%} {answer.metric} at concurrency {answer.concurrency} "
        f"against the defaults ({level * 100:g}% interval {gain.ci_low:+.1%} to "
        f"{gain.ci_high:+.1%}; {gain.verdict}). {rec.reason}"
    )


def _after(prefix: str, text: str) -> str:
    return text[len(prefix) :] if text.startswith(prefix) else text


def noise_band(facts: analysis.StudyAnalysis) -> NoiseBand | None:
    """The baseline's mean ± 2 s.d. of the between-launch noise (None without either)."""
    baseline = facts.baseline
    if baseline is None or facts.noise is None:
        return None
    center = baseline.estimate.mean
    spread = 2 * facts.noise.rel_sd * abs(center)
    return NoiseBand(center, center - spread, center + spread, facts.noise.rel_sd)


def effects(facts: analysis.StudyAnalysis) -> tuple[Effect, ...]:
    """Each tried setting's effect on the objective: the search model's posterior median and
    central interval at the study's confidence, largest effects first."""
    spec = facts.space.spec
    model = EffectModel(spec)
    model.observe(facts.observations())
    if not model.rows:
        return ()
    draws = model.draws(np.random.default_rng(EFFECT_SEED))
    tried = model.times_tried()
    confidence = spec.stop.confidence
    # the model keys a value as the server sees it (True is "1"); the page writes it as
    # the space file and `tuner best` do
    written = {
        (name, canonical_value(v)): str(v) for name, vs in model.levels.items() for v in vs[1:]
    }
    found = []
    for (name, value), column in model.index.items():
        if tried[column] == 0:
            continue
        relative = np.expm1(model.sign * draws[:, column])  # back to the metric's own scale
        low, median, high = np.quantile(relative, [(1 - confidence) / 2, 0.5, (1 + confidence) / 2])
        found.append(
            Effect(
                param=name,
                value=written.get((name, value), value),
                median=float(median),
                low=float(low),
                high=float(high),
                p_effect=float((draws[:, column] != 0).mean()),
                launches=int(tried[column]),
            )
        )
    return tuple(sorted(found, key=lambda e: -abs(e.median)))


def _named_configs(answer: BestReport) -> list[tuple[str, ConfigEntry]]:
    """baseline, best and recommended, each configuration once (labels joined)."""
    labels: dict[str, list[str]] = defaultdict(list)
    entries: dict[str, ConfigEntry] = {}
    for label, entry in (
        ("baseline", answer.baseline),
        ("best", answer.best),
        ("recommended", answer.recommended),
    ):
        if entry is not None:
            labels[entry.config].append(label)
            entries[entry.config] = entry
    return [(" = ".join(labels[key]), entries[key]) for key in entries]


def _first_launches(
    launches: Sequence[LaunchRow], named: Sequence[tuple[str, ConfigEntry]]
) -> list[tuple[str, LaunchRow]]:
    """For each named configuration, its first completed launch."""
    out = []
    for label, entry in named:
        row = next(
            (
                r
                for r in launches
                if r.config_hash == entry.config and r.status == LaunchStatus.COMPLETE
            ),
            None,
        )
        if row is not None:
            out.append((label, row))
    return out
