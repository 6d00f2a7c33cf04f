"""What a benchmark level produces: one immutable record per request, and the level around them.

Records keep the raw timings (seconds) so that every summary can be recomputed later;
tuner/bench/summary.py turns them into the figures ``vllm bench serve`` reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the client saw it.

    ``start_s`` is when the request started (before a connection was taken from the pool
    and the request written, where ``vllm bench serve`` starts its clock), in seconds
    since the level's measured window began; ``ttft_s`` and ``e2el_s`` run from that
    start to the first and the last chunk with choices, and ``itl_s`` holds the gaps
    between successive ones, as ``vllm bench serve`` times them: the chat role
    announcement included, though it carries no token. ``chunks`` counts the
    token-bearing chunks (``itl_s`` has ``chunks - 1 + role_chunks`` gaps).
    ``output_tokens`` comes from the server's ``usage`` when it sends one; otherwise it
    is one per token-bearing chunk and ``tokens_estimated`` is true. ``output_tokens / chunks`` is
    the tokens per chunk, above 1 with speculative decoding or a server that batches its
    writes.
    """

    concurrency: int
    round: int
    index: int
    start_s: float
    ttft_s: float | None
    e2el_s: float | None
    itl_s: tuple[float, ...]
    chunks: int
    prompt_tokens: int
    output_tokens: int
    reasoning_tokens: int
    tokens_estimated: bool
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def content_tokens(self) -> int:
        return self.output_tokens - self.reasoning_tokens

    @property
    def tokens_per_chunk(self) -> float:
        return self.output_tokens / self.chunks if self.chunks else 0.0

    @property
    def role_chunks(self) -> int:
        """Timed chunks that carry no token: the chat role announcement, before the first."""
        return max(0, len(self.itl_s) + 1 - self.chunks) if self.chunks else 0

    @property
    def end_s(self) -> float:
        """When the last token arrived (or, failed, when it was last heard of)."""
        return self.start_s + (self.e2el_s or self.ttft_s or 0.0)


@dataclass(frozen=True)
class ClientLag:
    """How late the client's event loop ran while the level was measured.

    A probe sleeps ``interval_s`` in a loop; each late wake-up is the time every token
    timestamp could have been late by. ``busy`` is the client's CPU time over the
    wall time (per worker process, the highest); ``cpu_s`` the CPU time all client
    processes spent in the measured window; ``preempted`` how often the OS gave their
    CPU to another process meanwhile (a late loop that was not busy was crowded out).
    """

    max_s: float = 0.0
    p99_s: float = 0.0
    p50_s: float = 0.0
    samples: int = 0
    busy: float = 0.0
    cpu_s: float = 0.0
    preempted: int = 0


@dataclass(frozen=True)
class LevelResult:
    """One level (a concurrency, or a rate) of one round, measured.

    ``duration_s`` runs from the start of the measured window to the end of the last
    request (failed ones included). ``client_limited`` says the client, not the server,
    may have set the pace; ``warnings`` says why and what to do. ``peak_in_flight`` is
    the most requests open at once.
    """

    records: tuple[RequestRecord, ...]
    duration_s: float
    concurrency: int
    round: int = 0
    rate: float | None = None
    client_lag: ClientLag = field(default_factory=ClientLag)
    client_limited: bool = False
    warnings: tuple[str, ...] = ()
    peak_in_flight: int = 0
    workers: int = 1
    model: str = ""

    @property
    def completed(self) -> int:
        return sum(1 for r in self.records if r.ok)

    @property
    def errors(self) -> int:
        return sum(1 for r in self.records if not r.ok)
