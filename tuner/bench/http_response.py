"""The pieces of one HTTP/1.1 response that a connection decodes outside its hot path.

``Exchange``: one request and its response as the client saw them, filled in by the
connection (tuner/bench/http_protocol.py) and handed back through its future.
``parse_head``: a response head's status and framing (chunked, a length, until close)
and whether the connection stays open. ``chunk_size``: a chunk-size line with
extensions. A head is parsed once per response and a chunk line with extensions is rare,
so neither is on the per-token path; the protocol writes the Exchange's slots there.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


class Exchange:
    """One request and its response as the client saw them; filled in by the protocol.

    ``t_send`` is when the pool began the request; ``t_first`` and ``t_last`` when the
    first and the last chunk with choices arrived, ``itl`` the gaps between them
    (``timed - 1``), as ``vllm bench serve`` times them. ``chunks`` counts the
    token-bearing ones: all but the chat role announcement.
    """

    __slots__ = (
        "t_send",
        "t_first",
        "t_last",
        "itl",
        "timed",
        "chunks",
        "reasoning_chunks",
        "usage",
        "error",
        "status",
        "saw_done",
        "received",
        "retryable",
        "future",
        "timer",
    )

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.t_send = 0.0
        self.t_first = 0.0
        self.t_last = 0.0
        self.itl: list[float] = []
        self.timed = 0
        self.chunks = 0
        self.reasoning_chunks = 0
        self.usage: dict | None = None
        self.error: str | None = None
        self.status = 0
        self.saw_done = False
        self.received = False  # any response byte yet
        self.retryable = False
        self.future = future
        self.timer: asyncio.TimerHandle | None = None


@dataclass(frozen=True)
class Head:
    """What a response head says: its status, how its body is framed, and whether the
    connection stays open after it (HTTP/1.1 keeps it unless told to close)."""

    status: int
    chunked: bool
    length: int | None
    keep_alive: bool


def parse_head(raw: bytes) -> Head:
    """The head of a response, without its blank line; ValueError names what is malformed."""
    lines = raw.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    try:
        version, status = status_line[0], int(status_line[1])
    except (IndexError, ValueError):
        raise ValueError(f"bad status line {lines[0][:80]!r}") from None
    chunked = False
    length = None
    keep_alive = version == "HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        value = value.strip().lower()
        if name == "transfer-encoding":
            chunked = "chunked" in value
        elif name == "content-length":
            try:
                length = int(value)
            except ValueError:
                length = None
        elif name == "connection":
            if "close" in value:
                keep_alive = False
            elif "keep-alive" in value:
                keep_alive = True
    return Head(status, chunked, length, keep_alive)


def chunk_size(line: bytes) -> int:
    """The size of a chunk line with extensions (``1a;name=value``); -1 if unreadable."""
    try:
        return int(line.split(b";", 1)[0].strip(), 16)
    except ValueError:
        return -1


def resolve(ex: Exchange) -> None:
    """The exchange is over: its timeout cancelled, its waiter woken (once)."""
    if ex.timer is not None:
        ex.timer.cancel()
    if not ex.future.done():
        ex.future.set_result(None)
