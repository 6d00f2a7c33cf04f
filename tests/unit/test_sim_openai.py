"""tuner.sim.openai_api, metrics and log: wire shapes, validation, and output formats."""

from __future__ import annotations

import json
import random

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tuner.sim import metrics
from tuner.sim.engine import Engine
from tuner.sim.log import format_duration, progress_line
from tuner.sim.openai_api import (
    NATURAL_MAX,
    NATURAL_MIN,
    ApiError,
    GenRequest,
    StreamWriter,
    full_response,
    natural_length,
    parse_request,
    reasoning_tokens_for,
)
from tuner.sim.profiles import PROFILES
from tuner.sim.settings import SimSettings

NAMES = ["sim/m"]


def completion(**body: object) -> GenRequest:
    return parse_request("completion", {"model": "sim/m", "prompt": "a b c", **body}, NAMES, 100)


def chat(**body: object) -> GenRequest:
    msgs = [{"role": "user", "content": "hello there"}]
    return parse_request("chat", {"model": "sim/m", "messages": msgs, **body}, NAMES, 100)


def sse_events(data: bytes) -> list[object]:
    assert data.endswith(b"\n\n")
    events = []
    for block in data.decode().split("\n\n")[:-1]:
        assert block.startswith("data: ")
        payload = block[len("data: ") :]
        events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


# -- validation ------------------------------------------------------------------------------
def test_prompt_tokens_are_words() -> None:
    req = completion(max_tokens=5)
    assert (req.prompt_tokens, req.max_tokens, req.stream) == (3, 5, False)
    assert (
        parse_request(
            "completion", {"model": "sim/m", "prompt": [1, 2, 3, 4]}, NAMES, 100
        ).prompt_tokens
        == 4
    )
    assert (
        parse_request("completion", {"model": "sim/m", "prompt": ["x y"]}, NAMES, 100).prompt_tokens
        == 2
    )


def test_chat_adds_template_tokens() -> None:
    # 2 words + 3 per message (<|im_start|> role <|im_end|>) + 2 (<|im_start|> assistant)
    assert chat().prompt_tokens == 2 + 3 + 2


def test_chat_max_completion_tokens_wins() -> None:
    assert chat(max_tokens=9, max_completion_tokens=4).max_tokens == 4
    assert chat(max_tokens=9).max_tokens == 9


def test_default_max_tokens_fills_the_context() -> None:
    assert completion().max_tokens == 97


