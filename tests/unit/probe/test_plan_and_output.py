"""The probe section of a space file, its sizes from config.json, and the probe's JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tuner.errors import ConfigError
from tuner.probe.run import ProbeError, ProbeResult, parse_probe_output, probe_argv
from tuner.probe.sizes import ProbePlanError, probe_plan
from tuner.space.spec import parse_space

SERVER = {"command": ["srv", "--port", "{port}"]}
KIMI_CONFIG = {"hidden_size": 7168, "num_hidden_layers": 61, "_tuner_config_path": "/m/config.json"}


def _space(probe: dict[str, Any], **extra: Any):  # type: ignore[no-untyped-def]
    return parse_space({"server": SERVER, "probe": probe, **extra}, Path("s.yaml")).spec


def test_defaults_of_the_probe_section() -> None:
    probe = _space({"command": ["p"]}).probe
    assert probe is not None
    assert (probe.sizes, probe.repeats, probe.layers, probe.allreduces_per_layer) == (
        "auto",
        5,
        "auto",
        2,
    )
    assert (probe.bytes_per_element, probe.timeout_s, probe.comm_share) == (2, 120, "auto")
    assert parse_space({"server": SERVER}, Path("s.yaml")).spec.probe is None


@pytest.mark.parametrize(
    ("probe", "message"),
    [
        ({"command": "tuner probe allreduce"}, "probe.command: must be a list of arguments"),
        ({"command": ["p", "{port}"]}, r"unknown placeholder \{port\}"),
        ({"command": ["p"], "prefill_sizes": [0]}, "probe.prefill_sizes: .*prompt tokens x"),
        ({"command": ["p"], "sizes": []}, "probe.sizes: list the message sizes in bytes"),
        ({"command": ["p"], "repeats": 1}, "probe.repeats"),
        ({"command": ["p"], "layers": 0}, "probe.layers: a layer count is a positive integer"),
        ({"command": ["p"], "comm_share": 1.5}, "probe.comm_share: the share of a decode step"),
        ({"command": ["p"], "repeat": 3}, "probe.repeat: unknown key"),
        ({"command": ["p"], "sizes": [14336]}, "probe.sizes lists 1 size.* but benchmark"),
    ],
)
def test_mistakes_name_the_file_the_key_and_the_fix(probe: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        _space(probe, benchmark={"concurrency": [1, 8]})
    assert str(info.value).startswith("s.yaml: ")


def test_sizes_come_from_hidden_size_bytes_and_each_level_batch() -> None:
    spec = _space({"command": ["p"]}, benchmark={"concurrency": [1, 8]})
    assert spec.probe is not None
    plan = probe_plan(spec.probe, spec.benchmark, KIMI_CONFIG)
    assert plan.by_level == {1: 14336, 8: 114688}
    # and one prompt's prefill all-reduce: 256 tokens (the benchmark's default) x 7168 x 2
    assert plan.prefill == (256 * 7168 * 2,)
    assert plan.sizes == (14336, 114688, 256 * 7168 * 2)
    assert plan.allreduces_per_token == 122  # two per layer
    assert "/m/config.json" in plan.source


def test_prefill_sizes_follow_prompt_tokens_or_the_list_and_never_decide() -> None:
    spec = _space(
        {"command": ["p"], "bytes_per_element": 1},
        benchmark={"concurrency": [1], "prompt_tokens": 1000},
    )
    assert spec.probe is not None
    plan = probe_plan(spec.probe, spec.benchmark, KIMI_CONFIG)
    assert plan.prefill == (1000 * 7168,) and plan.by_level == {1: 7168}
    listed = _space({"command": ["p"], "sizes": [14336], "layers": 61, "prefill_sizes": [2, 1]})
    assert listed.probe is not None
    plan = probe_plan(listed.probe, listed.benchmark, None)
    assert (plan.prefill, plan.sizes, plan.by_level) == ((1, 2), (1, 2, 14336), {1: 14336})
    none = _space({"command": ["p"], "prefill_sizes": []})
    assert none.probe is not None
    assert probe_plan(none.probe, none.benchmark, KIMI_CONFIG).prefill == ()


def test_auto_prefill_without_a_config_json_probes_no_prefill_size() -> None:
    listed = _space({"command": ["p"], "sizes": [14336], "layers": 61})
    assert listed.probe is not None
    plan = probe_plan(listed.probe, listed.benchmark, None)
    assert (plan.prefill, plan.sizes) == ((), (14336,))


def test_a_nested_text_config_and_the_space_counts_win() -> None:
    spec = _space(
        {"command": ["p"], "layers": 4, "allreduces_per_layer": 1, "bytes_per_element": 1},
        benchmark={"concurrency": [2]},
    )
    assert spec.probe is not None
    nested = {"text_config": {"num_attention_heads": 8, "hidden_size": 512}}
    plan = probe_plan(spec.probe, spec.benchmark, nested)
    assert plan.by_level == {2: 1024} and plan.allreduces_per_token == 4


def test_listed_sizes_pair_with_the_levels_in_order_and_extra_ones_are_probed() -> None:
    spec = _space(
        {"command": ["p"], "sizes": [14336, 114688, 1 << 20], "layers": 61},
        benchmark={"concurrency": [1, 8]},
    )
    assert spec.probe is not None
    plan = probe_plan(spec.probe, spec.benchmark, None)
    assert plan.by_level == {1: 14336, 8: 114688}
    assert plan.sizes == (14336, 114688, 1 << 20)
    assert plan.source == "the space file"


def test_auto_without_a_config_json_says_what_to_write() -> None:
    spec = _space({"command": ["p"]})
    assert spec.probe is not None
    with pytest.raises(ProbePlanError, match="list the message sizes in bytes"):
        probe_plan(spec.probe, spec.benchmark, None)
    listed = _space({"command": ["p"], "sizes": [14336]}).probe
    assert listed is not None
    with pytest.raises(ProbePlanError, match="set probe.layers"):
        probe_plan(listed, spec.benchmark, {"hidden_size": 7168})


def test_placeholders_of_the_probe_command() -> None:
    spec = _space({"command": ["{python}", "-m", "x", "--sizes", "{sizes}", "-n", "{repeats}",
                               "{space_dir}/p"]})  # fmt: skip
    assert spec.probe is not None
    argv = probe_argv(spec.probe, [14336, 114688], {"space_dir": "/s"})
    assert argv[3:] == ["--sizes", "14336,114688", "-n", "5", "/s/p"]
    assert argv[0].endswith("python") or "python" in argv[0]


def test_the_json_may_follow_log_lines_and_carry_samples_and_extra_keys() -> None:
    text = (
        "NCCL INFO Bootstrap : Using eth0\n"
        '{"sizes": {"14336": 41.5}, "samples": {"14336": [41, 42]}, "backend": "nccl"}\n'
    )
    sizes, samples, extra = parse_probe_output(text)
    assert sizes == {14336: 41.5}
    assert samples == {14336: [41.0, 42.0]}
    assert extra == {"backend": "nccl"}
    pretty = '{\n  "sizes": {"8": 3}\n}\n'
    assert parse_probe_output(pretty)[0] == {8: 3.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello\n", 'no JSON object with a "sizes" key'),
        ('{"sizes": []}', '"sizes" must be an object'),
        ('{"sizes": {"big": 3}}', "not a whole number of bytes"),
        ('{"sizes": {"8": "fast"}}', "not a number of microseconds"),
        ('{"sizes": {"8": 0}}', "microseconds above zero"),
        ('{"sizes": {"8": 1}, "samples": {"8": []}}', "a non-empty list"),
    ],
)
def test_a_malformed_probe_output_is_explained(text: str, message: str) -> None:
    with pytest.raises(ProbeError, match=message):
        parse_probe_output(text)


def test_a_result_survives_its_json_round_trip() -> None:
    result = ProbeResult(samples={14336: (1.0, 2.0)}, extra={"backend": "sim"}, seconds=0.5)
    again = ProbeResult.from_json(result.to_json())
    assert again == result
    assert again.mean_us(14336) == 1.5
