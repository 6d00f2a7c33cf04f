"""A several-objective study's front, recommendation and confirmations (``objectives:``).

Joins the study's analysis (tuner/study/analysis.py: configurations, trust, limits, and
each configuration's estimate per objective) with the pure rules of tuner/stats/pareto.py.
The candidates are the *trusted* configurations: launched enough (the baseline, or
1 + stop.confirmations launches), meeting every limit beyond noise, measured on every
objective. `tuner best` shows their front; the sweep (tuner/study/controller.py) asks
what to confirm and whether the recommendable set grew (docs/statistics.md, "Several
objectives").
"""

from __future__ import annotations

from tuner import stats
from tuner.space.objectives import study_objectives
from tuner.stats.pareto import ParetoAnswer, ParetoCandidate, ParetoJudge
from tuner.study.analysis import SCREEN_CONFIDENCE, ConfigResult, StudyAnalysis


def judge_for(result: StudyAnalysis, *, confidence: float | None = None) -> ParetoJudge:
    """The study's objectives and test (``confidence``: the study's unless given)."""
    spec = result.space.spec
    objectives = study_objectives(spec)
    return ParetoJudge(
        names=tuple(o.name for o in objectives),
        directions=tuple(o.direction for o in objectives),
        min_gain=spec.stop.min_gain,
        confidence=spec.stop.confidence if confidence is None else confidence,
    )


def candidate(result: StudyAnalysis, config: ConfigResult) -> ParetoCandidate | None:
    """``config`` with its estimate per objective; None when one objective has none."""
    found = result.objective_estimates
    estimates = found.complete(config.config_hash) if found is not None else None
    if estimates is None:
        return None
    label = f"trial {config.trials[0]}" if config.trials else None
    return ParetoCandidate(config.config_hash, estimates, config.n_changed, label)


def trusted(result: StudyAnalysis) -> list[ParetoCandidate]:
    """The configurations the front is made of: confirmed, feasible, measured on all."""
    out = []
    for config in result.configs.values():
        if result.confirmed(config) and result.eligible(config):
            found = candidate(result, config)
            if found is not None:
                out.append(found)
    return out


def front(result: StudyAnalysis) -> ParetoAnswer | None:
    """The trusted configurations judged, and the recommendation; None without any."""
    candidates = trusted(result)
    if not candidates:
        return None
    baseline = result.baseline
    base = candidate(result, baseline) if baseline is not None else None
    return judge_for(result).judge(candidates, base)


def needs_confirmation(result: StudyAnalysis) -> list[ConfigResult]:
    """Configurations to launch again: not yet trusted (or not yet decided) and possibly
    on the front.

    A configuration that looks better than the defaults on at least one objective (the
    screening test, SCREEN_CONFIDENCE) and that no trusted configuration dominates is
    launched again until it is trusted (1 + stop.confirmations launches), and then, up to
    stop.confirmation_cap, while no objective shows its gain at full confidence. A trade
    (better on one objective, worse on another) is confirmed too: it may be on the front.
    """
    stop = result.space.spec.stop
    baseline = result.baseline
    if stop.confirmations <= 0 or baseline is None:
        return []
    base = candidate(result, baseline)
    if base is None:
        return []
    screen = judge_for(result, confidence=min(SCREEN_CONFIDENCE, stop.confidence))
    full = judge_for(result)
    front_now = trusted(result)
    wanted = []
    for config in result.configs.values():
        if config.is_baseline or result.limit_verdict(config) == "infeasible":
            continue
        extra = len(config.launches) - 1
        if extra >= stop.confirmation_cap:
            continue
        this = candidate(result, config)
        if this is None or not any(c.verdict == "better" for c in screen.versus(this, base)):
            continue
        if any(o.key != this.key and full.dominates(o, this) for o in front_now):
            continue
        decided = any(c.verdict == "better" for c in full.versus(this, base))
        if extra < stop.confirmations or not decided or not result.eligible(config):
            wanted.append(config)
    return wanted


def describe(result: StudyAnalysis, config: ConfigResult) -> str:
    """``trial 7 [max_num_seqs=256]: output_throughput@64 1,234 ± 12, ttft_ms_p99@64 ...``."""
    found = result.objective_estimates
    estimates = found.per_config.get(config.config_hash, ()) if found is not None else ()
    what = " ".join(f"{k}={v}" for k, v in config.changed.items()) or "defaults"
    values = ", ".join(
        f"{o.name} {e.mean:,.4g} ± {e.se:.2g}" if e is not None else f"{o.name} -"
        for o, e in zip(study_objectives(result.space.spec), estimates, strict=False)
    )
    return f"trial {config.trials[0]} [{what}]: {values}"


def estimate_of(result: StudyAnalysis, config_hash: str, index: int) -> stats.ConfigEstimate | None:
    """One configuration's estimate of objective ``index`` (None: not measured)."""
    found = result.objective_estimates
    estimates = found.per_config.get(config_hash) if found is not None else None
    return estimates[index] if estimates is not None else None