def test_stream_options() -> None:
    req = completion(stream=True, stream_options={"include_usage": True}, ignore_eos=True)
    assert req.stream and req.include_usage and req.ignore_eos
    assert req.stop_at() is None
    assert NATURAL_MIN <= completion().stop_at() <= NATURAL_MAX  # type: ignore[operator]


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        ({"prompt": "x", "max_tokens": 1}, 400, "model is required"),
        ({"model": "other", "prompt": "x"}, 404, "The model `other` does not exist."),
        ({"model": "sim/m"}, 400, "prompt is required"),
        (
            {"model": "sim/m", "prompt": "x", "max_tokens": 0},
            400,
            "max_tokens must be at least 1, got 0.",
        ),
        ({"model": "sim/m", "prompt": "x", "max_tokens": -3}, 400, "at least 1"),
        ({"model": "sim/m", "prompt": "x", "max_tokens": "5"}, 400, "must be an integer"),
        ({"model": "sim/m", "prompt": "x", "n": 2}, 400, "n=1"),
        ({"model": "sim/m", "prompt": ["a", "b"]}, 400, "one prompt"),
        (
            {"model": "sim/m", "prompt": "x " * 90, "max_tokens": 20},
            400,
            "maximum context length is 100 tokens",
        ),
    ],
)
def test_completion_errors(body: dict[str, object], status: int, text: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_request("completion", body, NAMES, 100)
    assert info.value.status == status
    assert text in info.value.message
    err = info.value.body()["error"]
    assert err["code"] == status and err["message"] == info.value.message


@pytest.mark.parametrize("messages", [[], None, "hi", [{"content": "no role"}]])
def test_chat_errors(messages: object) -> None:
    with pytest.raises(ApiError) as info:
        parse_request("chat", {"model": "sim/m", "messages": messages}, NAMES, 100)
    assert info.value.status == 400


def test_natural_length_is_deterministic() -> None:
    key = ("some", "prompt")
    assert natural_length(key) == natural_length(key)
    lengths = {natural_length((str(i),)) for i in range(200)}
    assert min(lengths) >= NATURAL_MIN and max(lengths) <= NATURAL_MAX and len(lengths) > 50


# -- streaming shapes ------------------------------------------------------------------------
def test_completion_chunks() -> None:
    req = completion(stream=True, max_tokens=3)
    w = StreamWriter(req)
    first = sse_events(w.tokens(0, 1, None))
    rest = sse_events(w.tokens(1, 3, "length") + w.usage(3) + w.DONE)
    (c0,) = first
    assert c0["object"] == "text_completion" and c0["model"] == "sim/m"  # type: ignore[index]
    assert c0["id"].startswith("cmpl-")  # type: ignore[index]
    choice = c0["choices"][0]  # type: ignore[index]
    assert choice["index"] == 0 and choice["finish_reason"] is None
    assert choice["text"].startswith(" ") and len(choice["text"].split()) == 1
    last, usage, done = rest
    assert len(last["choices"][0]["text"].split()) == 2  # type: ignore[index]
    assert last["choices"][0]["finish_reason"] == "length"  # type: ignore[index]
    assert usage["choices"] == []  # type: ignore[index]
    assert usage["usage"] == {
        "prompt_tokens": 3,
        "completion_tokens": 3,  # type: ignore[index]
        "total_tokens": 6,
    }
    assert done == "[DONE]"


def test_chat_chunks_with_reasoning() -> None:
    req = chat(stream=True, max_tokens=4)
    w = StreamWriter(req, reasoning_tokens=reasoning_tokens_for(4, 0.5))
    events = sse_events(w.tokens(0, 1, None) + w.tokens(1, 3, None) + w.tokens(3, 4, "length"))
    deltas = [e["choices"][0]["delta"] for e in events]  # type: ignore[index]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert list(deltas[1]) == ["reasoning_content"]
    assert list(deltas[2]) == ["reasoning_content"]  # tokens 1..2 split at the boundary
    assert list(deltas[3]) == ["content"]
    assert list(deltas[4]) == ["content"]
    assert events[-1]["choices"][0]["finish_reason"] == "length"  # type: ignore[index]
    assert all(e["object"] == "chat.completion.chunk" for e in events)  # type: ignore[index]
    words = "".join(d.get("reasoning_content", "") + d.get("content", "") for d in deltas).split()
    assert len(words) == 4


def test_chat_without_reasoning_has_only_content() -> None:
    w = StreamWriter(chat(stream=True), reasoning_tokens=0)
    events = sse_events(w.tokens(0, 2, "stop"))
    assert [list(e["choices"][0]["delta"]) for e in events] == [  # type: ignore[index]
        ["role", "content"],
        ["content"],
    ]


def test_full_responses() -> None:
    body = full_response(completion(max_tokens=4), 4, "length")
    assert len(body["choices"][0]["text"].split()) == 4
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    body = full_response(chat(max_tokens=6), 6, "length", reasoning_tokens=3)
    msg = body["choices"][0]["message"]
    assert msg["role"] == "assistant"
    assert len(msg["reasoning_content"].split()) == 3 and len(msg["content"].split()) == 3
    assert body["object"] == "chat.completion"


# -- metrics and log -------------------------------------------------------------------------
def test_metrics_parse_with_prometheus_client() -> None:
    engine = Engine(PROFILES["flat"], SimSettings(profile="flat"), rng=random.Random(0))
    engine.add(prompt_tokens=5, max_tokens=2)
    engine.finish_step(engine.schedule())  # type: ignore[arg-type]
    text = metrics.render(engine, 'sim/"quoted"')
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
    ):
        assert families[name].type == "gauge"
    for name in (
        "vllm:num_preemptions",
        "vllm:prompt_tokens",
        "vllm:generation_tokens",
        "vllm:prefix_cache_queries",
        "vllm:prefix_cache_hits",
    ):
        assert families[name].type == "counter"
    sample = families["vllm:num_requests_running"].samples[0]
    assert sample.labels["model_name"] == 'sim/"quoted"' and sample.value == 1.0
    assert families["vllm:generation_tokens"].samples[0].value == 1.0
    assert families["vllm:prompt_tokens"].samples[0].value == 5.0
    assert 0 < families["vllm:kv_cache_usage_perc"].samples[0].value < 1


def test_progress_line_shape() -> None:
    assert progress_line(36, 64, 20.0) == (
        "Loading safetensors checkpoint shards:  56% Completed | 36/64 [00:20<00:15,  1.80it/s]"
    )
    assert progress_line(0, 64, 0.0) == (
        "Loading safetensors checkpoint shards:   0% Completed | 0/64 [00:00<?, ?it/s]"
    )
    assert progress_line(1, 64, 33.75).endswith("[00:33<35:26, 33.75s/it]")
    assert progress_line(64, 64, 2160.0).startswith(
        "Loading safetensors checkpoint shards: 100% Completed | 64/64 [36:00<00:00"
    )
    assert format_duration(3725) == "1:02:05"
