"""The refusals before a launch, in order: a configuration not worth a model load is not loaded.

Every trial optuna starts passes through ``refusal`` before its server is launched
(tuner/study/run/trial.py); the first reason found is recorded and the trial is PRUNED
without a launch. In order:

1. a broken constraint of the space file (``constraints:``);
2. the model's shape refuses it (tuner/space/model_limits.py: TP against the heads, ...);
3. vLLM ignores a setting of it on these GPUs: the defaults' launch again
   (tuner/check/custom_allreduce.py: ``--disable-custom-all-reduce`` where vLLM's custom
   all-reduce is off anyway);
and for a search trial (not a retry of a dead worker's trial):
4. a duplicate: the same configuration was launched before;
5. failed before: a value or a combination that failed for its settings, or a suspect of
   such a failure beside untried values (tuner/study/policy/failed_before.py; ``failed``);
6. the probe: its all-reduce is slower than the default's, or fails, or it sets a param
   or value the probe closed (tuner/study/run/probe.py measures; the reasons are its);
7. the limits: proposed by TPE and likely to break one (tuner/study/policy/steering.py;
   the local search's proposals were steered before they were queued).

The failures, the probe and the limits are asked lazily (``failed``, ``probe``,
``limits``): they read the study's trials, cost a probe run or a model fit, and are only
worth it once the cheaper checks passed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tuner.check import custom_allreduce
from tuner.space import model_limits
from tuner.space.settings import Settings, violated_constraints
from tuner.space.spec import Space
from tuner.study import attrs
from tuner.telemetry.topology import Topology

Check = Callable[[], "str | None"]


@dataclass(frozen=True)
class Candidate:
    """A trial about to be launched: its settings and why it was queued."""

    settings: Settings
    role: str
    proposer: str | None
    retry: bool
    """A dead worker's trial queued again: launched as it was, whatever it repeats."""
    previous: int | None
    """Another trial that launched the same configuration, if any."""


def refusal(
    space: Space,
    candidate: Candidate,
    *,
    model_config: Mapping[str, Any] | None,
    probe: Check | None = None,
    limits: Check | None = None,
    topology: Topology | None = None,
    failed: Check | None = None,
) -> str | None:
    """Why ``candidate`` is not launched (every reason ends "not launched"), or None."""
    settings = candidate.settings
    broken = violated_constraints(space.spec, settings.params)
    if broken:
        return f"violates constraint {broken[0]}; not launched"
    refused = model_limits.settings_refusal(space, model_config, settings)
    if refused:
        return f"cannot start with this model: {refused}; not launched"
    ignored = _ignored(space, topology, settings)
    if ignored:
        return f"{ignored}: the defaults' launch again; skipped, not launched"
    if candidate.role != attrs.SEARCH or candidate.retry:
        return None
    if candidate.previous is not None:
        return f"same configuration as trial {candidate.previous}; not launched again"
    refused = failed() if failed is not None else None
    if refused:
        return refused
    found = probe() if probe is not None else None
    if found:
        return found
    if candidate.proposer == attrs.TPE and limits is not None:
        return limits()  # the local search's proposals were steered before they were queued
    return None


def _ignored(space: Space, topology: Topology | None, settings: Settings) -> str | None:
    """A setting vLLM ignores with this configuration's command on these GPUs."""
    argv, env = model_limits.baseline_argv(space)
    return custom_allreduce.refusal(
        space.spec, topology, settings.params, argv + list(settings.args), {**env, **settings.env}
    )
