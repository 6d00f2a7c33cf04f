"""`tuner best`: the answer of a study, as typed data and as a table, JSON or deployment text.

``best_report`` reads the stored launches through study.analysis (never optuna's
``best_trial``: one configuration has several launches) and returns a BestReport:
the best, the recommended (simplest within noise of the best) and the baseline
configuration, the noise, the stop reason and the trial counts. ``BestReport.to_json``
is the JSON contract of `tuner best --format json` (docs/architecture.md, DESIGN.md);
its keys and their order are what scripts read, so change them only on purpose.
Each configuration is a ``ConfigEntry`` (tuner/views/best_entry.py); the gain over the
defaults and what keeping them could have missed are tuner/views/best_gain.py's.
tuner/views/best_print.py renders it (``print_best``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from optuna.trial import TrialState

from tuner import stats
from tuner.probe.ceiling import Ceiling
from tuner.study.facts import analysis
from tuner.study.facts.load_explained import LoadExplained, explain_study_load
from tuner.study.run.reader import trial_views
from tuner.study.state import StudyState, full_launched
from tuner.views.best_capacity import CapacityAnswer, capacity_answer
from tuner.views.best_entry import ConfigEntry, config_entry
from tuner.views.best_failures import FailuresAnswer, failures_answer
from tuner.views.best_final import FinalAnswer, final_answer
from tuner.views.best_gain import CouldHaveMissed, GainVsBaseline, could_have_missed
from tuner.views.best_limits import LimitsAnswer, limits_answer, objectives
from tuner.views.best_pareto import ParetoView, pareto_view
from tuner.views.best_screening import ScreeningAnswer, screening_answer
from tuner.views.best_topology import TopologyAnswer, topology_answer
from tuner.views.best_verdict import NotSettled, not_settled
from tuner.views.ceiling_summary import ceiling_summary
from tuner.views.hosts import StudyHardware, study_hardware
from tuner.views.nccl_tuner import NcclTunerTable, nccl_tuner_table
from tuner.views.probe_summary import ProbeSummary, probe_summary
from tuner.views.study_access import open_study

__all__ = [
    "BestReport",
    "ConfigEntry",
    "CouldHaveMissed",
    "GainVsBaseline",
    "TrialCounts",
    "answer_verdict",
    "best_report",
    "config_entry",
    "could_have_missed",
    "no_answer_sentence",
]


@dataclass(frozen=True)
class TrialCounts:
    """How many optuna trials ended in each state."""

    complete: int
    failed: int
    pruned: int
    running: int

    def to_json(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class BestReport:
    """The answer of `tuner best`."""

    study: str
    metric: str
    direction: stats.Direction
    concurrency: int
    confidence: float
    best: ConfigEntry | None
    recommended: ConfigEntry | None
    baseline: ConfigEntry | None
    noise: stats.NoiseEstimate | None
    stop_reason: str | None
    stop_detail: str | None
    trials: TrialCounts
    keep_defaults: bool | None = None
    """Whether the recommendation is the defaults; None while nothing is recommended."""
    gain_vs_baseline: GainVsBaseline | None = None
    """Set when a configuration other than the baseline is recommended."""
    probe: ProbeSummary | None = None
    """The all-reduce probe's floor, communication share and verdict (docs/probe.md)."""
    ceiling: Ceiling | None = None
    """With the probe: the bound from memory plus communication (views/ceiling_summary.py)."""
    nccl_tuner: NcclTunerTable | None = None
    """The per-size NCCL table of the probes (`tuner best --format nccl-tuner`)."""
    could_have_missed: CouldHaveMissed | None = None
    """Set when the recommendation is the defaults."""
    hardware: StudyHardware | None = None
    """The hosts and the hardware fingerprint the answer comes from; others left out."""
    objectives: tuple[dict[str, Any], ...] = ()
    """What the study optimises: metric, concurrency, direction (one entry per objective)."""
    limits: LimitsAnswer | None = None
    """The candidates against ``objective.subject_to`` (tuner/views/best_limits.py)."""
    pareto: ParetoView | None = None
    """Several objectives: the front of trusted configurations (tuner/views/best_pareto.py);
    ``recommended`` is then its recommendation, ``best`` the best on the first objective."""
    capacity: CapacityAnswer | None = None
    """With ``benchmark.capacity``: the answer's capacity searches (views/best_capacity.py)."""
    final: FinalAnswer | None = None
    """The final comparison the answer rests on, with the drift (views/best_final.py)."""
    screening: ScreeningAnswer | None = None
    """With ``screening:``: what screening searched and full launches decided."""
    topology: TopologyAnswer | None = None
    """The GPUs' topology the study ran on, and the settings vLLM ignores there."""
    verdict: str | None = None
    """The answer's verdict: confirmed, no_gain or not_settled (views/best_verdict.py);
    None while nothing is recommended. not_settled keeps the defaults until settled."""
    not_settled: NotSettled | None = None
    """With not_settled: the candidate, what it showed, and the run that would settle it."""
    load: LoadExplained | None = None
    """Why a full load of the defaults takes that long, and the lever most likely to cut it
    (tuner/study/facts/load_explained.py); None before a full load was healthy."""
    failures: FailuresAnswer | None = None
    """The failed launches by cause and what they taught (views/best_failures.py)."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object of `tuner best --format json` (optional keys only when set)."""
        out: dict[str, Any] = {
            "study": self.study,
            "metric": self.metric,
            "direction": self.direction,
            "concurrency": self.concurrency,
            "confidence": self.confidence,
            "best": _entry_json(self.best),
            "recommended": _entry_json(self.recommended),
            "baseline": _entry_json(self.baseline),
            "noise": self.noise.to_json() if self.noise is not None else None,
            "stop_reason": self.stop_reason,
            "stop_detail": self.stop_detail,
            "trials": self.trials.to_json(),
        }
        if self.verdict is not None:
            out["verdict"] = self.verdict
        if self.keep_defaults is not None:
            out["keep_defaults"] = self.keep_defaults
        if self.not_settled is not None:
            out["not_settled"] = self.not_settled.to_json()
        if self.gain_vs_baseline is not None:
            out["gain_vs_baseline"] = self.gain_vs_baseline.to_json()
        if self.probe is not None:
            out["probe"] = self.probe.to_json()
        if self.ceiling is not None:
            out["ceiling"] = self.ceiling.to_json()
        if self.nccl_tuner is not None:
            out["nccl_tuner"] = self.nccl_tuner.to_json()
        if self.could_have_missed is not None:
            out["could_have_missed"] = self.could_have_missed.to_json()
        if self.hardware is not None:
            out.update(self.hardware.to_json())
        out["objectives"] = list(self.objectives)
        out["constraints"] = self.limits.to_json() if self.limits is not None else None
        if self.pareto is not None:
            out["pareto"] = self.pareto.to_json()
        if self.capacity is not None:
            out["capacity"] = self.capacity.to_json()
        out["final"] = self.final.to_json() if self.final is not None else None
        out["screening"] = self.screening.to_json() if self.screening is not None else None
        out["topology"] = self.topology.to_json() if self.topology is not None else None
        out["failures"] = self.failures.to_json() if self.failures is not None else None
        out["load"] = self.load.to_json() if self.load is not None else None
        return out


