"""Whether screening launches add ``VLLM_MOE_ROUTING_SIMULATION_STRATEGY=uniform_random``.

On random weights (``--load-format dummy``) a MoE router sends every token to nearly the
same experts, so a screening launch's step reads fewer experts and spends a larger share
in all-reduce than the real model's; vLLM's routing simulation draws each token's experts
uniformly instead, the trained router's spread on average (vllm/envs.py; vLLM's own
benchmark configurations set it). The rule, decided once from the space:

1. the user's own choice wins: ``screening.env``, ``server.env`` or a param setting the
   variable, then ``screening.moe_routing: off`` (never) or ``uniform_random`` (always);
2. ``auto`` (the default) adds it where all three hold: the server is vLLM (or tuner's
   simulator, which reads it as vLLM 0.32 does), the model's config.json (``probe.
   config_json``, else the command's model on this machine) has routed experts, and the
   server's vLLM knows the variable (its name in the vllm/envs.py of the server's
   interpreter, tuner/check/vllm_package.py). Anything unknown leaves it out.

Full launches never get it: they measure the trained router itself. `tuner check` says
the decision in one line (tuner/check/screening.py); the launch adds ``env()``
(tuner/trial/launch_spec.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.check.server_kind import server_kind
from tuner.check.vllm_package import vllm_package_dir
from tuner.errors import ConfigError
from tuner.probe.model_config import probe_model_config
from tuner.space.model_limits import baseline_argv, expert_count, model_argument
from tuner.space.screening import MOE_ROUTING_ENV
from tuner.space.spec import Space

STRATEGY = "uniform_random"
SINCE = (
    "vLLM reads it since vllm-project/vllm#21990 and lets it replace the router's choice "
    "since #28002, November 2025"
)
OFF_HINT = "screening.moe_routing: off turns it off"
ON_HINT = "screening.moe_routing: uniform_random adds it anyway"


@dataclass(frozen=True)
class MoeRouting:
    """The decision: whether screening launches add the variable, and why."""

    on: bool
    reason: str

    def env(self) -> dict[str, str]:
        """What a screening launch adds to its environment."""
        return {MOE_ROUTING_ENV: STRATEGY} if self.on else {}

    def sentence(self) -> str:
        """`tuner check`'s line."""
        if self.on:
            return f"screening launches add {MOE_ROUTING_ENV}={STRATEGY}: {self.reason}"
        return f"screening launches leave {MOE_ROUTING_ENV} out: {self.reason}"


_DECIDED: dict[tuple[str, str], MoeRouting] = {}


def decided_moe_routing(space: Space) -> MoeRouting:
    """:func:`moe_routing`, decided once a run for a space (the launches' path): the same
    file and spec get the same answer, however many screening launches ask."""
    key = (str(space.path.resolve()), space.spec.model_dump_json())
    if key not in _DECIDED:
        _DECIDED[key] = moe_routing(space)
    return _DECIDED[key]


def moe_routing(space: Space) -> MoeRouting:
    """The decision for this space's screening launches (see the module)."""
    spec = space.spec
    screening = spec.screening
    if screening is None:
        return MoeRouting(False, "no screening: section")
    explicit = _set_by_user(space)
    if explicit is not None:
        return MoeRouting(False, explicit)
    if screening.moe_routing == "off":
        return MoeRouting(False, "screening.moe_routing: off")
    if screening.moe_routing == STRATEGY:
        return MoeRouting(True, f"screening.moe_routing: {STRATEGY}; {OFF_HINT}")
    argv, env = baseline_argv(space)
    return _auto(space, argv, {**os.environ, **env})


def _set_by_user(space: Space) -> str | None:
    """Where the space sets the variable itself (its value then is the user's), or None."""
    spec = space.spec
    if spec.screening is not None and MOE_ROUTING_ENV in spec.screening.env:
        return f"screening.env sets it ({spec.screening.env[MOE_ROUTING_ENV]!r})"
    if MOE_ROUTING_ENV in spec.server.env:
        return "server.env sets it, for every launch"
    for name, param in spec.params.items():
        if param.env == MOE_ROUTING_ENV:
            return f"params.{name} sets it"
    return None


def _auto(space: Space, argv: Sequence[str], env: Mapping[str, str]) -> MoeRouting:
    kind = server_kind(space, argv)
    if kind == "other":
        return MoeRouting(False, f"not a vLLM server (auto adds it for vLLM only); {ON_HINT}")
    config = _model_config(space)
    if config is None:
        return MoeRouting(
            False,
            "the model's config.json is not on this machine, so whether it has experts is "
            f"unknown (probe.config_json can name it); {ON_HINT}",
        )
    name = _model_name(argv, config)
    experts = expert_count(config)
    if experts is None:
        return MoeRouting(False, f"{name} has no routed experts (config.json)")
    has = f"{name} has {experts} experts"
    if kind == "sim":
        return MoeRouting(True, f"{has} and the simulator reads it as vLLM 0.32 does; {OFF_HINT}")
    package = vllm_package_dir(argv, env)
    if package is None:
        return MoeRouting(
            False,
            f"{has}, but the server's vLLM package was not found from its command, so "
            f"whether it knows the variable is unknown; {ON_HINT}",
        )
    if not _knows(package):
        return MoeRouting(
            False,
            f"{has}, but the vLLM in {package} does not know the variable (its envs.py "
            f"has no {MOE_ROUTING_ENV}; {SINCE})",
        )
    return MoeRouting(True, f"{has} and this vLLM knows the variable; {OFF_HINT}")


def _model_config(space: Space) -> dict[str, Any] | None:
    try:
        return probe_model_config(space)
    except ConfigError:  # a bad probe.config_json: tuner check's probe item says so
        return None


def _model_name(argv: Sequence[str], config: Mapping[str, Any]) -> str:
    """The model as the user names it: the command's, else config.json's folder."""
    model = model_argument(argv)
    if model:
        return Path(model.rstrip("/")).name or model
    path = config.get("_tuner_config_path")
    return Path(str(path)).parent.name if path else "the model"


def _knows(package: Path) -> bool:
    try:
        return MOE_ROUTING_ENV in (package / "envs.py").read_text(errors="replace")
    except OSError:
        return False
