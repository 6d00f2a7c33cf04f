"""``GET /metrics``: Prometheus text exposition with a few of vLLM's real metric names.

Written by hand (format 0.0.4, the way prometheus_client renders counters: ``# TYPE x_total``)
to keep the import path light; tests parse it with ``prometheus_client.parser``.
"""

from __future__ import annotations

from tuner.sim.engine import Engine

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_GAUGES = (
    ("vllm:num_requests_running", "Number of requests in model execution batches."),
    ("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
    ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
)
_COUNTERS = (
    ("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
    ("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
    ("vllm:generation_tokens_total", "Number of generation tokens processed."),
    (
        "vllm:prefix_cache_queries_total",
        "Prefix cache queries, in terms of number of queried tokens.",
    ),
    ("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens."),
)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(engine: Engine, model_name: str) -> str:
    """The whole exposition for one engine."""
    labels = f'engine="0",model_name="{_escape(model_name)}"'
    stats = engine.stats
    values = {
        "vllm:num_requests_running": float(engine.num_running),
        "vllm:num_requests_waiting": float(engine.num_waiting),
        "vllm:kv_cache_usage_perc": engine.kv_usage,
        "vllm:num_preemptions_total": float(stats.preemptions_total),
        "vllm:prompt_tokens_total": float(stats.prompt_tokens_total),
        "vllm:generation_tokens_total": float(stats.generation_tokens_total),
        "vllm:prefix_cache_queries_total": float(stats.prefix_cache_queries_total),
        "vllm:prefix_cache_hits_total": float(stats.prefix_cache_hits_total),
    }
    out: list[str] = []
    for name, help_text in _GAUGES:
        out += [
            f"# HELP {name} {help_text}",
            f"# TYPE {name} gauge",
            f"{name}{{{labels}}} {values[name]!r}",
        ]
    for name, help_text in _COUNTERS:
        out += [
            f"# HELP {name} {help_text}",
            f"# TYPE {name} counter",
            f"{name}{{{labels}}} {values[name]!r}",
        ]
    name = "vllm:request_success_total"
    out += [f"# HELP {name} Count of successfully processed requests.", f"# TYPE {name} counter"]
    for reason in ("stop", "length", "abort"):
        count = float(stats.requests_finished.get(reason, 0))
        out.append(f'{name}{{{labels},finished_reason="{reason}"}} {count!r}')
    # The simulator's own health: lag resets mean the sim, not the "GPU", was the bottleneck.
    for name, help_text, value in (
        ("tuner_sim:engine_steps_total", "Simulated engine steps.", stats.steps_total),
        (
            "tuner_sim:engine_lag_resets_total",
            "Times the engine fell over 0.5 s behind schedule (simulator starved).",
            stats.lag_resets_total,
        ),
    ):
        out += [
            f"# HELP {name} {help_text}",
            f"# TYPE {name} counter",
            f"{name}{{{labels}}} {float(value)!r}",
        ]
    return "\n".join(out) + "\n"