def _entry_json(entry: ConfigEntry | None) -> dict[str, Any] | None:
    return entry.to_json() if entry is not None else None


def best_report(storage: str, study: str, *, fingerprint: str | None = None) -> BestReport:
    """The answer of ``study``: best, recommended and baseline, with noise and trial counts.

    Launches on one kind of hardware only (tuner/views/hosts.py): ``fingerprint``, else
    the kind with the most launches.
    """
    opened = open_study(storage, study)
    space = opened.space
    hardware = study_hardware(opened.store, study, fingerprint)
    user_attrs = opened.optuna_study.user_attrs
    facts = analysis.analyze(opened.store, space, fingerprint=hardware.fingerprint)
    facts = facts.with_looks(StudyState.from_attrs(user_attrs).final.looks)  # as sized
    states = [t.state for t in opened.optuna_study.get_trials(deepcopy=False)]
    views = trial_views(opened.optuna_study)
    row = opened.store.study(study)
    rec = facts.recommendation()
    best = facts.configs.get(rec.best) if rec else None
    recommended = facts.configs.get(rec.recommended) if rec else None
    reason = rec.reason if rec is not None else None
    front = pareto_view(facts)  # several objectives: their rule recommends
    if front is not None:
        recommended, reason = facts.configs[front.recommended], front.reason
        best = best or recommended
    baseline = facts.baseline
    recommended_entry = config_entry(space, recommended)
    keep_defaults = None
    if recommended_entry is not None and recommended is not None:
        recommended_entry = dataclasses.replace(recommended_entry, reason=reason)
        keep_defaults = baseline is not None and recommended is baseline
    verdict = answer_verdict(rec if front is None else None, keep_defaults)
    unsettled = None
    if verdict == stats.NOT_SETTLED and rec is not None and rec.unsettled is not None:
        candidate = facts.configs.get(rec.unsettled.candidate)
        unsettled = not_settled(
            rec.unsettled,
            trial=candidate.trials[0] if candidate is not None and candidate.trials else None,
            full_launches=full_launched(views),
            space_path=row.space_path if row is not None else None,
            storage=storage,
        )
    gain = None
    if recommended is not None and baseline is not None and recommended is not baseline:
        # The final comparison's interval where it decided (the guarantee's), else the search's.
        cmp = (
            rec.recommended_vs_baseline
            if rec is not None and rec.recommended_vs_baseline is not None and front is None
            else facts.compare(recommended, baseline)
        )
        gain = GainVsBaseline(
            rel_diff=cmp.rel_diff, ci_low=cmp.ci_low, ci_high=cmp.ci_high, verdict=cmp.verdict
        )
    return BestReport(
        study=study,
        metric=space.spec.objective.metric,
        direction=space.spec.direction,
        concurrency=space.spec.objective_concurrency,
        confidence=space.spec.stop.confidence,
        best=config_entry(space, best),
        recommended=recommended_entry,
        baseline=config_entry(space, baseline),
        noise=facts.noise,
        stop_reason=row.stop_reason if row else None,
        stop_detail=row.stop_detail if row else None,
        trials=TrialCounts(
            complete=states.count(TrialState.COMPLETE),
            failed=states.count(TrialState.FAIL),
            pruned=states.count(TrialState.PRUNED),
            running=states.count(TrialState.RUNNING),
        ),
        keep_defaults=keep_defaults,
        gain_vs_baseline=gain,
        probe=(probe := probe_summary(space, opened.optuna_study, recommended)),
        ceiling=ceiling_summary(space, probe, recommended, row.inventory if row else None),
        nccl_tuner=nccl_tuner_table(space, opened.optuna_study) if space.spec.probe else None,
        could_have_missed=(
            could_have_missed(facts)
            if keep_defaults and front is None and verdict != stats.NOT_SETTLED
            else None
        ),
        hardware=hardware,
        objectives=tuple(objectives(space)),
        limits=limits_answer(
            facts, named := {"baseline": baseline, "best": best, "recommended": recommended}
        ),
        pareto=front,
        capacity=capacity_answer(opened.store, space, named),
        final=final_answer(facts, rec) if front is None else None,
        screening=screening_answer(facts, launches := opened.store.launches(study)),
        topology=topology_answer(user_attrs),
        verdict=verdict,
        not_settled=unsettled,
        failures=failures_answer(views, space.spec),
        load=explain_study_load(opened.store, space, launches),
    )


