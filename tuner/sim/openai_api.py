"""The OpenAI-compatible wire format: request validation and response bytes, vLLM-shaped.

Pure functions and small classes, no HTTP: :func:`parse_request` turns a JSON body into a
:class:`GenRequest` or raises :class:`ApiError` (status + vLLM's error JSON);
:class:`StreamWriter` pre-encodes a request's SSE chunk templates once, so each streamed token
costs a bytes concatenation rather than a JSON dump.

Token counting: one token per whitespace-separated word of the prompt (``len(text.split())``;
a list of ints counts as that many token ids). Chat prompts add a template: 3 tokens per
message plus 2. Generated text is one word per token, so counts round-trip.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["completion", "chat"]

# A fixed vocabulary of plain lowercase words: no JSON escaping is ever needed.
WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "at",
    "from",
    "this",
    "are",
    "be",
    "or",
    "an",
    "it",
    "which",
    "model",
    "token",
    "server",
    "engine",
    "batch",
    "stream",
    "cache",
    "layer",
    "expert",
    "weight",
    "value",
    "signal",
    "noise",
    "ring",
    "tree",
    "channel",
    "buffer",
    "thread",
    "graph",
    "kernel",
    "memory",
    "latency",
    "through",
    "put",
    "step",
)
_WORD_BYTES = tuple((" " + w).encode() for w in WORDS)
NATURAL_MIN, NATURAL_MAX = 64, 2048  # range of lengths when a request may stop at "EOS"


class ApiError(Exception):
    """An error response: HTTP ``status`` and vLLM's ``{"error": {...}}`` body."""

    def __init__(self, status: int, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param

    def body(self) -> dict[str, Any]:
        kind = {400: "BadRequestError", 404: "NotFoundError"}.get(self.status, "InternalError")
        return {
            "error": {
                "message": self.message,
                "type": kind,
                "param": self.param,
                "code": self.status,
            }
        }


@dataclass(frozen=True)
class GenRequest:
    """A validated generation request."""

    kind: Kind
    model: str
    prompt_key: tuple[Hashable, ...]  # the prompt's tokens (words or ids), for prefix caching
    prompt_tokens: int
    max_tokens: int
    stream: bool
    include_usage: bool
    ignore_eos: bool

    def stop_at(self) -> int | None:
        """Where the "model" emits EOS: None with ignore_eos, else a length derived from the
        prompt (deterministic, log-uniform in 64..2048)."""
        if self.ignore_eos:
            return None
        return natural_length(self.prompt_key)


def natural_length(prompt_key: Sequence[Hashable]) -> int:
    digest = zlib.crc32(repr(tuple(prompt_key)).encode())
    frac = digest / 2**32
    return int(NATURAL_MIN * (NATURAL_MAX / NATURAL_MIN) ** frac)


def _int_field(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{name} must be an integer, got {value!r}.", param=name)
    if value < 1:
        raise ApiError(400, f"{name} must be at least 1, got {value}.", param=name)
    return value


def _prompt_key(prompt: Any) -> tuple[Hashable, ...]:
    if isinstance(prompt, str):
        return tuple(prompt.split())
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        return _prompt_key(prompt[0])
    if (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt)
    ):
        return tuple(prompt)
    if isinstance(prompt, list) and len(prompt) > 1:
        raise ApiError(400, "The simulator accepts one prompt per request.", param="prompt")
    raise ApiError(400, "prompt must be a string or a list of token ids.", param="prompt")


def _chat_key(messages: Any) -> tuple[Hashable, ...]:
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages must be a non-empty list.", param="messages")
    words: list[str] = []
    for msg in messages:
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            raise ApiError(400, "each message needs a role and content.", param="messages")
        content = msg.get("content")
        if isinstance(content, list):  # [{"type": "text", "text": "..."}]
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise ApiError(400, "message content must be a string.", param="messages")
        words += ["<|im_start|>", msg["role"], *content.split(), "<|im_end|>"]
    words += ["<|im_start|>", "assistant"]
    return tuple(words)


def parse_request(
    kind: Kind, body: Any, served_names: Sequence[str], max_model_len: int
) -> GenRequest:
    """Validate a ``/v1/completions`` or ``/v1/chat/completions`` body as vLLM would."""
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, "model is required.", param="model")
    if model not in served_names:
        raise ApiError(404, f"The model `{model}` does not exist.", param="model")
    if kind == "completion":
        if "prompt" not in body:
            raise ApiError(400, "prompt is required.", param="prompt")
        key = _prompt_key(body["prompt"])
        max_tokens = _int_field(body, "max_tokens")
    else:
        key = _chat_key(body.get("messages"))
        max_tokens = _int_field(body, "max_completion_tokens")
        if max_tokens is None:
            max_tokens = _int_field(body, "max_tokens")
    n = body.get("n", 1)
    if n != 1:
        raise ApiError(400, "The simulator supports only n=1.", param="n")
    prompt_tokens = max(1, len(key))
    if max_tokens is None:
        max_tokens = max(1, max_model_len - prompt_tokens)
    if prompt_tokens + max_tokens > max_model_len:
        raise ApiError(
            400,
            f"This model's maximum context length is {max_model_len} tokens. However, you "
            f"requested {prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, "
            f"{max_tokens} in the completion). Please reduce the length of the messages or "
            "completion.",
        )
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise ApiError(400, "stream_options must be an object.", param="stream_options")
    return GenRequest(
        kind=kind,
        model=model,
        prompt_key=key,
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        stream=bool(body.get("stream", False)),
        include_usage=bool(options.get("include_usage", False)),
        ignore_eos=bool(body.get("ignore_eos", False)),
    )


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }


