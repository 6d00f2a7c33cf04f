"""The space file's ``probe:`` section: a cheap all-reduce measurement before each launch.

Kept apart from tuner/space/space_spec.py (which holds it as ``SpaceSpec.probe``): the probe's
command, message sizes and model shape are read only by tuner/probe/ (docs/probe.md).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator

from tuner.space.spec_base import StrictModel, argv_as_text

PROBE_PLACEHOLDERS = ("python", "space_dir", "study_dir", "config", "sizes", "repeats")
"""What a probe command may name in braces (docs/probe.md); ``{sizes}`` is comma-separated."""


class ProbeSpec(StrictModel):
    """A cheap measurement run before each launch: an argv printing all-reduce times.

    It runs with the trial's environment and prints one JSON object on stdout,
    ``{"sizes": {"<bytes>": <microseconds per all-reduce>}}``; see docs/probe.md.
    """

    command: list[str] = Field(min_length=1)
    sizes: Literal["auto"] | list[int] = "auto"
    prefill_sizes: Literal["auto"] | list[int] = "auto"
    """The prefill all-reduces: ``auto`` is benchmark.prompt_tokens x hidden_size x bytes
    per element when config.json is here (none without it); ``[]`` probes none."""
    repeats: int = Field(default=5, ge=2)
    layers: Literal["auto"] | int = "auto"
    allreduces_per_layer: int = Field(default=2, ge=1)
    bytes_per_element: int = Field(default=2, ge=1)
    timeout_s: float = Field(default=120, gt=0)
    comm_share: Literal["auto"] | float = "auto"
    memory_bandwidth_gbps: float | None = Field(default=None, gt=0)
    """GB/s per GPU for the ceiling's memory floor; overrides `tuner probe membw`'s figure."""
    config_json: str | None = None
    """A config.json (or the folder holding it), relative to the space file, for a model
    whose own is not on this machine (the simulator's)."""

    @field_validator("command", mode="before")
    @classmethod
    def _command_as_text(cls, value: Any) -> Any:
        return argv_as_text(
            value,
            "['{python}', -m, tuner, probe, allreduce, --sizes, '{sizes}', --repeats, '{repeats}']",
        )

    @field_validator("command")
    @classmethod
    def _known_placeholders(cls, value: list[str]) -> list[str]:
        for arg in value:
            for name in re.findall(r"\{(\w+)\}", arg):
                if name not in PROBE_PLACEHOLDERS:
                    raise ValueError(
                        f"unknown placeholder {{{name}}} in {arg!r}; a probe command may use "
                        + ", ".join("{" + p + "}" for p in PROBE_PLACEHOLDERS)
                    )
        return value

    @field_validator("sizes")
    @classmethod
    def _positive_sizes(cls, value: Literal["auto"] | list[int]) -> Literal["auto"] | list[int]:
        if isinstance(value, list) and (not value or any(v < 1 for v in value)):
            raise ValueError(
                "list the message sizes in bytes (positive integers, one per benchmark "
                "concurrency level, e.g. [14336, 114688]), or write 'auto' to compute "
                "them from the model's config.json"
            )
        return value

    @field_validator("prefill_sizes")
    @classmethod
    def _positive_prefill(cls, value: Literal["auto"] | list[int]) -> Literal["auto"] | list[int]:
        if isinstance(value, list) and any(v < 1 for v in value):
            raise ValueError(
                "list the prefill message sizes in bytes (positive integers: prompt tokens x "
                "hidden_size x bytes per element, e.g. [3670016] for 256 tokens of Kimi "
                "K2.5), [] for none, or write 'auto' to compute them from config.json"
            )
        return value

    @field_validator("layers")
    @classmethod
    def _positive_layers(cls, value: Literal["auto"] | int) -> Literal["auto"] | int:
        if isinstance(value, int) and value < 1:
            raise ValueError("a layer count is a positive integer, or 'auto' (from config.json)")
        return value

    @field_validator("comm_share")
    @classmethod
    def _share_in_range(cls, value: Literal["auto"] | float) -> Literal["auto"] | float:
        if not isinstance(value, str) and not 0 < value <= 1:
            raise ValueError(
                "the share of a decode step spent in all-reduce is within (0, 1], e.g. 0.6; "
                "or 'auto' (from the probe and the baseline's measurement)"
            )
        return value
