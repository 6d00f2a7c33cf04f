"""Per-level summaries from per-request records, with ``vllm bench serve``'s definitions.

Pure functions over a ``LevelResult``; nothing here measures. Over the successful
requests of a level (failed ones count only as errors):

- TTFT: first chunk with choices (the chat role announcement too, as in vLLM, though it
  is no token) minus the request's start (as vLLM's clock, before a connection is taken
  from the pool and the request written);
- TPOT: ``(e2el - ttft) / (output_tokens - 1)``, for requests of more than one token;
- ITL: every gap between successive chunks with choices, one sample per chunk gap
  (a chunk carrying k tokens is one sample, as in vLLM; ``tokens_per_chunk`` says how
  many tokens a token-bearing chunk carried on average);
- E2EL: last chunk with choices minus the request's start;
- throughputs: output tokens, requests, and prompt plus output tokens of the successful
  requests over the level's duration (first send to last token), so failed requests
  lower them rather than being averaged away;
- peak output throughput: the most output tokens in any whole one-second bucket from
  the first send, a token-bearing chunk counting as the tokens it carried;
- goodput: requests/s that met every SLO given (``ttft_ms``, ``tpot_ms``, ``e2el_ms``).

Percentiles interpolate linearly between order statistics, as numpy's default does;
std is the population standard deviation. A distribution without samples is NaN (None
in JSON), never 0, so that a failed level cannot look fast.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tuner.bench.records import LevelResult, RequestRecord
from tuner.errors import ConfigError

SLO_METRICS = ("ttft_ms", "tpot_ms", "e2el_ms")
_STATS = ("mean", "p50", "p90", "p99", "std")


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of sorted values, linear interpolation; NaN if empty."""
    n = len(ordered)
    if n == 0:
        return math.nan
    pos = (n - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True)
class Distribution:
    """Mean, median, p90, p99 and std of one latency, in milliseconds."""

    mean: float = math.nan
    p50: float = math.nan
    p90: float = math.nan
    p99: float = math.nan
    std: float = math.nan
    count: int = 0

    @classmethod
    def of(cls, seconds: Iterable[float]) -> Distribution:
        values = sorted(v * 1000.0 for v in seconds)
        n = len(values)
        if n == 0:
            return cls()
        mean = math.fsum(values) / n
        variance = math.fsum((v - mean) ** 2 for v in values) / n
        return cls(
            mean=mean,
            p50=percentile(values, 50),
            p90=percentile(values, 90),
            p99=percentile(values, 99),
            std=math.sqrt(variance),
            count=n,
        )

    def to_dict(self) -> dict[str, float | int | None]:
        out: dict[str, float | int | None] = {s: _json_float(getattr(self, s)) for s in _STATS}
        out["count"] = self.count
        return out


