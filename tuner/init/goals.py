"""What a study written by `tuner init` measures and optimises: its ``--goal``.

Three goals, each a benchmark and the objective read from it:

- ``single-stream`` (the default): output tokens per second of one stream, the figure a
  user of an interactive model waits on, and the one NCCL's small-message settings and
  CUDA graphs move most. A level of 8 streams beside it shows what a change costs a batch.
- ``latency``: the median time per output token (TPOT) of one stream, minimised: the same
  decode steps as single-stream, read as milliseconds rather than a rate.
- ``throughput``: output tokens per second at 64 streams, where batching and the
  scheduler (max-num-seqs, batched tokens) matter and large all-reduces dominate.

The sizes follow search_spaces/nccl.yaml, the seeds' space: enough tokens per round that a
round's mean is steady, three rounds a launch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Goal:
    """A goal's benchmark and objective, as space-file sections, and why."""

    name: str
    summary: str
    """One line for ``--help`` and the file's header."""
    benchmark: dict[str, Any]
    objective: dict[str, Any]
    comment: str
    """Why this objective, above the ``objective:`` section."""

    @property
    def levels(self) -> list[int]:
        return list(self.benchmark["concurrency"])


def _benchmark(levels: list[int], requests: int, max_tokens: int = 512) -> dict[str, Any]:
    """The benchmark section, keys in the order the shipped spaces write them."""
    return {
        "api": "completions",
        "prompt_tokens": 256,
        "max_tokens": max_tokens,
        "concurrency": levels,
        "requests": requests,
        "warmup": 2,
        "rounds": 3,
    }


GOALS: dict[str, Goal] = {
    "single-stream": Goal(
        name="single-stream",
        summary="output tok/s of one stream (the default)",
        benchmark=_benchmark([1, 8], requests=8),
        objective={"metric": "output_throughput", "concurrency": 1},
        comment=(
            "Output tokens per second of one stream: what an interactive user waits on. The "
            "level of 8 streams is measured beside it, to show what a change costs a batch."
        ),
    ),
    "latency": Goal(
        name="latency",
        summary="median time per output token of one stream, minimised",
        benchmark=_benchmark([1], requests=8),
        objective={"metric": "tpot_ms_p50", "concurrency": 1},
        comment=(
            "The median time per output token (TPOT) of one stream, minimised. For the time "
            "to the first token instead: metric: ttft_ms_p50 (docs/space-file.md, objective)."
        ),
    ),
    "throughput": Goal(
        name="throughput",
        summary="output tok/s at 64 streams",
        benchmark=_benchmark([8, 64], requests=128, max_tokens=256),
        objective={"metric": "output_throughput", "concurrency": 64},
        comment=(
            "Output tokens per second at 64 streams: a loaded server, where batching and the "
            "scheduler matter. 128 requests a level: two waves at 64 streams."
        ),
    ),
}
DEFAULT_GOAL = "single-stream"
