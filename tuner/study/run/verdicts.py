"""A verdict per trial, in words, for optuna-dashboard and the report.

A trial's verdict is what its launch says against the defaults (the baseline): the
gain with its interval and whether it is better, worse or within noise; or why it
failed, was pruned or was not launched. ``measured_verdict`` is written onto a trial
when its launch ends (a finished optuna trial takes no more user attrs); ``final``
verdicts, from the whole study's analysis, go onto the study (``attrs.VERDICTS``) at
the end of `tuner run` and by `tuner report`, with the answer's sentence
(``attrs.ANSWER``): a later launch of the same configuration or a new best changes them.
"""

from __future__ import annotations

from collections.abc import Sequence

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.study import attrs
from tuner.study.facts import analysis, pareto


def config_verdict(facts: analysis.StudyAnalysis, config: analysis.ConfigResult) -> str:
    """One configuration against the defaults: '+3.1% ± 1.2% (faster; ...): better'."""
    baseline = facts.baseline
    if config.is_baseline:
        return "the defaults (baseline)"
    if baseline is None:
        return "measured; the defaults have no completed launch to compare with yet"
    per_gpu = " per GPU" if facts.space.spec.objective.per_gpu else ""
    return f"vs the defaults{per_gpu}: " + facts.compare(config, baseline).describe()


def measured_verdict(facts: analysis.StudyAnalysis, config_hash: str) -> str | None:
    """The verdict of a configuration just measured (None when it has no completed launch)."""
    config = facts.configs.get(config_hash)
    return config_verdict(facts, config) if config is not None else None


def final_verdicts(facts: analysis.StudyAnalysis, trials: Sequence[FrozenTrial]) -> dict[int, str]:
    """Every trial's verdict from the whole study: roles in the answer first, then the
    comparison with the defaults, or why it has no measurement."""
    rec = facts.recommendation()
    named: dict[str, list[str]] = {}
    if rec is not None:
        named.setdefault(rec.best, []).append("best")
        named.setdefault(rec.recommended, []).append("recommended")
    # A trial's configuration from its completed launch (the store), not from its attrs.
    by_trial = {n: c for c in facts.configs.values() for n in c.trials}
    out: dict[int, str] = {}
    for trial in trials:
        config = by_trial.get(trial.number)
        reason = trial.user_attrs.get(attrs.REASON)
        if trial.state == TrialState.COMPLETE and config is not None:
            head = " and ".join(named.get(config.config_hash, []))
            verdict = config_verdict(facts, config)
            out[trial.number] = f"{head}: {verdict}" if head else verdict
        elif trial.state == TrialState.COMPLETE and trial.user_attrs.get(attrs.ROLE) == attrs.FINAL:
            out[trial.number] = "a launch of the final comparison: the answer rests on these"
        elif trial.state == TrialState.PRUNED:  # its reason says pruned or not launched
            out[trial.number] = str(reason or "pruned; no reason recorded")
        elif trial.state == TrialState.FAIL:
            out[trial.number] = f"failed: {reason or 'no reason recorded'}"
        else:
            out[trial.number] = trial.state.name.lower()
    return out


def answer_sentence(facts: analysis.StudyAnalysis) -> str:
    """The study's answer in one sentence: what to deploy, or keep the defaults (with
    several objectives, the rule of tuner/stats/pareto.py)."""
    if facts.objective_estimates is not None:
        answer = pareto.front(facts)
        if answer is not None:
            return answer.reason
    rec = facts.recommendation()
    if rec is None:
        return "no answer yet: the defaults (the baseline) have no completed launch"
    return rec.reason


def record_final(study: optuna.Study, facts: analysis.StudyAnalysis) -> dict[int, str]:
    """Write the final verdicts and the answer onto the study (its user attrs)."""
    verdicts = final_verdicts(facts, study.get_trials(deepcopy=False))
    # JSON object keys are strings: the dashboard shows them as they are stored.
    study.set_user_attr(attrs.VERDICTS, {str(k): v for k, v in verdicts.items()})
    study.set_user_attr(attrs.ANSWER, answer_sentence(facts))
    return verdicts