@dataclass(frozen=True)
class LevelSummary:
    """The figures of one level; ``metric(name)`` serves the objective."""

    concurrency: int
    round: int
    rate: float | None
    completed: int
    errors: int
    error_rate: float
    flagged: str | None
    duration_s: float
    output_throughput: float
    request_throughput: float
    total_throughput: float
    peak_output_throughput: float
    goodput: float | None
    goodput_slos: dict[str, float]
    prompt_tokens: int
    output_tokens: int
    reasoning_tokens: int
    content_tokens: int
    tokens_estimated: bool
    tokens_per_chunk: float
    ttft_ms: Distribution
    tpot_ms: Distribution
    itl_ms: Distribution
    e2el_ms: Distribution
    client_limited: bool = False
    client_lag_ms_p99: float = 0.0
    client_lag_ms_max: float = 0.0
    client_busy: float = 0.0
    workers: int = 1
    peak_in_flight: int = 0
    warnings: tuple[str, ...] = ()
    error_reasons: dict[str, int] = field(default_factory=dict)

    def metric(self, name: str) -> float:
        """A figure by name: ``output_throughput``, ``ttft_ms_p50``, ``itl_ms_p99``, ..."""
        if name in _SCALARS:
            value = getattr(self, name)
            return math.nan if value is None else float(value)
        family, _, stat = name.rpartition("_")
        dist = getattr(self, family, None) if family in _FAMILIES else None
        if not isinstance(dist, Distribution) or stat not in _STATS:
            raise KeyError(
                f"unknown metric {name!r}; use one of {', '.join(_SCALARS)} or "
                f"FAMILY_STAT with FAMILY in {', '.join(_FAMILIES)} and STAT in "
                f"{', '.join(_STATS)}"
            )
        return float(getattr(dist, stat))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the ``tuner bench --format json`` shape of one level."""
        return {
            "concurrency": self.concurrency,
            "round": self.round,
            "rate": self.rate,
            "completed": self.completed,
            "errors": self.errors,
            "error_rate": self.error_rate,
            "flagged": self.flagged,
            "duration_s": self.duration_s,
            "output_throughput": self.output_throughput,
            "request_throughput": self.request_throughput,
            "total_throughput": self.total_throughput,
            "peak_output_throughput": self.peak_output_throughput,
            "goodput": self.goodput,
            "goodput_slos": dict(self.goodput_slos),
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "content_tokens": self.content_tokens,
            "tokens_estimated": self.tokens_estimated,
            "tokens_per_chunk": _json_float(self.tokens_per_chunk),
            **{family: getattr(self, family).to_dict() for family in _FAMILIES},
            "client": {
                "limited": self.client_limited,
                "lag_ms_p99": self.client_lag_ms_p99,
                "lag_ms_max": self.client_lag_ms_max,
                "busy": self.client_busy,
                "workers": self.workers,
                "peak_in_flight": self.peak_in_flight,
            },
            "warnings": list(self.warnings),
            "error_reasons": dict(self.error_reasons),
        }


_FAMILIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")
_SCALARS = (
    "output_throughput",
    "request_throughput",
    "total_throughput",
    "peak_output_throughput",
    "goodput",
    "error_rate",
    "tokens_per_chunk",
)


def summarize(
    result: LevelResult,
    *,
    goodput: dict[str, float] | None = None,
    max_error_rate: float = 0.0,
) -> LevelSummary:
    """Summarise one level. ``goodput`` maps SLO names (``ttft_ms`` ...) to limits in ms."""
    records = result.records
    ok = [r for r in records if r.ok]
    errors = len(records) - len(ok)
    error_rate = errors / len(records) if records else 0.0
    duration = result.duration_s
    per_s = 1.0 / duration if duration > 0 else 0.0
    output = sum(r.output_tokens for r in ok)
    prompt = sum(r.prompt_tokens for r in ok)
    reasoning = sum(r.reasoning_tokens for r in ok)
    chunks = sum(r.chunks for r in ok)
    tpots = [_tpot(r) for r in ok if r.output_tokens > 1]
    slos = dict(goodput or {})
    good = sum(1 for r in ok if _meets(r, slos)) if slos else None

    reasons = []
    if not records:
        reasons.append("no requests were measured")
    elif error_rate > max_error_rate:
        reasons.append(
            f"{errors} of {len(records)} requests failed ({error_rate:.1%}, above the "
            f"{max_error_rate:.1%} allowed); throughput counts only the successful ones"
        )
    if result.client_limited:
        reasons.append("client-limited: " + "; ".join(result.warnings[:1]))
    lag = result.client_lag
    return LevelSummary(
        concurrency=result.concurrency,
        round=result.round,
        rate=result.rate,
        completed=len(ok),
        errors=errors,
        error_rate=error_rate,
        flagged="; ".join(reasons) or None,
        duration_s=duration,
        output_throughput=output * per_s,
        request_throughput=len(ok) * per_s,
        total_throughput=(prompt + output) * per_s,
        peak_output_throughput=peak_output_throughput(ok),
        goodput=good * per_s if good is not None else None,
        goodput_slos=slos,
        prompt_tokens=prompt,
        output_tokens=output,
        reasoning_tokens=reasoning,
        content_tokens=output - reasoning,
        tokens_estimated=any(r.tokens_estimated for r in ok),
        tokens_per_chunk=output / chunks if chunks else math.nan,
        ttft_ms=Distribution.of(r.ttft_s for r in ok if r.ttft_s is not None),
        tpot_ms=Distribution.of(tpots),
        itl_ms=Distribution.of(gap for r in ok for gap in r.itl_s),
        e2el_ms=Distribution.of(r.e2el_s for r in ok if r.e2el_s is not None),
        client_limited=result.client_limited,
        client_lag_ms_p99=lag.p99_s * 1000,
        client_lag_ms_max=lag.max_s * 1000,
        client_busy=lag.busy,
        workers=result.workers,
        peak_in_flight=result.peak_in_flight,
        warnings=result.warnings,
        error_reasons=error_reasons(records),
    )


def _tpot(record: RequestRecord) -> float:
    assert record.e2el_s is not None and record.ttft_s is not None
    return (record.e2el_s - record.ttft_s) / (record.output_tokens - 1)


def _meets(record: RequestRecord, slos: dict[str, float]) -> bool:
    """vLLM's goodput test: every given SLO met; a one-token request has TPOT 0."""
    values = {
        "ttft_ms": (record.ttft_s or 0.0) * 1000,
        "tpot_ms": _tpot(record) * 1000 if record.output_tokens > 1 else 0.0,
        "e2el_ms": (record.e2el_s or 0.0) * 1000,
    }
    return all(values[name] <= limit for name, limit in slos.items())


