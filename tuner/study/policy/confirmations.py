"""Which configurations a single-objective study launches again (confirmations).

A configuration that looks better than the incumbent (a screening test, looser than the
final one) is launched again until it is confirmed (1 + stop.confirmations launches), and
then, up to stop.confirmation_cap, while the verdict at full confidence stays open; one
whose limits are uncertain is launched again while it leads; and the one the model of
effects is surest of, when it is sure enough (``model_backed``). Pure: the study's facts
in, configurations out (tuner/study/policy/single_goal.py turns them into launches).
"""

from __future__ import annotations

import numpy as np

from tuner import stats
from tuner.space.spec import SpaceSpec
from tuner.study.effects.model import EffectModel
from tuner.study.facts.analysis import ConfigResult, StudyAnalysis

SCREEN_CONFIDENCE = 0.8
"""Confidence of the screening test that earns a configuration a confirmation launch."""


def needs_confirmation(facts: StudyAnalysis, against: str | None) -> list[ConfigResult]:
    """Configurations to launch again: they pass the screening test against ``against``
    and are not confirmed yet, or are confirmed but still not significantly better.

    ``against`` is the sweep's incumbent (the configuration whose significant gains
    reset the patience); without one, the best. Screening against the incumbent keeps
    the two notions in step: a configuration that looks better than the incumbent
    gets the launch that can make it the new incumbent.

    Screening is looser than the final test (SCREEN_CONFIDENCE, not stop.confidence):
    a launch is cheap next to missing a real gain, and the confirmation launches
    then decide at full confidence whether it becomes the best. When they leave the
    verdict open, more launches follow, up to ``stop.confirmation_cap``: a real
    2.5% gain on a machine with 1% noise needs about three launches to show.
    """
    stop = facts.space.spec.stop
    if stop.confirmations <= 0:
        return []
    reference = _reference(facts, against)
    if reference is None:  # with limits: nothing confirmed meets them yet
        return uncertain_leaders(facts, None) + _unconfirmed_feasible(facts)
    wanted = uncertain_leaders(facts, reference)
    for c in facts.configs.values():
        if c.config_hash == reference.config_hash or c.is_baseline or not facts.eligible(c):
            continue  # a configuration that breaks a limit is not worth confirming
        extra = len(c.launches) - 1
        if extra >= stop.confirmation_cap:
            continue
        looks_better = stats.is_significant_gain(
            c.estimate,
            reference.estimate,
            direction=facts.direction,
            min_gain=stop.min_gain,
            confidence=min(SCREEN_CONFIDENCE, stop.confidence),
        )
        if looks_better and (
            extra < stop.confirmations or facts.compare(c, reference).verdict != "better"
        ):
            wanted.append(c)
    return wanted


def _reference(facts: StudyAnalysis, against: str | None) -> ConfigResult | None:
    """What a configuration must look better than: the incumbent (while it meets the
    limits), else the best."""
    reference = facts.configs.get(against) if against else None
    if reference is not None and not facts.eligible(reference):
        reference = None  # more launches showed it breaks a limit
    return reference or facts.best


def model_backed(
    facts: StudyAnalysis, against: str | None, spec: SpaceSpec, rng: np.random.Generator
) -> ConfigResult | None:
    """The unconfirmed configuration that the model of effects (every launch, pooled) is
    surest beats the incumbent by ``min_gain``, when it is SCREEN_CONFIDENCE sure.

    The screening test judges a configuration by its own launches alone; the model also
    counts the launches that share its settings. Why: while the noise is estimated high
    from few launches, many single launches that all carry the same small gains can each
    fail the screening test, so none is confirmed and the candidate stays short of the
    optimum; pooled, the model sees the shared settings' effect (docs/measurements/
    screening.md has the studies). The model's chance is computed over ``spec`` (the
    probe's narrowed space)."""
    stop = facts.space.spec.stop
    sign = 1.0 if facts.direction == "maximize" else -1.0
    # Against the better of the incumbent and the best: once one configuration with those
    # settings is confirmed and leads, its variants are no longer worth a launch each.
    references = [r for r in (_reference(facts, against), facts.best) if r is not None]
    if stop.confirmations <= 0 or not references:
        return None
    reference = max(references, key=lambda r: sign * r.estimate.mean)
    unconfirmed = [
        c
        for c in facts.configs.values()
        if c is not reference and not facts.confirmed(c) and facts.eligible(c)
    ]
    if not unconfirmed:
        return None
    model = EffectModel(spec)
    model.observe(facts.observations())
    draws = model.draws(rng)
    chance = model.chances_of_gain(
        draws, [c.params for c in unconfirmed], reference.params, stop.min_gain
    )
    best = int(np.argmax(chance))
    confidence = min(SCREEN_CONFIDENCE, stop.confidence)
    return unconfirmed[best] if chance[best] >= confidence else None


def uncertain_leaders(facts: StudyAnalysis, reference: ConfigResult | None) -> list[ConfigResult]:
    """Configurations whose limits are uncertain but whose mean beats ``reference`` (or
    any, without one): launched again, up to the confirmation cap, so that the noise
    decides no longer whether they may be recommended."""
    stop = facts.space.spec.stop
    sign = 1.0 if facts.direction == "maximize" else -1.0
    wanted = []
    for c in facts.configs.values():
        if facts.limit_status(c) != "uncertain" or c is reference:
            continue
        first = stop.baseline_launches if c.is_baseline else 1
        if len(c.launches) - first >= stop.confirmation_cap:
            continue
        if reference is None or sign * c.estimate.mean > sign * reference.estimate.mean:
            wanted.append(c)
    return wanted


def _unconfirmed_feasible(facts: StudyAnalysis) -> list[ConfigResult]:
    """Without any confirmed configuration meeting the limits: those that meet them and
    were launched too few times to be trusted."""
    return [
        c
        for c in facts.configs.values()
        if facts.limit_checks and not c.is_baseline and facts.eligible(c) and not facts.confirmed(c)
    ]
