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
value is read from the store, where secrets are already redacted.
The renderer (tuner/report/html.py) draws this data and computes nothing.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from tuner.errors import NoAnswerError
from tuner.report.telemetry import TelemetryChart, telemetry_charts
from tuner.space.settings import canonical_value, changed_from_defaults
from tuner.stats import NOT_SETTLED
from tuner.storage import LaunchRow, LaunchStatus, Store
from tuner.study import attrs
from tuner.study.effects.model import EffectModel
from tuner.study.facts import analysis
from tuner.study.facts.load_costs import LoadCosts, load_costs
from tuner.study.run.plan_launch import said_plan
from tuner.views.best import BestReport, ConfigEntry, best_report, no_answer_sentence
from tuner.views.best_headline import badge as verdict_badge
from tuner.views.compare_studies import StudiesComparison, compare_studies
from tuner.views.plan_text import plan_lines
from tuner.views.study_access import open_study

EFFECT_SEED = 0
"""The effects' posterior draws are seeded: the same study gives the same report."""


@dataclass(frozen=True)
class HistoryPoint:
    """One measured launch in the order of trials."""

    trial: int
    role: str
    status: str
    """complete, or pruned (measured for fewer rounds)."""
    value: float
    stderr: float | None
    changed: str
    fidelity: str | None = None
    """``screen`` for a screening launch (random weights: it searched, never decided)."""


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
class LevelPoint:
    """A configuration at one concurrency, averaged over its launches and rounds."""

    concurrency: int
    throughput: float | None
    ttft_p50: float | None
    ttft_p99: float | None
    tpot_p50: float | None
    tpot_p99: float | None


@dataclass(frozen=True)
class ConfigCurve:
    """Throughput and latency against concurrency for one named configuration."""

    label: str
    trial: int | None
    points: tuple[LevelPoint, ...]


@dataclass(frozen=True)
class LaunchTiming:
    """Where one launch's time went, in seconds (None: not recorded)."""

    trial: int | None
    role: str
    status: str
    load_s: float
    warmup_s: float
    benchmark_s: float
    stop_s: float
    other_s: float


@dataclass(frozen=True)
class Failure:
    """A trial that failed, was pruned, or was not launched, with why."""

    trial: int
    state: str
    role: str
    launched: bool
    changed: str
    reason: str


@dataclass(frozen=True)
class ParetoPoint:
    trial: int
    x: float
    y: float
    on_front: bool


@dataclass(frozen=True)
class Pareto:
    """The first two objectives of a multi-objective study, its front marked."""

    names: tuple[str, str]
    directions: tuple[str, str]
    points: tuple[ParetoPoint, ...]


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


def _label(params: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in changed_from_defaults(params).items()) or "defaults"


def history(launches: Iterable[LaunchRow]) -> tuple[HistoryPoint, ...]:
    """Every measured launch of a trial, in trial order."""
    points = []
    for row in launches:
        if row.trial_number is None or row.objective_mean is None:
            continue
        if row.status not in (LaunchStatus.COMPLETE, LaunchStatus.PRUNED):
            continue
        points.append(
            HistoryPoint(
                trial=row.trial_number,
                role=row.role,
                status=row.status,
                value=row.objective_mean,
                stderr=row.objective_se,
                changed=_label(row.params),
                fidelity=row.fidelity,
            )
        )
    return tuple(sorted(points, key=lambda p: p.trial))


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


