"""The streaming load generator: per-request records from an OpenAI-compatible server.

``measure_level(base_url, load)`` runs one level (warmup, warm connections, then a
concurrency or a Poisson rate, for a count or a duration) and returns a ``LevelResult``
of ``RequestRecord``s; tuner/bench/summary.py summarises them as ``vllm bench serve`` does.
The modules, one job each: ``sse`` (event framing and classification), ``http`` (the
streaming transport: target and connection pool), ``http_protocol`` (one connection's
request and response parsing; ``http_response``: the exchange, a head's parse),
``prompts``, ``load`` (what to send), ``level`` (one process; ``live``: its progress,
``client_lag``: the client's own lag), ``workers`` (several), ``measure`` (the entry points
and the client's self-check).
"""

from tuner.bench.level import LiveStats
from tuner.bench.load import LoadSpec, PromptCursor, load_from_benchmark_spec
from tuner.bench.measure import discover_model, measure_level, measure_level_async
from tuner.bench.records import ClientLag, LevelResult, RequestRecord

__all__ = [
    "ClientLag",
    "LevelResult",
    "LiveStats",
    "LoadSpec",
    "PromptCursor",
    "RequestRecord",
    "discover_model",
    "load_from_benchmark_spec",
    "measure_level",
    "measure_level_async",
]
