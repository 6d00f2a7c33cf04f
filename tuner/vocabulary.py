"""The space file's vocabulary: the choice ``default`` and the names of the metrics.

Below tuner/space/ and tuner/secrets.py, and it imports nothing of tuner: the models
(space/spec.py), the limit grammar (space/limits.py), the objectives, the settings and
the redaction of a secret param's choices (secrets.py) read the same words without
importing one another back.
"""

from __future__ import annotations

from typing import Literal

DEFAULT = "default"
"""The choice that means: leave the variable unset, leave the argument out."""

# Objective metrics: the headline figures of a benchmark level, as `vllm bench serve`
# names them. Throughputs are maximised, latencies and a launch's load minimised.
THROUGHPUT_METRICS = ("output_throughput", "request_throughput", "total_throughput")
LATENCY_FAMILIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")
LATENCY_STATS = ("mean", "p50", "p90", "p99")
LOAD_METRICS = ("time_to_healthy_s", "load_weights_s", "load_compile_s", "load_cudagraph_s")
"""A launch's load, in seconds: to healthy, and its weights, torch.compile and CUDA-graph
phases as the server's log tells them (tuner/launcher/load_metrics.py). One value per
launch, not per concurrency level, so an objective or a limit on one names no level."""
OBJECTIVE_METRICS: dict[str, Literal["maximize", "minimize"]] = {
    **{name: "maximize" for name in THROUGHPUT_METRICS},
    **{f"{fam}_{stat}": "minimize" for fam in LATENCY_FAMILIES for stat in LATENCY_STATS},
    # tuner/space/slo.py: with benchmark.goodput / benchmark.capacity
    "goodput": "maximize",
    "capacity": "maximize",
    **{name: "minimize" for name in LOAD_METRICS},
}
"""Every metric an objective may name, with the direction it is optimised in."""


def is_load_metric(metric: str) -> bool:
    """Whether ``metric`` is a launch's load (LOAD_METRICS), not a benchmark level's figure."""
    return metric in LOAD_METRICS
