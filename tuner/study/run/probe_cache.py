"""One probe run of one NCCL setting, and what the study keeps of it.

The space's probe command (``CommandProbe``) runs with a trial's environment; each result,
or why it failed, is a ``Probed``, cached in the study by the NCCL part of the environment
the server would get (``nccl_env``), so a resumed study or a second worker never probes
the same NCCL setting twice (tuner/study/run/probe.py). Also: what a decode step costs by
the objective's measure (``decode_step_s``), to weigh an all-reduce against it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.nccl import is_nccl_variable
from tuner.probe.run import ProbeResult, child_env, measure, probe_argv
from tuner.probe.sizes import ProbePlan
from tuner.space.model_limits import INSPECT_PORT, inspect_names
from tuner.space.settings import settings_from_params
from tuner.space.spec import Scalar, Space
from tuner.trial.runner import launch_spec_for

ProbeRunner = Callable[[Mapping[str, str], frozenset[str]], ProbeResult]
"""Run the probe with a trial's env (set) and unset variables; ProbeError on failure."""


class CommandProbe:
    """The space's probe command, run with the trial's environment."""

    def __init__(self, space: Space, plan: ProbePlan) -> None:
        assert space.spec.probe is not None
        self.probe = space.spec.probe
        names = inspect_names(space)
        self.argv = probe_argv(self.probe, plan.sizes, names)
        self.sizes = plan.sizes

    def __call__(self, env: Mapping[str, str], unset: frozenset[str]) -> ProbeResult:
        return measure(
            self.argv,
            env=child_env(env, unset),
            sizes=self.sizes,
            repeats=self.probe.repeats,
            timeout_s=self.probe.timeout_s,
        )


@dataclass(frozen=True)
class Probed:
    """One probe of one NCCL setting: its result, or why it failed."""

    key: str
    result: ProbeResult | None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.result is None:
            return {"error": self.error}
        return self.result.to_json()

    @classmethod
    def from_json(cls, key: str, data: Mapping[str, Any]) -> Probed:
        if "error" in data:
            return cls(key, None, str(data["error"]))
        return cls(key, ProbeResult.from_json(data))


def decode_step_s(space: Space, objective_value: float) -> float | None:
    """Seconds of one decode step the objective implies, when its metric says it."""
    metric = space.spec.objective.metric
    if objective_value <= 0 or not math.isfinite(objective_value):
        return None
    if metric == "output_throughput":
        return space.spec.objective_concurrency / objective_value
    if metric.startswith(("tpot_ms_", "itl_ms_")):
        return objective_value / 1000.0
    return None


def nccl_key(space: Space, params: Mapping[str, Scalar]) -> str:
    """The NCCL part of the environment the server would get: the probe cache's key."""
    return json.dumps(nccl_env(space, params), sort_keys=True)


def nccl_env(space: Space, params: Mapping[str, Scalar]) -> dict[str, str]:
    """The NCCL variables the server would get with ``params``: the probe cache's key."""
    settings = settings_from_params(space.spec, params)
    launch = launch_spec_for(space, settings, port=INSPECT_PORT, trial_dir=scratch_dir(space))
    return {k: v for k, v in launch.env.items() if is_nccl_variable(k)}


def scratch_dir(space: Space) -> Path:
    """A trial directory for placeholders only: nothing is written there."""
    return Path(inspect_names(space)["trial_dir"])


def rel_sd(values: tuple[float, ...]) -> float:
    mean = math.fsum(values) / len(values)
    if len(values) < 2 or mean == 0:
        return 0.0
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)) / mean
