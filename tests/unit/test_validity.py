"""Model-aware validity on small hand-written config.json files: what vLLM would refuse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuner.space.model_limits import (
    expert_parallel,
    find_config_json,
    hub_cache_dirs,
    load_model_config,
    model_argument,
    refusal,
    settings_refusal,
    tensor_parallel_size,
)
from tuner.space.spec import load_space

LLAMA = {  # Llama-3-70B-like: grouped-query attention
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "hidden_size": 8192,
}
MINIMAX = {  # MiniMax-M2-like: FP8 block-quantized MoE, experts 1536 wide
    "architectures": ["MiniMaxM2ForCausalLM"],
    "model_type": "minimax_m2",
    "num_attention_heads": 48,
    "num_key_value_heads": 8,
    "intermediate_size": 1536,
    "num_local_experts": 256,
    "quantization_config": {
        "quant_method": "fp8",
        "fmt": "float8_e4m3fn",
        "weight_block_size": [128, 128],
    },
}
KIMI = {  # Kimi-K2.5-like: multimodal wrapper, MLA text model, int4 (no FP8 blocks)
    "architectures": ["KimiK25ForConditionalGeneration"],
    "model_type": "kimi_k25",
    "text_config": {
        "model_type": "kimi_k2",
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "kv_lora_rank": 512,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 384,
    },
    "quantization_config": {
        "quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"weights": {"num_bits": 4, "group_size": 32}}},
    },
}


def write_model(directory: Path, config: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def write_space(tmp_path: Path, command: list[str], env: dict[str, str] | None = None) -> Path:
    path = tmp_path / "space.yaml"
    server: dict[str, Any] = {"command": command + ["--port", "{port}"]}
    if env:
        server["env"] = env
    path.write_text(yaml.safe_dump({"server": server}))
    return path


# --- refusal -------------------------------------------------------------------------------


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16, 32, 64])
def test_llama_tp_dividing_the_heads_starts(tp: int) -> None:
    # 16 and above are fewer KV heads than ranks: vLLM replicates each KV head tp / 8 times.
    assert refusal(LLAMA, ["vllm", "serve", "m", "--tensor-parallel-size", str(tp)]) is None


def test_llama_tp_not_dividing_the_attention_heads_is_refused_in_vllm_words() -> None:
    reason = refusal(LLAMA, ["-tp", "3"])
    assert reason == (
        "Total number of attention heads (64) must be divisible by tensor parallel size (3)."
    )


def test_kv_heads_that_tp_does_not_divide_are_refused() -> None:
    config = {"num_attention_heads": 24, "num_key_value_heads": 8}
    assert "8 KV heads are not divisible by tensor parallel size 6" in (
        refusal(config, ["-tp", "6"]) or ""
    )


def test_fewer_kv_heads_than_ranks_need_tp_to_be_a_multiple_of_them() -> None:
    config = {"num_attention_heads": 12, "num_key_value_heads": 3}
    assert refusal(config, ["-tp", "6"]) is None  # each KV head on 2 ranks
    reason = refusal(config, ["-tp", "4"])
    assert reason is not None and "not a multiple of the 3 KV heads" in reason


def test_minimax_fp8_blocks_at_tp8_are_refused_with_vllms_error() -> None:
    reason = refusal(MINIMAX, ["--tensor-parallel-size", "8"])
    assert reason is not None
    assert reason.startswith(
        "ValueError: The output_size of gate's and up's weight = 192 is not divisible by "
        "weight quantization block_n = 128."
    )


def test_expert_parallelism_lifts_the_fp8_block_rule() -> None:
    assert refusal(MINIMAX, ["-tp", "8", "--enable-expert-parallel"]) is None
    assert refusal(MINIMAX, ["-tp", "8", "-ep"]) is None
    assert refusal(MINIMAX, ["-tp", "8", "-ep", "--no-enable-expert-parallel"]) is not None


@pytest.mark.parametrize("tp", [2, 4])
def test_minimax_at_smaller_tp_keeps_whole_blocks(tp: int) -> None:
    assert refusal(MINIMAX, ["-tp", str(tp)]) is None  # 768 and 384 are multiples of 128


def test_block_k_is_checked_too() -> None:
    config = {**MINIMAX, "quantization_config": {"weight_block_size": [64, 256]}}
    reason = refusal(config, ["-tp", "8"])  # 192 % 64 == 0, 192 % 256 != 0
    assert reason is not None and "block_k = 256" in reason


def test_kimi_reads_the_nested_text_config_and_skips_the_kv_split_of_mla() -> None:
    assert refusal(KIMI, ["-tp", "8"]) is None
    assert refusal(KIMI, ["-tp", "16"]) is None
    reason = refusal(KIMI, ["-tp", "3"])
    assert reason is not None and "attention heads (64)" in reason


def test_no_config_or_no_tp_refuses_nothing() -> None:
    assert refusal(None, ["-tp", "3"]) is None
    assert refusal({}, ["-tp", "3"]) is None
    assert refusal(LLAMA, ["vllm", "serve", "m"]) is None


# --- reading argv --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-tp", "4"], 4),
        (["--tensor-parallel-size=2"], 2),
        (["--tensor_parallel_size", "8"], 8),
        (["-tp", "2", "--tensor-parallel-size", "4"], 4),  # the last one wins, as in argparse
        (["--port", "8000"], 1),
        (["-tp", "{value}"], 1),
    ],
)
def test_tensor_parallel_size_forms(argv: list[str], expected: int) -> None:
    assert tensor_parallel_size(argv) == expected


def test_expert_parallel_forms() -> None:
    assert expert_parallel(["--enable_expert_parallel"])
    assert not expert_parallel(["--enable-expert-parallel", "--no-enable-expert-parallel"])
    assert not expert_parallel([])


@pytest.mark.parametrize(
    ("argv", "model"),
    [
        (["vllm", "serve", "org/name", "-tp", "8"], "org/name"),
        (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"], "/m"),
        (["x", "--model=/m2"], "/m2"),
        (["vllm", "serve", "--port", "1"], None),
    ],
)
def test_model_argument(argv: list[str], model: str | None) -> None:
    assert model_argument(argv) == model


# --- finding config.json -------------------------------------------------------------------


def hub_snapshot(hub: Path, repo: str, config: dict[str, Any], revision: str = "abc123") -> Path:
    org, name = repo.split("/")
    root = hub / f"models--{org}--{name}"
    write_model(root / "snapshots" / revision, config)
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(revision)
    return root


def test_hub_cache_dirs_follow_huggingface_hub() -> None:
    assert hub_cache_dirs({"HF_HUB_CACHE": "/a"}) == [Path("/a")]
    assert hub_cache_dirs({"HF_HOME": "/h"}) == [Path("/h/hub")]
    assert hub_cache_dirs({"XDG_CACHE_HOME": "/x"}) == [Path("/x/huggingface/hub")]


def test_a_local_directory_is_read(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m", LLAMA)
    space = load_space(write_space(tmp_path, ["vllm", "serve", str(model)]))
    config = load_model_config(space)
    assert config is not None and config["num_attention_heads"] == 64


def test_the_space_dir_placeholder_is_filled(tmp_path: Path) -> None:
    write_model(tmp_path / "models" / "tiny", LLAMA)
    command = [
        "{python}",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "{space_dir}/models/tiny",
    ]
    config = load_model_config(load_space(write_space(tmp_path, command)))
    assert config is not None


def test_the_local_hub_cache_is_read_following_refs_main(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    root = hub_snapshot(tmp_path / "hf" / "hub", "MiniMaxAI/MiniMax-M2", MINIMAX)
    write_model(root / "snapshots" / "older", {"num_attention_heads": 1})
    space = load_space(write_space(tmp_path, ["vllm", "serve", "MiniMaxAI/MiniMax-M2"]))
    config = load_model_config(space)
    assert config is not None and config["intermediate_size"] == 1536


def test_the_servers_own_env_names_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    hub_snapshot(tmp_path / "cache", "moonshotai/Kimi-K2.5", KIMI)
    space = load_space(
        write_space(
            tmp_path,
            ["vllm", "serve", "moonshotai/Kimi-K2.5"],
            env={"HF_HUB_CACHE": str(tmp_path / "cache")},
        )
    )
    config = load_model_config(space)
    assert config is not None and config["model_type"] == "kimi_k25"


def test_a_model_not_on_this_machine_gives_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    assert find_config_json("org/absent") is None
    assert find_config_json(str(tmp_path / "nowhere")) is None
    space = load_space(write_space(tmp_path, ["vllm", "serve", "org/absent"]))
    assert load_model_config(space) is None


def test_a_broken_config_json_gives_none(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{not json")
    assert (
        load_model_config(load_space(write_space(tmp_path, ["vllm", "serve", str(model)]))) is None
    )


def test_settings_refusal_appends_the_trials_args_to_the_command(tmp_path: Path) -> None:
    from tuner.space.settings import settings_from_params

    model = write_model(tmp_path / "m", LLAMA)
    path = tmp_path / "space.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "server": {"command": ["vllm", "serve", str(model), "--port", "{port}"]},
                "params": {"tp": {"args": ["-tp", "{value}"], "choices": ["default", 3, 8]}},
            }
        )
    )
    space = load_space(path)
    config = load_model_config(space)
    assert settings_refusal(space, config, settings_from_params(space.spec, {"tp": 3}))
    assert settings_refusal(space, config, settings_from_params(space.spec, {"tp": 8})) is None
    assert settings_refusal(space, None, settings_from_params(space.spec, {"tp": 3})) is None