def answer_verdict(rec: stats.Recommendation | None, keep_defaults: bool | None) -> str | None:
    """The verdict of an answer whose recommended configuration is (``keep_defaults``) or
    is not the defaults: the recommendation's (``rec``; None: with several objectives,
    from ``keep_defaults`` alone); None without an answer."""
    if keep_defaults is None:
        return None
    if rec is None:
        return stats.NO_GAIN if keep_defaults else stats.CONFIRMED
    outcome = rec.outcome
    if keep_defaults and outcome == stats.CONFIRMED:  # cannot happen: the defaults are no change
        return stats.NO_GAIN
    return outcome


def no_answer_sentence(report: BestReport) -> str:
    """Why ``report`` holds no answer, with the trial counts and where to look."""
    t = report.trials
    if report.limits is not None and report.limits.note is not None:
        return f"study {report.study!r}: {report.limits.note}; see them with: tuner trials"
    counts = f"{t.complete} complete, {t.failed} failed, {t.pruned} pruned, {t.running} running"
    if t.complete == 0:
        why = "has no completed trial yet"
    else:  # trials completed, but the defaults (what every answer is measured against) did not
        why = "has no answer yet: the defaults (the baseline) have no completed launch"
    return f"study {report.study!r} {why} ({counts}); see why with: tuner trials --study " + (
        report.study
    )