def peak_output_throughput(records: Sequence[RequestRecord]) -> float:
    """Most output tokens in one whole second, in one-second buckets from the first send.

    The last, partial bucket is left out (it can only read low); a level shorter than a
    second has no whole bucket, and reports its tokens over its span instead.
    """
    if not records:
        return 0.0
    origin = min(r.start_s for r in records)
    buckets: dict[int, float] = defaultdict(float)
    last = 0.0
    total = 0.0
    for r in records:
        if r.ttft_s is None or not r.chunks:
            continue
        weight = r.output_tokens / r.chunks
        skip = r.role_chunks  # timed, but no token: the chat role announcement
        t = r.start_s + r.ttft_s - origin
        if not skip:
            buckets[int(t)] += weight
        for i, gap in enumerate(r.itl_s, 1):
            t += gap
            if i >= skip:
                buckets[int(t)] += weight
        last = max(last, t)
        total += weight * r.chunks
    whole = int(last)
    if whole == 0:
        return total / last if last > 0 else 0.0
    return max(buckets[k] for k in range(whole))


def error_reasons(records: Iterable[RequestRecord]) -> dict[str, int]:
    """How many requests failed for each kind of reason (the text before the first colon)."""
    counts = Counter(r.error.split(":", 1)[0] for r in records if r.error is not None)
    return dict(counts.most_common())


def parse_goodput(items: Iterable[str] | str) -> dict[str, float]:
    """``["ttft_ms:500", "e2el_ms:2000"]`` (or ``"ttft:500 e2el:2000"``) to SLO limits in ms."""
    if isinstance(items, str):
        items = [items]
    slos: dict[str, float] = {}
    for item in items:
        for part in item.replace(",", " ").split():
            name, sep, value = part.partition(":")
            name = name.strip().lower()
            name = name if name.endswith("_ms") else f"{name}_ms"
            if not sep or name not in SLO_METRICS:
                raise ConfigError(
                    f"cannot read goodput SLO {part!r}: write NAME:MILLISECONDS with NAME "
                    f"one of {', '.join(SLO_METRICS)} (e.g. ttft_ms:500)"
                )
            try:
                limit = float(value)
            except ValueError:
                limit = -1.0
            if not limit > 0 or math.isinf(limit):
                raise ConfigError(f"goodput SLO {part!r}: the limit is a positive number of ms")
            slos[name] = limit
    return slos


def levels_document(summaries: Sequence[LevelSummary], **extra: Any) -> dict[str, Any]:
    """The ``--format json`` object: ``{"levels": [...]}`` plus any extra top-level keys."""
    return {**extra, "levels": [s.to_dict() for s in summaries]}


def _json_float(value: float) -> float | None:
    return None if math.isnan(value) else value
