"""vLLM-shaped log lines, written and flushed one at a time.

Writes are synchronous on purpose: like vLLM's logging, a reader that stops draining the
pipe stalls the server, which is exactly what a launcher must never let happen.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO


class Log:
    """Writes ``(APIServer pid=N) INFO mm-dd hh:mm:ss [file.py:line] message`` lines."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.pid = os.getpid()

    def _write(self, stream: TextIO, text: str) -> None:
        try:
            stream.write(text)
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass  # the reader is gone; nothing useful to do about it

    def line(self, text: str, *, err: bool = False) -> None:
        """A raw line (uvicorn's ``INFO:     ...``, tqdm progress, NCCL lines)."""
        self._write(self.err if err else self.out, text + "\n")

    def lines(self, texts: list[str], *, err: bool = False) -> None:
        self._write(self.err if err else self.out, "".join(t + "\n" for t in texts))

    def info(self, source: str, message: str) -> None:
        self.line(self.format("INFO", source, message))

    def warning(self, source: str, message: str) -> None:
        self.line(self.format("WARNING", source, message))

    def error(self, source: str, message: str) -> None:
        self.line(self.format("ERROR", source, message), err=True)

    def format(self, level: str, source: str, message: str) -> str:
        stamp = time.strftime("%m-%d %H:%M:%S")
        return f"(APIServer pid={self.pid}) {level} {stamp} [{source}] {message}"


def format_duration(seconds: float) -> str:
    """tqdm's ``MM:SS`` (or ``H:MM:SS``)."""
    seconds = max(0, int(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours:d}:{minutes:02d}:{secs:02d}"
    return f"{minutes:02d}:{secs:02d}"


def progress_line(done: int, total: int, elapsed: float) -> str:
    """tqdm's line as vLLM prints it while loading weights, e.g.

    ``Loading safetensors checkpoint shards:  56% Completed | 36/64 [00:20<00:16,  1.80it/s]``
    """
    pct = 100.0 * done / total if total else 100.0
    head = f"Loading safetensors checkpoint shards: {pct:3.0f}% Completed | {done}/{total} "
    if done == 0 or elapsed <= 0:
        return head + f"[{format_duration(elapsed)}<?, ?it/s]"
    rate = done / elapsed
    remaining = (total - done) / rate
    rate_text = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
    return head + f"[{format_duration(elapsed)}<{format_duration(remaining)}, {rate_text}]"
