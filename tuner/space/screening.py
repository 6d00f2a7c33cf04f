"""The ``screening:`` section: cheap launches that search, beside full ones that decide.

A screening launch is the server started with ``screening.args`` added to its command and
``screening.env`` to its environment: on vLLM ``--load-format dummy``, random weights, so
the minutes of reading the model from disk are skipped (vLLM's own
benchmarks/auto_tune/auto_tune.sh launches its trials so). What a study tunes (NCCL,
compilation, CUDA graphs, scheduling) acts on kernels, communication and batching, the same
whatever the weights are. Some settings act through the weights and cannot be judged on
random ones: speculative decoding (the drafts' acceptance depends on real weights), a
change of model, quantization or weights format. Those are launched at full fidelity only
(``screenable``), as is any param that says ``screen: false``.

docs/space-file.md ("screening") and docs/statistics.md ("Screening launches").
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import Field, field_validator, model_validator

from tuner.space.spec_base import StrictModel, argv_as_text, as_text
from tuner.vocabulary import DEFAULT


class ParamLike(Protocol):
    """What screening reads of a param (tuner/space/params_spec.py's ParamSpec, which imports this
    module: a protocol here keeps the two out of an import cycle)."""

    @property
    def env(self) -> str | None: ...
    @property
    def args(self) -> Sequence[str] | None: ...
    @property
    def screen(self) -> bool | None: ...


WEIGHT_FLAGS: tuple[str, ...] = (
    "--speculative-config",
    "--num-speculative-tokens",
    "--speculative-model",
    "--speculative-draft-tensor-parallel-size",
    "--model",
    "--quantization",
    "-q",
    "--load-format",
    "--revision",
    "--tokenizer",
)
"""vLLM flags that act through the weights: random weights cannot judge them."""
WEIGHT_ENV: tuple[str, ...] = ()
"""Environment variables that act through the weights (none known yet)."""
MOE_ROUTING_ENV = "VLLM_MOE_ROUTING_SIMULATION_STRATEGY"
"""vLLM's routing simulation (vllm/envs.py): a MoE's tokens sent to experts drawn at random
instead of by the router, which on random weights sends them all to the same few."""
MoeRoutingMode = Literal["auto", "uniform_random", "off"]


class ScreeningBenchmark(StrictModel):
    """A shorter benchmark for screening launches: the same levels and requests' shape as
    ``benchmark:``, with fewer rounds or fewer requests a level. A screening launch's value
    is compared only with other screening launches (the search's scale), and on a real box
    the noise between launches (a restart) dwarfs that of the rounds within one: the
    benchmark's minutes are the part of a screening launch that random weights do not cut.
    """

    rounds: int | None = Field(default=None, ge=1)
    requests: int | None = Field(default=None, ge=1)

    def changes(self) -> dict[str, int]:
        """The fields of ``benchmark:`` this replaces, and their values."""
        return {name: value for name, value in self.model_dump().items() if value is not None}


class ScreeningSpec(StrictModel):
    """What a screening launch adds to the server's command and environment, and its budget."""

    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    benchmark: ScreeningBenchmark | None = None
    """Overrides of ``benchmark:`` on screening launches (None: the same benchmark)."""
    max_launches: int = Field(default=40, ge=1)
    """Screening launches the study may make at most (``--trials`` counts full loads)."""
    baseline_launches: int = Field(default=1, ge=1, le=8)
    """Full-fidelity launches of the defaults when the study opens (beside the screening
    baseline's ``stop.baseline_launches``): they measure the bias between the fidelities."""
    patience: int | None = Field(default=None, ge=1)
    """Screening launches without a significant gain before the plateau stop; default twice
    ``stop.patience``: a screening launch costs minutes, a full one the model's load."""
    moe_routing: MoeRoutingMode = "auto"
    """``VLLM_MOE_ROUTING_SIMULATION_STRATEGY=uniform_random`` on screening launches: auto
    where the server is vLLM, its vLLM knows the variable and the model has experts
    (tuner/check/moe_routing.py); uniform_random always; off never."""

    @field_validator("args", mode="before")
    @classmethod
    def _args_as_text(cls, value: Any) -> Any:
        return argv_as_text(value, "[--load-format, dummy]")

    @field_validator("env", mode="before")
    @classmethod
    def _env_as_text(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): as_text(v) for k, v in value.items()}
        return value

    def adds_text(self) -> str:
        """What a screening launch adds: ``--load-format dummy`` (the args as a command line)
        and ``NAME=value`` for each variable, comma-separated."""
        parts = [shlex.join(self.args)] if self.args else []
        parts += [f"{name}={value}" for name, value in self.env.items()]
        return ", ".join(parts)

    @model_validator(mode="after")
    def _adds_something(self) -> ScreeningSpec:
        if not self.args and not self.env:
            raise ValueError(
                "adds nothing to a launch: give 'args: [--load-format, dummy]' (vLLM) or "
                "an 'env:', or leave the section out"
            )
        if self.moe_routing == "uniform_random" and MOE_ROUTING_ENV in self.env:
            raise ValueError(
                f"moe_routing: uniform_random and env.{MOE_ROUTING_ENV} both set the "
                f"routing of screening launches: keep one (env's value wins over auto)"
            )
        return self


def flag_name(arg: str) -> str:
    """The flag as vLLM reads it: ``--speculative-config={"n": 2}``,
    ``--speculative_config`` and ``--speculative-config.num_speculative_tokens=2`` are all
    ``--speculative-config`` (vLLM takes ``_`` for ``-`` and a dotted key of a JSON flag)."""
    name = arg.split("=", 1)[0]
    if name.startswith("--"):
        name = "--" + name[2:].split(".", 1)[0].replace("_", "-")
    return name


def weight_reason(param: ParamLike) -> str | None:
    """Why random weights cannot judge this param (its flag acts through the weights)."""
    for arg in param.args or ():
        if flag_name(arg) in WEIGHT_FLAGS:
            return f"{flag_name(arg)} acts through the weights"
    if param.env is not None and param.env in WEIGHT_ENV:
        return f"{param.env} acts through the weights"
    return None


def unscreenable_reason(param: ParamLike) -> str | None:
    """Why a param is launched at full fidelity only; None: screening can judge it."""
    if param.screen is False:
        return "screen: false"
    return weight_reason(param)


def unscreenable(params: Mapping[str, ParamLike]) -> dict[str, str]:
    """The params screening cannot judge, each with the reason."""
    found = {name: unscreenable_reason(p) for name, p in params.items()}
    return {name: why for name, why in found.items() if why is not None}


def screenable(params: Mapping[str, ParamLike], values: Mapping[str, Any]) -> bool:
    """A configuration screening can judge: it leaves every unscreenable param at default."""
    blocked = unscreenable(params)
    return not any(name in blocked and value != DEFAULT for name, value in values.items())
