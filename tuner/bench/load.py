"""What load one level applies: ``LoadSpec``, and how a space file's benchmark maps onto it.

Two shapes. Closed loop (``rate`` is None): ``concurrency`` streams, each sending its
next request as soon as the last one ends. Open loop (``rate`` set): Poisson arrivals at
``rate`` requests/s, at most ``concurrency`` in flight (arrivals beyond wait for a slot).
A level ends after ``requests`` requests, or after ``duration_s`` seconds of sending
(requests in flight then finish and count).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tuner.errors import ConfigError
from tuner.space.spec import BenchmarkSpec


@dataclass(frozen=True)
class LoadSpec:
    """The load of one level.

    ``workers`` is the number of client processes (0: one, and more if it saturates);
    ``cpus`` pins the client to those cores for the level (worker ``i`` to the ``i``-th),
    so that nothing else crowds it; ``extra_body`` is merged into every request body.
    ``first_index`` is the prompt index of the level's first measured request: each
    measured window of a launch starts past the ones before (``PromptCursor``), so that
    no prompt is sent twice to one server and hits its prefix cache.
    """

    model: str
    api: Literal["completions", "chat"] = "completions"
    prompt_tokens: int = 256
    max_tokens: int = 256
    ignore_eos: bool = True
    timeout_s: float = 600.0
    concurrency: int = 1
    requests: int | None = None  # default: 16 unless duration_s is given
    duration_s: float | None = None
    rate: float | None = None
    warmup: int = 2
    prompts_file: str | Path | None = None
    seed: int = 0
    workers: int = 0
    cpus: tuple[int, ...] | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    first_index: int = 0

    def __post_init__(self) -> None:
        if self.api not in ("completions", "chat"):
            raise ConfigError(f"api must be 'completions' or 'chat', not {self.api!r}")
        if self.concurrency < 1:
            raise ConfigError("concurrency must be at least 1")
        if self.requests is not None and self.duration_s is not None:
            raise ConfigError("give a level either a request count or a duration, not both")
        if self.requests is None and self.duration_s is None:
            object.__setattr__(self, "requests", 16)
        if self.requests is not None and self.requests < 1:
            raise ConfigError("requests per level must be at least 1")
        if self.duration_s is not None and self.duration_s <= 0:
            raise ConfigError("duration must be above 0 seconds")
        if self.rate is not None and self.rate <= 0:
            raise ConfigError("rate must be above 0 requests/s")
        if self.prompt_tokens < 1 or self.max_tokens < 1:
            raise ConfigError("prompt_tokens and max_tokens must be at least 1")
        if self.timeout_s <= 0 or self.warmup < 0 or self.workers < 0:
            raise ConfigError("timeout must be above 0; warmup and workers at least 0")
        if self.first_index < 0:
            raise ConfigError("first_index must be at least 0")
        if self.cpus is not None:
            object.__setattr__(self, "cpus", tuple(self.cpus))
            if not self.cpus or any(c < 0 for c in self.cpus):
                raise ConfigError("cpus lists the client's cores: non-negative integers")

    def with_(self, **changes: Any) -> LoadSpec:
        """A copy with some fields changed (``load.with_(concurrency=64)``)."""
        return replace(self, **changes)


DURATION_STRIDE = 1 << 24
"""Prompt indexes a window of a duration (no request count) is given: more than any sends."""


class PromptCursor:
    """Where a launch's next measured window starts in the prompt sequence: after every
    earlier window's prompts, so that one server is never sent a prompt twice.

    Rounds and levels used to start at index 0 alike: from the second window on, every
    prompt had been sent before and hit the prefix cache (on by default in vLLM), so it
    measured a prefill that never ran (the sim at 256 streams of 16-token prompts: the
    first round 7-12% slower than the next, every launch). Windows taken in the same order
    get the same prompts in every launch, so configurations compare on one workload; a
    ``prompts_file`` is read on through its lines, and repeats only once it wraps.
    """

    def __init__(self) -> None:
        self.next_index = 0

    def take(self, load: LoadSpec) -> LoadSpec:
        """``load`` from the next unsent prompt on; the cursor moves past its requests."""
        window = load.with_(first_index=self.next_index)
        self.next_index += load.requests if load.requests is not None else DURATION_STRIDE
        return window


def load_from_benchmark_spec(spec: BenchmarkSpec, concurrency: int, model: str) -> LoadSpec:
    """The LoadSpec of one level of a space file's ``benchmark:`` section."""
    return LoadSpec(
        model=spec.model or model,
        api=spec.api,
        prompt_tokens=spec.prompt_tokens,
        max_tokens=spec.max_tokens,
        ignore_eos=spec.ignore_eos,
        timeout_s=spec.request_timeout_s,
        concurrency=concurrency,
        requests=spec.requests,
        warmup=spec.warmup,
        cpus=tuple(spec.cpus) if spec.cpus else None,
    )


@dataclass(frozen=True)
class Share:
    """One worker process's part of a level: its streams, requests, rate and indexes."""

    concurrency: int
    requests: int | None
    rate: float | None
    index_start: int
    index_step: int
    worker: int


def split(load: LoadSpec, workers: int) -> list[Share]:
    """Divide a level among ``workers`` processes; Poisson streams add up to Poisson."""
    workers = max(1, min(workers, load.concurrency))
    shares = []
    for w in range(workers):
        streams = load.concurrency // workers + (w < load.concurrency % workers)
        count = None
        if load.requests is not None:
            count = load.requests // workers + (w < load.requests % workers)
        rate = load.rate / workers if load.rate is not None else None
        shares.append(Share(streams, count, rate, load.first_index + w, workers, w))
    return [s for s in shares if s.requests is None or s.requests > 0]
