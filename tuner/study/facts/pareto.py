"""A several-objective study's front, recommendation and confirmations (``objectives:``).

Joins the study's analysis (tuner/study/facts/analysis.py: configurations, trust, limits, and
each configuration's estimate per objective) with the pure rules of tuner/stats/pareto.py.
The candidates are the *trusted* configurations: launched enough (the baseline, or
1 + stop.confirmations launches), meeting every limit beyond noise, measured on every
objective. `tuner best` shows their front; the several-objective goal of the policy
(tuner/study/policy/pareto_goal.py) asks what to confirm and whether the recommendable set
grew (docs/statistics.md, "Several objectives").
"""

from __future__ import annotations

from tuner import stats
from tuner.space.objectives import study_objectives
from tuner.stats.pareto import ParetoAnswer, ParetoCandidate, ParetoJudge
from tuner.study.facts.analysis import ConfigResult, StudyAnalysis


def judge_for(facts: StudyAnalysis, *, confidence: float | None = None) -> ParetoJudge:
    """The study's objectives and test (``confidence``: the study's unless given)."""
    spec = facts.space.spec
    objectives = study_objectives(spec)
    return ParetoJudge(
        names=tuple(o.name for o in objectives),
        directions=tuple(o.direction for o in objectives),
        min_gain=spec.stop.min_gain,
        confidence=spec.stop.confidence if confidence is None else confidence,
    )


def candidate(facts: StudyAnalysis, config: ConfigResult) -> ParetoCandidate | None:
    """``config`` with its estimate per objective; None when one objective has none."""
    found = facts.objective_estimates
    estimates = found.complete(config.config_hash) if found is not None else None
    if estimates is None:
        return None
    label = f"trial {config.trials[0]}" if config.trials else None
    return ParetoCandidate(config.config_hash, estimates, config.n_changed, label)


def trusted(facts: StudyAnalysis) -> list[ParetoCandidate]:
    """The configurations the front is made of: confirmed, feasible, measured on all."""
    out = []
    for config in facts.configs.values():
        if facts.confirmed(config) and facts.eligible(config):
            found = candidate(facts, config)
            if found is not None:
                out.append(found)
    return out


def front(facts: StudyAnalysis) -> ParetoAnswer | None:
    """The trusted configurations judged, and the recommendation; None without any."""
    candidates = trusted(facts)
    if not candidates:
        return None
    baseline = facts.baseline
    base = candidate(facts, baseline) if baseline is not None else None
    return judge_for(facts).judge(candidates, base)


def describe(facts: StudyAnalysis, config: ConfigResult) -> str:
    """``trial 7 [max_num_seqs=256]: output_throughput@64 1,234 ± 12, ttft_ms_p99@64 ...``."""
    found = facts.objective_estimates
    estimates = found.per_config.get(config.config_hash, ()) if found is not None else ()
    what = " ".join(f"{k}={v}" for k, v in config.changed.items()) or "defaults"
    values = ", ".join(
        f"{o.name} {e.mean:,.4g} ± {e.se:.2g}" if e is not None else f"{o.name} -"
        for o, e in zip(study_objectives(facts.space.spec), estimates, strict=False)
    )
    return f"trial {config.trials[0]} [{what}]: {values}"


def estimate_of(facts: StudyAnalysis, config_hash: str, index: int) -> stats.ConfigEstimate | None:
    """One configuration's estimate of objective ``index`` (None: not measured)."""
    found = facts.objective_estimates
    estimates = found.per_config.get(config_hash) if found is not None else None
    return estimates[index] if estimates is not None else None
