"""The parallel layout (tuner/space/layout.py), server.gpus and objective.per_gpu in the spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_validity import MINIMAX
from tuner.errors import ConfigError
from tuner.space.layout import Layout, gpu_refusal, layout_of
from tuner.space.model_limits import settings_refusal
from tuner.space.settings import settings_from_params
from tuner.space.spec import parse_space

LAYOUT_PARAMS = {
    "tp": {"args": ["--tensor-parallel-size", "{value}"], "choices": ["default", 2, 6, 8]},
    "ep": {"args": ["--enable-expert-parallel"], "choices": ["default", True]},
    "pp": {"args": ["--pipeline-parallel-size", "{value}"], "choices": ["default", 2, 4]},
}


def space(**overrides: Any) -> Any:
    raw: dict[str, Any] = {
        "server": {"command": ["vllm", "serve", "m", "-tp", "4", "--port", "{port}"], "gpus": 8},
        "params": LAYOUT_PARAMS,
        "benchmark": {"concurrency": [1, 256]},
        "objective": {"metric": "output_throughput", "concurrency": 256, "per_gpu": True},
    }
    for key, value in overrides.items():
        raw[key] = {**raw[key], **value} if isinstance(raw.get(key), dict) else value
    return parse_space(raw, Path("layout.yaml"))


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], Layout(1, 1, False)),
        (["-tp", "4", "--tensor-parallel-size", "8"], Layout(8, 1, False)),  # the last wins
        (["--tensor-parallel-size=2", "-pp", "2"], Layout(2, 2, False)),
        (["--pipeline_parallel_size", "4", "-tp", "2", "-ep"], Layout(2, 4, True)),
        (["-tp", "8", "--enable-expert-parallel", "--no-enable-expert-parallel"], Layout(8)),
        (["-tp", "x"], Layout(1)),  # not a number: the server says so, not us
    ],
)
def test_layout_of_reads_tp_pp_and_ep_as_vllm_does(argv: list[str], expected: Layout) -> None:
    assert layout_of(argv) == expected


def test_a_layout_uses_tp_times_pp_gpus_whatever_ep() -> None:
    assert Layout(4, 2, True).gpus == 8
    assert Layout(8, 1, True).describe() == "TP=8 x PP=1 with EP (8 GPUs)"


def test_gpu_refusal_names_the_product_and_server_gpus() -> None:
    assert gpu_refusal(Layout(8, 1), 8) is None
    assert gpu_refusal(Layout(8, 2), None) is None  # unknown: not checked
    tp_only = gpu_refusal(Layout(16, 1), 8)
    assert tp_only is not None and "Tensor parallel size (16)" in tp_only
    both = gpu_refusal(Layout(4, 4), 8)
    assert both is not None and "needs 16 GPUs, more than the 8 available (server.gpus)" in both


def refused(sp: Any, config: Any, **params: Any) -> str | None:
    return settings_refusal(sp, config, settings_from_params(sp.spec, params))


def test_a_trial_needing_more_gpus_than_the_server_has_is_refused_without_a_config() -> None:
    sp = space()
    assert refused(sp, None, pp=2) is None  # TP=4 from the command x 2 = 8
    reason = refused(sp, None, pp=4)
    assert reason is not None and "needs 16 GPUs" in reason
    assert refused(space(server={"gpus": None}), None, pp=4) is None


def test_the_model_shape_refuses_what_cannot_load_and_ep_lifts_the_block_rule() -> None:
    sp = space()
    assert "KV heads" in (refused(sp, MINIMAX, tp=6) or "")
    assert "block_n = 128" in (refused(sp, MINIMAX, tp=8) or "")
    assert refused(sp, MINIMAX, tp=8, ep=True) is None
    assert "needs 16 GPUs" in (refused(sp, MINIMAX, tp=8, ep=True, pp=2) or "")


def test_per_gpu_is_read_and_labelled() -> None:
    objective = space().spec.objective
    assert objective.per_gpu is True
    assert objective.label == "output_throughput/GPU"
    assert space(objective={"per_gpu": False}).spec.objective.label == "output_throughput"


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"objective": {"metric": "ttft_ms_p99"}}, "ttft_ms_p99 is not a throughput"),
        (
            {"probe": {"command": ["probe", "{sizes}"], "sizes": [1, 2], "layers": 2}},
            "objective.per_gpu is set with a probe: section",
        ),
        ({"server": {"gpus": 0}}, "server.gpus"),
    ],
)
def test_per_gpu_where_it_cannot_be_computed_is_a_clear_error(
    overrides: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError) as err:
        space(**overrides)
    message = str(err.value)
    assert message.startswith("layout.yaml: ") and says in message, message


def test_per_gpu_with_several_objectives_is_refused() -> None:
    several = [
        {"metric": "output_throughput", "concurrency": 1},
        {"metric": "ttft_ms_p99", "concurrency": 256},
    ]
    raw = {
        "server": {"command": ["vllm", "serve", "m", "--port", "{port}"]},
        "benchmark": {"concurrency": [1, 256]},
        "objective": {"per_gpu": True},
        "objectives": several,
    }
    with pytest.raises(ConfigError, match="objective.per_gpu is set with objectives:"):
        parse_space(raw, Path("layout.yaml"))
