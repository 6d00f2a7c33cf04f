"""LoadSpec checks, the split among workers, prompts and request bodies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuner.bench import LoadSpec, load_from_benchmark_spec
from tuner.bench.load import DURATION_STRIDE, PromptCursor, split
from tuner.bench.prompts import BodyBuilder, load_prompts, synthetic_prompt
from tuner.errors import ConfigError
from tuner.space.spec import BenchmarkSpec


def test_defaults_and_count_or_duration() -> None:
    assert LoadSpec(model="m").requests == 16
    assert LoadSpec(model="m", duration_s=5).requests is None
    with pytest.raises(ConfigError, match="not both"):
        LoadSpec(model="m", requests=4, duration_s=5)


@pytest.mark.parametrize(
    "bad",
    [
        {"concurrency": 0},
        {"requests": 0},
        {"duration_s": 0},
        {"rate": 0},
        {"rate": -1},
        {"api": "embeddings"},
        {"prompt_tokens": 0},
        {"max_tokens": 0},
        {"timeout_s": 0},
        {"warmup": -1},
        {"workers": -1},
    ],
)
def test_invalid_loads_are_config_errors(bad: dict) -> None:
    with pytest.raises(ConfigError):
        LoadSpec(model="m", **bad)


def test_from_a_space_files_benchmark_section() -> None:
    spec = BenchmarkSpec(
        api="chat",
        prompt_tokens=100,
        max_tokens=50,
        concurrency=[1, 8],
        requests=32,
        warmup=3,
        request_timeout_s=30,
        ignore_eos=False,
    )
    load = load_from_benchmark_spec(spec, 8, "served-model")
    assert (load.api, load.model) == ("chat", "served-model")
    assert (load.concurrency, load.requests) == (8, 32)
    assert (load.prompt_tokens, load.max_tokens, load.warmup) == (100, 50, 3)
    assert (load.timeout_s, load.ignore_eos) == (30, False)
    named = load_from_benchmark_spec(BenchmarkSpec(model="pinned"), 1, "served-model")
    assert named.model == "pinned"


def test_split_among_workers_adds_up() -> None:
    load = LoadSpec(model="m", concurrency=10, requests=25, rate=9.0)
    shares = split(load, 3)
    assert [s.concurrency for s in shares] == [4, 3, 3]
    assert sum(s.requests or 0 for s in shares) == 25
    assert sum(s.rate or 0 for s in shares) == pytest.approx(9.0)
    indexes = {s.index_start + k * s.index_step for s in shares for k in range(s.requests or 0)}
    assert indexes == set(range(25))  # every request index once


def test_each_window_sends_its_own_prompts() -> None:
    # Rounds and levels of one launch used to send the same indexes: from the second window
    # on, every prompt was in the server's prefix cache.
    def indexes(load: LoadSpec) -> set[int]:
        shares = split(load, 3)
        return {s.index_start + k * s.index_step for s in shares for k in range(s.requests or 0)}

    cursor = PromptCursor()
    counted = [LoadSpec(model="m", concurrency=8, requests=n) for n in (16, 4)]
    seen = [indexes(cursor.take(load)) for load in (*counted, *counted)]
    assert seen == [set(range(16)), set(range(16, 20)), set(range(20, 36)), set(range(36, 40))]
    # A duration has no count: the next window starts far past it.
    timed = cursor.take(LoadSpec(model="m", duration_s=5.0))
    assert timed.first_index == 40
    assert cursor.take(counted[0]).first_index == 40 + DURATION_STRIDE
    # Another launch's cursor: the same windows, the same prompts.
    again = PromptCursor()
    assert [again.take(load).first_index for load in counted] == [0, 16]
    with pytest.raises(ConfigError):
        LoadSpec(model="m", first_index=-1)


def test_a_prompts_file_is_read_on_across_windows(tmp_path: Path) -> None:
    # A file of 1024 prompts: windows read on through it, not from its first line again.
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"p{i}"}) + "\n" for i in range(1024)))
    builder = BodyBuilder(
        api="completions", model="m", prompt_tokens=4, max_tokens=4, ignore_eos=True, seed=0,
        prompts=load_prompts(path),
    )  # fmt: skip
    cursor = PromptCursor()
    sent = []
    for _ in range(4):
        load = cursor.take(LoadSpec(model="m", concurrency=4, requests=256))
        sent += [builder.prompt(s.index_start + k * s.index_step).prompt
                 for s in split(load, 1) for k in range(s.requests or 0)]  # fmt: skip
    assert len(set(sent)) == 1024


def test_no_more_workers_than_streams() -> None:
    assert len(split(LoadSpec(model="m", concurrency=2, requests=8), 8)) == 2


def test_synthetic_prompts_are_deterministic_distinct_and_sized() -> None:
    a = synthetic_prompt(64, 0, seed=1)
    assert a == synthetic_prompt(64, 0, seed=1)
    assert len(a.split()) == 64
    assert a != synthetic_prompt(64, 1, seed=1) and a != synthetic_prompt(64, 0, seed=2)
    # No shared prefix a server could cache across requests.
    assert a.split()[:4] != synthetic_prompt(64, 1, seed=1).split()[:4]


def test_completion_and_chat_bodies() -> None:
    builder = BodyBuilder(
        api="completions", model="m", prompt_tokens=8, max_tokens=5, ignore_eos=True, seed=0
    )
    body, expected = builder.body(3)
    obj = json.loads(body)
    assert builder.path == "/v1/completions" and expected == 8
    assert obj["model"] == "m" and obj["max_tokens"] == 5 and obj["stream"] is True
    assert obj["stream_options"] == {"include_usage": True} and obj["ignore_eos"] is True
    assert len(obj["prompt"].split()) == 8
    chat = BodyBuilder(
        api="chat",
        model="m",
        prompt_tokens=8,
        max_tokens=5,
        ignore_eos=False,
        seed=0,
        extra_body={"temperature": 0},
    )
    obj = json.loads(chat.body(3)[0])
    assert chat.path == "/v1/chat/completions"
    assert obj["messages"][0]["role"] == "user" and obj["max_completion_tokens"] == 5
    assert "ignore_eos" not in obj and obj["temperature"] == 0


def test_prompts_file(tmp_path: Path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        '{"prompt": "hello there world", "max_tokens": 7}\n\n'
        '{"messages": [{"role": "user", "content": "hi"}]}\n'
    )
    prompts = load_prompts(path)
    assert len(prompts) == 2 and prompts[0].max_tokens == 7
    chat = BodyBuilder(
        api="chat",
        model="m",
        prompt_tokens=1,
        max_tokens=9,
        ignore_eos=True,
        seed=0,
        prompts=prompts,
    )
    first, second, third = (json.loads(chat.body(i)[0]) for i in range(3))
    assert first["messages"] == [{"role": "user", "content": "hello there world"}]
    assert first["max_completion_tokens"] == 7
    assert second["messages"] == [{"role": "user", "content": "hi"}]
    assert third == first  # cycles in file order
    completions = BodyBuilder(
        api="completions",
        model="m",
        prompt_tokens=1,
        max_tokens=9,
        ignore_eos=True,
        seed=0,
        prompts=prompts,
    )
    with pytest.raises(ConfigError, match="chat"):
        completions.body(1)


@pytest.mark.parametrize(
    "text,match",
    [
        ("not json\n", "not JSON"),
        ("[1]\n", "object"),
        ('{"other": 1}\n', "'prompt'"),
        ('{"prompt": "x", "max_tokens": 0}\n', "max_tokens"),
        ("\n", "no prompts"),
    ],
)
def test_bad_prompts_files_name_the_line(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_prompts(path)


def test_missing_prompts_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_prompts(tmp_path / "absent.jsonl")


def test_cpus_pin_the_client() -> None:
    assert LoadSpec(model="m", cpus=[0, 1]).cpus == (0, 1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="cpus"):
        LoadSpec(model="m", cpus=())
    spec = BenchmarkSpec(cpus=[3])
    assert load_from_benchmark_spec(spec, 1, "m").cpus == (3,)