class TextSource:
    """The deterministic words a request generates: token ``i`` is one word."""

    def __init__(self, prompt_key: Sequence[Hashable]) -> None:
        self.offset = zlib.crc32(repr(tuple(prompt_key[:8])).encode()) % len(WORDS)

    def json_text(self, start: int, stop: int) -> bytes:
        """Tokens ``start..stop`` as a JSON string literal."""
        n = len(_WORD_BYTES)
        return (
            b'"' + b"".join(_WORD_BYTES[(self.offset + i) % n] for i in range(start, stop)) + b'"'
        )

    def text(self, start: int, stop: int) -> str:
        n = len(WORDS)
        return "".join(" " + WORDS[(self.offset + i) % n] for i in range(start, stop))


class StreamWriter:
    """SSE bytes for one streamed request, in vLLM's chunk shapes."""

    def __init__(self, req: GenRequest, reasoning_tokens: int = 0) -> None:
        self.req = req
        self.source = TextSource(req.prompt_key)
        self.reasoning_tokens = reasoning_tokens if req.kind == "chat" else 0
        self.created = int(time.time())
        rid = os.urandom(16).hex()
        self.id = f"cmpl-{rid}" if req.kind == "completion" else f"chatcmpl-{rid}"
        obj = "text_completion" if req.kind == "completion" else "chat.completion.chunk"
        self._head = {"id": self.id, "object": obj, "created": self.created, "model": req.model}
        head = json.dumps(self._head, separators=(",", ":"))[:-1]
        if req.kind == "completion":
            self._prefix = f'data: {head},"choices":[{{"index":0,"text":'.encode()
            self._tail = ',"logprobs":null,"finish_reason":{},"stop_reason":null}}]}}\n\n'
        else:
            self._prefix = f'data: {head},"choices":[{{"index":0,"delta":{{'.encode()
            self._tail = '}},"logprobs":null,"finish_reason":{}}}]}}\n\n'
        self._open = self._tail.format("null").encode()
        self.started = False

    def _chunk(self, field: bytes, text: bytes, finish_reason: str | None) -> bytes:
        tail = (
            self._open
            if finish_reason is None
            else self._tail.format(json.dumps(finish_reason)).encode()
        )
        return self._prefix + field + text + tail

    def tokens(self, start: int, stop: int, finish_reason: str | None) -> bytes:
        """Chunk(s) for tokens ``start..stop``; the last carries ``finish_reason`` if given."""
        if self.req.kind == "completion":
            return self._chunk(b"", self.source.json_text(start, stop), finish_reason)
        out = b""
        if not self.started:
            out += self._prefix + b'"role":"assistant","content":""' + self._open
            self.started = True
        split = min(max(self.reasoning_tokens, start), stop)
        if start < split:
            out += self._chunk(
                b'"reasoning_content":',
                self.source.json_text(start, split),
                finish_reason if split == stop else None,
            )
        if split < stop or start == stop:
            out += self._chunk(b'"content":', self.source.json_text(split, stop), finish_reason)
        return out

    def usage(self, completion_tokens: int) -> bytes:
        body = {
            **self._head,
            "choices": [],
            "usage": _usage(self.req.prompt_tokens, completion_tokens),
        }
        return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"

    DONE = b"data: [DONE]\n\n"


def full_response(
    req: GenRequest, completion_tokens: int, finish_reason: str, reasoning_tokens: int = 0
) -> dict[str, Any]:
    """The non-streaming body for a finished request."""
    source = TextSource(req.prompt_key)
    created = int(time.time())
    rid = os.urandom(16).hex()
    usage = _usage(req.prompt_tokens, completion_tokens)
    if req.kind == "completion":
        return {
            "id": f"cmpl-{rid}",
            "object": "text_completion",
            "created": created,
            "model": req.model,
            "choices": [
                {
                    "index": 0,
                    "text": source.text(0, completion_tokens),
                    "logprobs": None,
                    "finish_reason": finish_reason,
                    "stop_reason": None,
                    "prompt_logprobs": None,
                }
            ],
            "usage": usage,
        }
    split = min(reasoning_tokens, completion_tokens)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": source.text(split, completion_tokens),
    }
    message["reasoning_content"] = source.text(0, split) if split else None
    message["tool_calls"] = []
    return {
        "id": f"chatcmpl-{rid}",
        "object": "chat.completion",
        "created": created,
        "model": req.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason,
                "stop_reason": None,
            }
        ],
        "usage": usage,
    }


def reasoning_tokens_for(target: int, share: float) -> int:
    """How many of a chat request's ``target`` tokens a reasoning model spends thinking."""
    return int(round(target * share))
