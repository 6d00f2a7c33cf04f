"""Which message sizes to probe, and how many all-reduces a decode step makes.

Under tensor parallelism each layer of a decoder all-reduces its attention output and
its MLP output: two all-reduces per layer per decode step, each of ``batch x hidden_size
x bytes per element`` bytes, where the batch is the number of running streams (the
benchmark's concurrency level). A prefill step all-reduces ``prompt tokens x hidden_size x
bytes per element``: megabytes, where NCCL's best protocol is not the one of a few KB, so
the probe times those sizes too (``prefill``) for a per-size table (tuner/probe/per_size.py).
``probe_plan`` reads hidden_size and num_hidden_layers from the model's config.json
(tuner.space.model_limits) when the space says ``auto``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.space.model_limits import text_config
from tuner.space.probe_spec import ProbeSpec
from tuner.space.spec import BenchmarkSpec

_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")


class ProbePlanError(ValueError):
    """The space's probe cannot be sized here (no config.json for an ``auto``)."""


@dataclass(frozen=True)
class ProbePlan:
    """The sizes to probe and how they map to the benchmark's levels."""

    by_level: dict[int, int]
    """Concurrency level -> bytes of one all-reduce message at that batch."""
    sizes: tuple[int, ...]
    """Every size to probe, ascending (the levels' sizes, any extra the space lists, and
    the prefill sizes)."""
    allreduces_per_token: int
    """All-reduces of one decode step (per token of each stream): layers x per layer."""
    source: str
    """Where the figures came from, for messages: 'config.json (...)' or 'the space file'."""
    prefill: tuple[int, ...] = ()
    """The prefill sizes among ``sizes``: probed for the per-size table, never deciding."""

    def size_at(self, concurrency: int) -> int:
        return self.by_level[concurrency]


def probe_plan(
    probe: ProbeSpec, benchmark: BenchmarkSpec, model_config: Mapping[str, Any] | None
) -> ProbePlan:
    """Sizes per level and all-reduces per token; ProbePlanError says what is missing."""
    text = text_config(model_config) if model_config else {}
    where = str((model_config or {}).get("_tuner_config_path", "config.json"))
    levels = list(benchmark.concurrency)
    if isinstance(probe.sizes, list):
        by_level = dict(zip(levels, probe.sizes, strict=False))
        sizes = tuple(sorted(set(probe.sizes)))
        source = "the space file"
    else:
        hidden = _positive_int(text.get("hidden_size"))
        if hidden is None:
            raise ProbePlanError(
                "probe.sizes is 'auto' but the model's config.json is not on this machine "
                "(or has no hidden_size): list the message sizes in bytes, one per "
                "benchmark level, e.g. sizes: [hidden_size x 2 x 1, hidden_size x 2 x 8]"
            )
        by_level = {c: hidden * probe.bytes_per_element * c for c in levels}
        sizes = tuple(sorted(set(by_level.values())))
        source = f"{where} (hidden_size {hidden} x {probe.bytes_per_element} bytes x batch)"
    prefill = _prefill_sizes(probe, benchmark, _positive_int(text.get("hidden_size")))
    sizes = tuple(sorted(set(sizes) | set(prefill)))
    if isinstance(probe.layers, int):
        layers = probe.layers
    else:
        found = next((_positive_int(text.get(k)) for k in _LAYER_KEYS if text.get(k)), None)
        if found is None:
            raise ProbePlanError(
                "probe.layers is 'auto' but the model's config.json is not on this machine "
                "(or has no num_hidden_layers): set probe.layers to the model's layer count"
            )
        layers = found
    return ProbePlan(
        by_level=by_level,
        sizes=sizes,
        allreduces_per_token=layers * probe.allreduces_per_layer,
        source=source,
        prefill=prefill,
    )


def _prefill_sizes(
    probe: ProbeSpec, benchmark: BenchmarkSpec, hidden: int | None
) -> tuple[int, ...]:
    """The listed prefill sizes, or one prompt's all-reduce when config.json says the
    hidden size (without it, none: the prefill probe is an addition, never a failure)."""
    if isinstance(probe.prefill_sizes, list):
        return tuple(sorted(set(probe.prefill_sizes)))
    if hidden is None:
        return ()
    return (benchmark.prompt_tokens * hidden * probe.bytes_per_element,)


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, float) and value.is_integer() and value > 0:
        return int(value)
    return None
