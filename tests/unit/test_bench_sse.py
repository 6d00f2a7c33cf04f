"""SSE framing at any byte boundary, and the fast classifier agreeing with the full parse."""

from __future__ import annotations

import json

import pytest

from tuner.bench import sse
from tuner.bench.sse import (
    CONTENT,
    DONE,
    NONE,
    PARSE,
    REASONING,
    ROLE,
    SseParser,
    classify,
    parse_event,
)


def completion(text: str | None, **extra: object) -> bytes:
    choice: dict[str, object] = {
        "index": 0,
        "text": text,
        "logprobs": None,
        "finish_reason": None,
        "stop_reason": None,
    }
    body = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1,
        "model": "m",
        "choices": [choice],
        "usage": None,
        **extra,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def chat(delta: dict[str, object], **extra: object) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
        **extra,
    }
    return json.dumps(body, separators=(",", ":")).encode()


USAGE = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}

PAYLOADS = [
    (completion(" the"), CONTENT),
    # vllm bench serve's rule: a chunk with choices is a token, empty text included (a
    # byte of a multi-byte character, a special token: vLLM sends "text":"" for them).
    (completion(""), CONTENT),
    (completion(None), CONTENT),
    (completion('say "text":"x"'), CONTENT),
    (completion("\\"), CONTENT),
    (completion("é"), CONTENT),
    (json.dumps({"choices": [], "usage": USAGE}).encode(), NONE),
    (json.dumps({"choices": [], "usage": USAGE}, separators=(",", ":")).encode(), NONE),
    (completion(" x", usage=USAGE), CONTENT),
    # The role announcement has choices: timed as in vllm bench serve, but not a token.
    (chat({"role": "assistant", "content": ""}), ROLE),
    (chat({"role": "assistant"}), ROLE),
    (chat({"role": "assistant", "content": None}), ROLE),
    (chat({"content": " hi"}), CONTENT),
    (chat({"content": None, "reasoning_content": " hmm"}), REASONING),
    (chat({"reasoning": " hmm"}), REASONING),
    (chat({"reasoning_content": "", "content": "ok"}), CONTENT),
    (chat({"reasoning_content": "a", "content": "b"}), CONTENT),
    (chat({}), CONTENT),
    (chat({"content": ""}), CONTENT),
    (chat({"role": None, "content": ""}), CONTENT),
    (chat({"role": "assistant", "content": " hi"}), CONTENT),
    (chat({"role": "user"}), ROLE),
    (json.dumps({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}).encode(), ROLE),
    (chat({"content": "", "tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}), CONTENT),
    (json.dumps({"choices": [{"index": 0, "text": " spaced"}]}).encode(), CONTENT),
    (json.dumps({"error": {"message": "boom"}}).encode(), NONE),
    (b"[DONE]", DONE),
]


@pytest.mark.parametrize("payload,kind", PAYLOADS)
def test_parse_event_reads_the_kind(payload: bytes, kind: int) -> None:
    assert parse_event(payload).kind == kind


@pytest.mark.parametrize("payload,kind", PAYLOADS)
def test_fast_path_answers_only_what_the_full_parse_says(payload: bytes, kind: int) -> None:
    fast = classify(payload)
    assert fast == PARSE or fast == parse_event(payload).kind


def test_fast_path_decides_the_common_chunks_without_json() -> None:
    assert classify(completion(" the")) == CONTENT
    assert classify(chat({"content": " hi"})) == CONTENT
    assert classify(chat({"reasoning_content": " hm"})) == REASONING
    assert classify(chat({"role": "assistant", "content": ""})) == ROLE
    assert classify(completion("")) == CONTENT
    assert classify(chat({"content": ""})) == CONTENT
    assert classify(b"[DONE]") == DONE


# Verbatim from vLLM 0.32.0's CPU build serving the tiny model (the vllm tier's server).
VLLM_032_EMPTY_TEXT = (
    b'{"id":"cmpl-8b54f112e4ecf785","object":"text_completion","created":1796355157,'
    b'"model":"tiny-llama","choices":[{"index":0,"text":"","logprobs":null,'
    b'"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}'
)


def test_vllms_empty_text_chunk_is_a_token_on_the_fast_path() -> None:
    assert classify(VLLM_032_EMPTY_TEXT) == CONTENT == parse_event(VLLM_032_EMPTY_TEXT).kind


def test_usage_errors_and_unknown_shapes_go_to_the_full_parse() -> None:
    assert classify(json.dumps({"choices": [], "usage": USAGE}).encode()) == PARSE
    assert classify(json.dumps({"error": {"message": "x"}}).encode()) == PARSE
    assert classify(b'{"choices":[{"text":') == PARSE  # truncated: cannot tell
    assert classify(b"not json") == PARSE


def test_parse_event_reports_usage_errors_and_malformed_json() -> None:
    assert parse_event(json.dumps({"choices": [], "usage": USAGE}).encode()).usage == USAGE
    err = parse_event(json.dumps({"error": {"message": "out of memory"}}).encode())
    assert err.error == "error event: out of memory"
    bad = parse_event(b'{"choices": [')
    assert bad.error is not None and bad.error.startswith("malformed SSE:")
    assert parse_event(b"[1, 2]").error is not None


STREAM = (
    b"data: " + completion(" a") + b"\n\n"
    b": keep-alive comment\n\n"
    b"event: message\nid: 7\ndata: " + completion(" b") + b"\n\n"
    b"data: " + json.dumps({"choices": [], "usage": USAGE}).encode() + b"\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    completion(" a"),
    completion(" b"),
    json.dumps({"choices": [], "usage": USAGE}).encode(),
    b"[DONE]",
]


def test_whole_stream_in_one_feed() -> None:
    assert SseParser().feed(STREAM) == EXPECTED


@pytest.mark.parametrize("step", [1, 2, 3, 5, 7, 64])
def test_split_at_every_boundary(step: int) -> None:
    parser = SseParser()
    out: list[bytes] = []
    for i in range(0, len(STREAM), step):
        out += parser.feed(STREAM[i : i + step])
    assert out == EXPECTED
    assert parser.pending == b""


def test_every_single_split_point() -> None:
    for cut in range(1, len(STREAM)):
        parser = SseParser()
        assert parser.feed(STREAM[:cut]) + parser.feed(STREAM[cut:]) == EXPECTED


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"])
def test_crlf_and_cr_line_endings_even_split_between_cr_and_lf(newline: bytes) -> None:
    stream = STREAM.replace(b"\n", newline)
    for cut in range(1, len(stream)):
        parser = SseParser()
        out = parser.feed(stream[:cut]) + parser.feed(stream[cut:]) + parser.flush()
        assert out == EXPECTED


def test_multi_line_data_joins_with_newline_and_no_space_is_fine() -> None:
    assert SseParser().feed(b"data:one\ndata: two\n\n") == [b"one\ntwo"]


def test_flush_ends_the_last_event_at_end_of_stream() -> None:
    parser = SseParser()
    assert parser.feed(b"data: [DONE]") == []
    assert parser.flush() == [b"[DONE]"]
    assert parser.flush() == []


def test_an_unfinished_event_stays_pending() -> None:
    parser = SseParser()
    assert parser.feed(b"data: " + completion(" a")) == []
    assert parser.pending.startswith(b"data: ")
    assert parser.feed(b"\n\n") == [completion(" a")]


def test_constants_are_distinct() -> None:
    assert len({sse.NONE, sse.CONTENT, sse.REASONING, sse.DONE, sse.PARSE, sse.ROLE}) == 6
