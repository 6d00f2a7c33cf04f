"""The space file's ``benchmark:`` section: the streaming benchmark every trial runs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from tuner.space.slo import CapacitySpec, check_goodput
from tuner.space.spec_base import StrictModel


class BenchmarkSpec(StrictModel):
    """The fixed streaming benchmark every trial runs."""

    api: Literal["completions", "chat"] = "completions"
    model: str | None = None  # default: the first id of /v1/models
    prompt_tokens: int = Field(default=256, ge=1)
    max_tokens: int = Field(default=256, ge=1)
    concurrency: list[int] = Field(default_factory=lambda: [1], min_length=1)
    requests: int = Field(default=16, ge=1)
    warmup: int = Field(default=2, ge=0)
    rounds: int = Field(default=3, ge=1)
    ignore_eos: bool = True
    request_timeout_s: float = Field(default=600, gt=0)
    max_error_rate: float = Field(default=0.0, ge=0, le=1)
    cpus: list[int] | None = None
    goodput: dict[str, float] | None = None  # SLOs in ms (tuner/space/slo.py)
    capacity: CapacitySpec | None = None  # the concurrency search per round

    _goodput = field_validator("goodput")(check_goodput)

    @field_validator("concurrency", mode="before")
    @classmethod
    def _one_level(cls, value: Any) -> Any:
        return [value] if isinstance(value, int) else value

    @field_validator("concurrency")
    @classmethod
    def _positive_levels(cls, value: list[int]) -> list[int]:
        if any(c < 1 for c in value):
            raise ValueError("concurrency levels are positive integers")
        return value
