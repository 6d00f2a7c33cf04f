"""The per-launch log file: follow it incrementally, read its end, never hold it whole.

The server writes straight into the file (no pipe through tuner that could fill
up and block it). A 36-minute load, or a server that floods its log at tens of
MB/s, must cost tuner neither memory nor a full re-read: the follower reads only
what was added since its last look, and when it falls far behind it skips to the
end, because only the latest line matters for progress. The reason of a failure
is taken from the tail, read backwards from the end.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from tuner.launcher.progress import LoadProgress, describe_line, parse_progress

_SEPARATOR = re.compile(rb"[\r\n]")


class LogFollower:
    """Reads what a log file gained since the last call and says what the server is doing."""

    def __init__(
        self,
        path: Path,
        *,
        start_offset: int = 0,
        max_read_bytes: int = 1 << 20,
        max_backlog_bytes: int = 4 << 20,
        max_partial_bytes: int = 64 << 10,
    ) -> None:
        self.path = path
        self.offset = start_offset
        self.max_read_bytes = max_read_bytes
        self.max_backlog_bytes = max_backlog_bytes
        self.max_partial_bytes = max_partial_bytes
        self._partial = b""
        self._last: LoadProgress | None = None
        self.skipped_bytes = 0  # how much a flood made us skip, for the curious

    @property
    def last(self) -> LoadProgress | None:
        """The latest state seen (progress or phase)."""
        return self._last

    def poll(self) -> LoadProgress | None:
        """Read the new part of the file; the new state if it changed, else None."""
        data = self._read_new()
        if not data:
            return None
        state = self._latest_state(self._partial + data)
        if state is None or state == self._last:
            return None
        self._last = state
        return state

    def _read_new(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < self.offset:  # truncated or replaced: start over
                    self.offset = 0
                    self._partial = b""
                backlog = size - self.offset
                if backlog <= 0:
                    return b""
                if backlog > self.max_backlog_bytes:
                    # Far behind (a flood): the skipped lines are still in the file;
                    # only the newest ones say where the server is.
                    skip = size - self.max_read_bytes
                    self.skipped_bytes += skip - self.offset
                    self.offset = skip
                    self._partial = b""
                f.seek(self.offset)
                data = f.read(min(size - self.offset, self.max_read_bytes))
        except OSError:
            return b""
        self.offset += len(data)
        return data

    def _latest_state(self, data: bytes) -> LoadProgress | None:
        # Everything after the last separator is an unfinished line: keep it for
        # the next read (bounded: a line without end must not grow forever).
        cut = _last_separator(data)
        complete, partial = data[: cut + 1], data[cut + 1 :]
        self._partial = partial[-self.max_partial_bytes :]
        # tqdm draws "\r<line>" and ends it only when the bar closes, so the bar
        # being drawn now is the unfinished part: use it when it is a whole bar.
        if partial:
            text = partial.decode("utf-8", errors="replace")
            progress = parse_progress(text)
            if progress is not None and text.rstrip().endswith("]"):
                return progress
        # The newest line that says something; DEBUG floods and access logs do not.
        for raw in reversed(_SEPARATOR.split(complete[-self.max_partial_bytes :])):
            if raw.strip():
                state = describe_line(raw.decode("utf-8", errors="replace"))
                if state is not None:
                    return state
        return None


def matching_lines(
    path: Path,
    needles: Iterable[str],
    *,
    max_bytes: int = 256 << 20,
    block_bytes: int = 1 << 20,
) -> list[str]:
    """The lines of the file's first ``max_bytes`` that contain one of ``needles``.

    Read a block at a time, never whole: a block without any needle is not even split
    into lines. '\\r' breaks a line as '\\n' does (tqdm); [] when the file cannot be read.
    """
    wanted = [n.encode() for n in needles]
    found: list[str] = []
    carry = b""
    read = 0
    try:
        with open(path, "rb") as f:
            while read < max_bytes:
                data = f.read(min(block_bytes, max_bytes - read))
                if not data:
                    break
                read += len(data)
                data = carry + data
                cut = _last_separator(data)
                if cut < 0:  # no line ended yet: keep a bounded unfinished line
                    carry = data[-block_bytes:]
                    continue
                complete, carry = data[: cut + 1], data[cut + 1 :]
                found += _lines_with(complete, wanted)
    except OSError:
        return found
    return found + _lines_with(carry, wanted)


def _lines_with(data: bytes, wanted: list[bytes]) -> list[str]:
    if not any(n in data for n in wanted):
        return []
    return [
        raw.decode("utf-8", errors="replace")
        for raw in _SEPARATOR.split(data)
        if any(n in raw for n in wanted)
    ]


def _last_separator(data: bytes) -> int:
    return max(data.rfind(b"\n"), data.rfind(b"\r"))


def read_tail(path: Path, lines: int = 50, *, max_bytes: int = 256 << 10) -> str:
    """The last ``lines`` lines of the file, reading at most ``max_bytes`` from its end.

    '\\r' breaks a line as '\\n' does, so a tqdm bar redrawn a thousand times is
    one line per redraw, not one line of megabytes.
    """
    if lines <= 0:
        return ""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            block = 16 << 10
            data = b""
            pos = size
            while pos > 0 and len(data) < max_bytes:
                step = min(block, pos, max_bytes - len(data))
                pos -= step
                f.seek(pos)
                data = f.read(step) + data
                if len(_SEPARATOR.findall(data)) > lines:
                    break
                block *= 2
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    parts = [p for p in re.split(r"\r\n|[\r\n]", text) if p.strip()]
    if pos > 0 and len(parts) > 1:
        parts = parts[1:]  # the first one is probably cut
    return "\n".join(p[:2000] for p in parts[-lines:])