def curves(
    store: Store, launches: Sequence[LaunchRow], named: Sequence[tuple[str, ConfigEntry]]
) -> tuple[ConfigCurve, ...]:
    """Throughput and TTFT/TPOT p50 and p99 at each concurrency, averaged over the completed
    launches (every round) of the baseline, best and recommended configurations."""
    out = []
    for label, entry in named:
        rows = [
            r
            for r in launches
            if r.config_hash == entry.config and r.status == LaunchStatus.COMPLETE
        ]
        by_level: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
        for row in rows:
            for level in store.levels(row.id):
                by_level[level.concurrency].append(level.summary)
        points = tuple(
            LevelPoint(
                concurrency=c,
                throughput=_mean(s.get("output_throughput") for s in summaries),
                ttft_p50=_mean(_stat(s, "ttft_ms", "p50") for s in summaries),
                ttft_p99=_mean(_stat(s, "ttft_ms", "p99") for s in summaries),
                tpot_p50=_mean(_stat(s, "tpot_ms", "p50") for s in summaries),
                tpot_p99=_mean(_stat(s, "tpot_ms", "p99") for s in summaries),
            )
            for c, summaries in sorted(by_level.items())
        )
        if points:
            out.append(ConfigCurve(label=label, trial=entry.trial, points=points))
    return tuple(out)


def _stat(summary: Mapping[str, Any], family: str, stat: str) -> Any:
    values = summary.get(family)
    return values.get(stat) if isinstance(values, Mapping) else None


def _mean(values: Iterable[Any]) -> float | None:
    kept = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(kept) / len(kept) if kept else None


def timings(store: Store, launches: Sequence[LaunchRow]) -> tuple[LaunchTiming, ...]:
    """Each finished launch's time: load (to healthy; to the failure when it never was),
    warm-up and connection setup, benchmark (the measured windows), stop, and the rest."""
    out = []
    for row in launches:
        if row.finished_at is None or row.trial_number is None:
            continue
        total = max(0.0, (row.finished_at - row.started_at).total_seconds())
        # The capacity search's levels are benchmark time too (not curve points).
        levels = [*store.levels(row.id), *store.levels(row.id, capacity_search=True)]
        benchmark = sum(level.duration_s for level in levels)
        warmup = sum(
            max(0.0, float(level.summary.get("wall_s", level.duration_s)) - level.duration_s)
            for level in levels
        )
        stop = float((row.cleanup or {}).get("seconds") or 0.0)
        if row.seconds_to_healthy is not None:
            load = row.seconds_to_healthy
        else:  # never healthy: the time until it failed is the load that did not finish
            load = max(0.0, total - stop - benchmark - warmup)
        other = max(0.0, total - load - warmup - benchmark - stop)
        out.append(
            LaunchTiming(
                trial=row.trial_number,
                role=row.role,
                status=row.status,
                load_s=load,
                warmup_s=warmup,
                benchmark_s=benchmark,
                stop_s=stop,
                other_s=other,
            )
        )
    return tuple(out)


def failures(
    trials: Sequence[optuna.trial.FrozenTrial], launches: Sequence[LaunchRow]
) -> tuple[Failure, ...]:
    """Failed and pruned trials (launched or not) with their reasons."""
    reasons = {r.trial_number: r.reason for r in launches if r.trial_number is not None}
    out = []
    for t in trials:
        if t.state not in (TrialState.FAIL, TrialState.PRUNED):
            continue
        out.append(
            Failure(
                trial=t.number,
                state=t.state.name.lower(),
                role=str(t.user_attrs.get(attrs.ROLE, attrs.SEARCH)),
                launched=bool(t.user_attrs.get(attrs.LAUNCHED, t.number in reasons)),
                changed=_label(t.user_attrs.get(attrs.PARAMS) or {}),
                reason=str(
                    t.user_attrs.get(attrs.REASON) or reasons.get(t.number) or "no reason recorded"
                ),
            )
        )
    return tuple(out)


def pareto(study: optuna.Study) -> Pareto | None:
    """The first two objectives of a study with several, its Pareto front marked.

    tuner's own studies have one objective today (several are not built: README,
    Missing); then there is no front, and the report leaves the section out.
    """
    directions = study.directions
    if len(directions) < 2:
        return None
    names = study.metric_names or [f"objective {i}" for i in range(len(directions))]
    front = {t.number for t in study.best_trials}
    points = tuple(
        ParetoPoint(t.number, float(t.values[0]), float(t.values[1]), t.number in front)
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if t.values is not None
    )
    return Pareto(
        names=(names[0], names[1]),
        directions=(directions[0].name.lower(), directions[1].name.lower()),
        points=points,
    )
