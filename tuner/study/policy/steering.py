"""Steer the local search away from settings the data says will break a limit.

The local search (tuner/study/policy/local_search.py) models only the objective: once a setting that
buys throughput is seen to break ``objective.subject_to`` (a TTFT limit, say), it would
keep proposing it with other settings, each such launch wasted. Here each limit gets the
same kind of model the search fits to the objective (tuner/study/effects/model.py
``EffectModel``), a sparse main-effects regression of log(metric) on the settings, fitted
to every measured launch's value of the limit's metric (tuner/study/facts/limit_data.py:
the mean over rounds at the limit's level), each launch weighed by that metric's own noise
(between launches, pooled over repeated configurations as the limits are judged, and
within).

A candidate is **likely infeasible** when the model's posterior probability that its
mean breaks a limit exceeds STEER_CONFIDENCE. The policy asks before it decides a
proposal (``propose_avoiding``) and asks the search again, without it, when it is; a
configuration optuna's TPE proposes is asked about too (tuner/study/gate.py), and not
launched.

Two choices, and why:

- The objective's model expects effects of a few % (PRIOR_EFFECT_SD on the log);
  a latency setting can move a p99 by several times (slo-trade's 4x). The limit model is
  fitted on ``scale * log(value)`` with ``scale = PRIOR_EFFECT_SD / LIMIT_EFFECT_SD``, so
  the same prior reads as LIMIT_EFFECT_SD on the log of the metric: the model class is
  reused through its public API, only the units change.
- STEER_CONFIDENCE = 0.9: a skipped configuration is never launched by the local search
  (optuna's TPE, which reads the limits as constraints, may still try it), so a skip needs
  the model to be confident; but 0.9 rather than the study's 0.95 one-sided confidence,
  because a launch that breaks the limit costs a whole launch and is never the answer.
  Settings the model has not seen are drawn from the prior, which rarely reaches 0.9:
  untried values are never steered away from on the strength of the prior alone.

A metric that is 0 (an error rate with no error) has no logarithm: such launches are
left out, and a limit with no positive value on record steers nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tuner import stats
from tuner.space.limits import MetricLimit
from tuner.space.settings import settings_from_params
from tuner.space.spec import Scalar, SpaceSpec
from tuner.study.effects.model import PRIOR_EFFECT_SD, EffectModel, Observation
from tuner.study.facts.limit_data import LimitData

STEER_CONFIDENCE = 0.9
"""Posterior probability of breaking a limit above which a proposal is skipped."""
LIMIT_EFFECT_SD = 1.0
"""Prior sd of one setting's effect on log(limit metric), when it has one: a factor of e."""
MAX_SKIPS = 20
"""Proposals skipped in a row before the local search gives way to optuna's TPE."""


@dataclass(frozen=True)
class LimitModel:
    """One limit's effect model and its posterior draws."""

    limit: MetricLimit
    model: EffectModel
    draws: np.ndarray
    scale: float

    def p_break(self, params: Mapping[str, Scalar]) -> float:
        """The posterior probability that a configuration's mean breaks the limit."""
        log_value = (self.model.features(params) @ self.draws.T) / self.scale
        threshold = math.log(self.limit.value)
        broken = log_value > threshold if self.limit.op == "<=" else log_value < threshold
        return float(np.mean(broken))


@dataclass(frozen=True)
class LimitSteering:
    """Every limit's model; ``likely_breaks`` judges a candidate."""

    models: tuple[LimitModel, ...]

    def likely_breaks(self, params: Mapping[str, Scalar]) -> str | None:
        """Why ``params`` likely breaks a limit (the first, with its probability), or None."""
        for m in self.models:
            p = m.p_break(params)
            if p > STEER_CONFIDENCE:
                return f"{m.limit.text} (broken with probability {p:.0%})"
        return None


def fit_steering(
    data: Sequence[LimitData], spec: SpaceSpec, rng: np.random.Generator
) -> LimitSteering | None:
    """The limits' models from their measurements (``facts.limit_data``); None without any."""
    if not data:
        return None
    maximizing = _maximizing(spec)  # the model's score is then the metric's own log
    models = []
    for found in data:
        model = EffectModel(maximizing)
        model.observe(_scaled(found.launches, found.noise))
        models.append(LimitModel(found.limit, model, model.draws(rng), _SCALE))
    return LimitSteering(tuple(models))


def propose_avoiding(
    propose: Callable[[set[str]], dict[str, Scalar] | None],
    steering: LimitSteering | None,
    spec: SpaceSpec,
    exclude: set[str],
) -> tuple[dict[str, Scalar] | None, list[str]]:
    """``propose(exclude)`` again, each time without the last proposal, while the proposal
    likely breaks a limit; the proposal (None: none left, or MAX_SKIPS skipped) and, for
    each one skipped, a sentence saying which settings and why."""
    skipped: list[str] = []
    excluded = set(exclude)
    for _ in range(MAX_SKIPS + 1):
        params = propose(excluded)
        why = steering.likely_breaks(params) if steering and params is not None else None
        if params is None or why is None:
            return params, skipped
        settings = settings_from_params(spec, params)
        changed = " ".join(f"{k}={v}" for k, v in settings.changed.items()) or "the defaults"
        skipped.append(f"not proposing {changed}: it likely breaks {why}")
        excluded.add(settings.config_hash)
    return None, skipped


_SCALE = PRIOR_EFFECT_SD / LIMIT_EFFECT_SD


def _scaled(
    launches: Sequence[tuple[Mapping[str, Scalar], stats.LaunchEstimate]],
    noise: stats.NoiseEstimate,
) -> list[Observation]:
    """Observations of ``value ** _SCALE`` (see the module): log effects shrink by _SCALE,
    and so does the noise of the log, the relative variance by _SCALE squared."""
    out = []
    for params, launch in launches:
        rel_var = noise.var + stats.launch_within_var(launch, noise.within_var) / launch.mean**2
        value = launch.mean**_SCALE
        out.append(Observation(params, value, value**2 * _SCALE**2 * rel_var))
    return out


def _maximizing(spec: SpaceSpec) -> SpaceSpec:
    objective = spec.objective.model_copy(update={"direction": "maximize"})
    return spec.model_copy(update={"objective": objective})


def refusal(
    data: Sequence[LimitData], spec: SpaceSpec, params: Mapping[str, Scalar], seed: int
) -> str | None:
    """Why a configuration optuna's TPE proposed is not launched (it likely breaks a
    limit), or None: TPE reads the limits only as soft constraints, and would otherwise
    launch what the local search just skipped."""
    found = fit_steering(data, spec, np.random.default_rng(seed))
    why = found.likely_breaks(params) if found is not None else None
    return f"likely breaks {why}; not launched" if why else None
