"""Server-sent events of an OpenAI-style stream: split the byte stream, classify each event.

Two layers, both pure and incremental so that bytes may arrive split at any boundary:

- ``SseParser.feed(data)`` returns the ``data:`` payloads of the events completed by
  ``data`` (several per call, or none while an event is still partial);
- ``classify(payload)`` says what one payload is: a token chunk (content or reasoning),
  the chat role announcement, nothing (a usage-only chunk), ``[DONE]``, or "parse it"
  (usage, an error, or a shape the fast path does not know). ``parse_event(payload)`` is
  the full, authoritative JSON parse; ``classify`` only answers when its answer equals
  ``parse_event``'s.

Which chunks count is ``vllm bench serve``'s rule (vllm/benchmarks/lib/
endpoint_request_func.py): every chunk with a non-empty ``choices`` list, empty text
included. vLLM sends one chunk per scheduler step with the step's tokens, and a token
that decodes to no text yet (a byte of a multi-byte character, a special token) comes as
``"text":""``: skipping it would merge its gap into the next one (ITL 2.3 to 2.5 times
vLLM's on the tiny model of the vllm tier). The chat role announcement (``delta`` with
``role`` and no text) has choices too, so it is ``ROLE``: a chunk for the clock, as in
``vllm bench serve`` (it sets TTFT, and the gap to the next chunk is an ITL sample), but
not a token (it counts in no token estimate, tokens per chunk or reasoning split).

Why a fast path: ``json.loads`` of a 200-byte vLLM chunk costs about 5 us on a small
server core, most of a per-token budget of 8 us. In valid JSON an unescaped ``"`` can
only be structural, so finding ``"text":"`` (compact, as vLLM and most servers write
it) and the byte after it tells what the chunk is without parsing it. The few chunks
that matter more (usage, errors) and any other spelling go to ``json.loads``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

NONE = 0
"""A chunk without choices, which the clock ignores: ``"choices":[]`` (usage), errors."""
CONTENT = 1
"""A token chunk: ``choices[0].text`` (empty too) or a delta with content or tool calls."""
REASONING = 2
"""A token chunk whose only text is reasoning (``reasoning_content`` or ``reasoning``)."""
DONE = 3
"""The ``[DONE]`` sentinel."""
PARSE = 4
"""Undecided by the fast path: call ``parse_event``."""
ROLE = 5
"""The chat role announcement (a delta with ``role`` and no text): timed, not a token."""

_TEXT = b'"text":"'
_DELTA = b'"delta":'
_ROLE_ANNOUNCED = b'"role":"assistant"'
_QUOTE = 0x22
# Content before reasoning, as in parse_event: a chunk with both counts as content.
_DELTA_KEYS = (
    (b'"content":"', CONTENT),
    (b'"reasoning_content":"', REASONING),
    (b'"reasoning":"', REASONING),
)


def classify(payload: bytes) -> int:
    """Classify one event payload cheaply; PARSE when only a full parse can tell."""
    if payload == b"[DONE]":
        return DONE
    if b'"error"' in payload:
        return PARSE
    if not payload.endswith(b'"usage":null}'):  # vLLM's completion chunks end so
        usage = payload.find(b'"usage"')
        if usage >= 0 and not payload.startswith(b":null", usage + 7):
            return PARSE
    if _DELTA not in payload:  # a completion chunk: its text, empty or not, is a token
        i = payload.find(_TEXT)
        return CONTENT if i >= 0 and i + len(_TEXT) < len(payload) else PARSE
    if b'"tool_calls"' in payload:
        return PARSE
    n = len(payload)
    for key, kind in _DELTA_KEYS:
        i = payload.find(key)
        if i >= 0:
            j = i + len(key)
            if j >= n:
                return PARSE
            if payload[j] != _QUOTE:
                return kind
    # No text in the delta: the role announcement, or a token that decodes to nothing.
    if _ROLE_ANNOUNCED in payload:
        return ROLE
    return PARSE if b'"role"' in payload else CONTENT


@dataclass(frozen=True, slots=True)
class Event:
    """One fully parsed payload: its kind, and usage or error when it has them."""

    kind: int
    usage: dict[str, Any] | None = None
    error: str | None = None


def parse_event(payload: bytes) -> Event:
    """The authoritative reading of one payload; malformed JSON is an error event."""
    if payload.strip() == b"[DONE]":
        return Event(DONE)
    try:
        obj = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        return Event(NONE, error=f"malformed SSE: {exc}: {_snippet(payload)}")
    if not isinstance(obj, dict):
        return Event(NONE, error=f"malformed SSE: not a JSON object: {_snippet(payload)}")
    if obj.get("error"):
        return Event(NONE, error=f"error event: {_error_text(obj['error'])}")
    usage = obj.get("usage")
    usage = usage if isinstance(usage, dict) else None
    return Event(_choice_kind(obj.get("choices")), usage=usage)


def _choice_kind(choices: Any) -> int:
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return NONE
    delta = choices[0].get("delta")
    if not isinstance(delta, dict):
        return CONTENT  # a completion chunk: ``text`` may be empty, it is still a token
    if delta.get("content") or delta.get("tool_calls"):
        return CONTENT
    if delta.get("reasoning_content") or delta.get("reasoning"):
        return REASONING
    return ROLE if delta.get("role") else CONTENT


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def _snippet(payload: bytes, limit: int = 120) -> str:
    text = payload[:limit].decode("utf-8", "replace")
    return text + ("..." if len(payload) > limit else "")


class SseParser:
    """Incremental SSE framing: bytes in, complete ``data`` payloads out.

    Events end at a blank line; lines end with LF, CRLF or CR (the SSE spec allows all
    three). Several ``data:`` lines in one event are joined with LF, comment lines
    (``:``) and other fields (``event:``, ``id:``, ``retry:``) are ignored.
    """

    __slots__ = ("_buffer", "_cr")

    def __init__(self) -> None:
        self._buffer = b""
        self._cr = False

    def feed(self, data: bytes) -> list[bytes]:
        """Add bytes; return the payloads of the events they complete, in order."""
        if self._cr or b"\r" in data:
            data = self._normalise(data)
        buffer = self._buffer + data if self._buffer else data
        end = buffer.rfind(b"\n\n")
        if end < 0:
            self._buffer = buffer
            return []
        self._buffer = buffer[end + 2 :]
        payloads = []
        for event in buffer[:end].split(b"\n\n"):
            # The common case, one "data: {...}" line, is a prefix check and a slice.
            if event.startswith(b"data: ") and b"\n" not in event:
                payloads.append(event[6:])
            elif event:
                payload = _event_data(event)
                if payload is not None:
                    payloads.append(payload)
        return payloads

    def _normalise(self, data: bytes) -> bytes:
        # A CRLF may be split across reads: a trailing CR is held until the next byte.
        if self._cr:
            data = b"\r" + data
        self._cr = data.endswith(b"\r")
        if self._cr:
            data = data[:-1]
        return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    def flush(self) -> list[bytes]:
        """End of stream: the last event counts even without its blank line."""
        payloads = self.feed(b"\n\n") if self._buffer or self._cr else []
        self._buffer = b""
        self._cr = False
        return payloads

    @property
    def pending(self) -> bytes:
        """Bytes of an event not yet ended by a blank line."""
        return self._buffer

    @property
    def split_cr(self) -> bool:
        """A CR ended the last bytes: the next LF belongs to it."""
        return self._cr


def _event_data(event: bytes) -> bytes | None:
    """The joined data lines of one event, or None when it has none (comments, ids)."""
    lines = []
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            value = line[5:]
            lines.append(value[1:] if value.startswith(b" ") else value)
    if not lines:
        return None
    return b"\n".join(lines)
