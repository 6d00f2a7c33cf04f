"""The decode step's weight bytes per GPU, on the published shapes of real models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuner.probe.weights import ModelShapeError, decode_weight_bytes, weight_bits

KIMI = json.loads(
    (Path(__file__).parents[3] / "search_spaces/models/kimi-k2.5-int4/config.json").read_text()
)

LLAMA_3_8B = {  # meta-llama/Meta-Llama-3-8B config.json
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
}

DEEPSEEK_V3 = {  # deepseek-ai/DeepSeek-V3 config.json (the shape fields)
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "torch_dtype": "bfloat16",
    "quantization_config": {
        "quant_method": "fp8",
        "fmt": "e4m3",
        "activation_scheme": "dynamic",
        "weight_block_size": [128, 128],
    },
}


def test_dense_llama_reads_every_linear_weight_at_bf16() -> None:
    w = decode_weight_bytes(LLAMA_3_8B, 1)
    # Llama 3 8B has 8.03B parameters, 0.525B of them the embedding a step does not read.
    assert w.active_params == pytest.approx(8.03e9 - 128256 * 4096, rel=0.01)
    assert w.bytes_per_gpu == pytest.approx(2 * w.active_params)
    assert w.bytes_by_part["routed_experts"] == 0


def test_tensor_parallelism_divides_sharded_weights() -> None:
    one, two = decode_weight_bytes(LLAMA_3_8B, 1), decode_weight_bytes(LLAMA_3_8B, 2)
    assert two.bytes_per_gpu == pytest.approx(one.bytes_per_gpu / 2)


def test_fewer_kv_heads_than_ranks_keeps_one_whole_head_per_rank() -> None:
    at8, at16 = decode_weight_bytes(LLAMA_3_8B, 8), decode_weight_bytes(LLAMA_3_8B, 16)
    kv_per_layer_at16 = 2 * 4096 * 128  # k and v: one head of 128 on each rank
    q_o_per_layer_at16 = 2 * 4096 * 4096 / 16
    assert at16.bytes_by_part["attention"] == pytest.approx(
        32 * 2 * (kv_per_layer_at16 + q_o_per_layer_at16)
    )
    assert at16.bytes_by_part["attention"] > at8.bytes_by_part["attention"] / 2


def test_kimi_int4_reads_its_32b_active_parameters_at_mixed_widths() -> None:
    w = decode_weight_bytes(KIMI, 8)
    assert w.active_params == pytest.approx(32e9, rel=0.03)  # the model card's 32B activated
    assert w.bits_by_part["routed_experts"] == pytest.approx(4 + 16 / 32)
    assert w.bits_by_part["attention"] == 16  # left out of the INT4 scheme by its ignore list
    assert w.bits_by_part["shared_experts"] == 16
    assert 4e9 < w.bytes_per_gpu < 8e9
    # MLA's replicated down-projections (q_a_proj, kv_a_proj_with_mqa) are read whole by
    # every rank: 15.1M of its 101M attention parameters a layer.
    sharded_only = 61 * (101.1e6 / 8) * 2
    assert w.bytes_by_part["attention"] == pytest.approx(61 * (15.1e6 + 86.0e6 / 8) * 2, rel=0.01)
    assert w.bytes_by_part["attention"] > 2 * sharded_only


def test_kimi_everything_at_int4_is_about_16_gb_a_step_over_8_gpus() -> None:
    w = decode_weight_bytes(KIMI, 8, bits=4)
    assert w.active_params * 4 / 8 == pytest.approx(16e9, rel=0.03)
    assert w.bytes_per_gpu > w.active_params * 0.5 / 8  # replicated parts: more than 1/8


def test_deepseek_v3_fp8_block_quantized() -> None:
    w = decode_weight_bytes(DEEPSEEK_V3, 8)
    embedding = 129280 * 7168
    assert w.active_params + embedding == pytest.approx(37e9, rel=0.03)  # "37B activated"
    bits = weight_bits(DEEPSEEK_V3)
    assert bits["routed_experts"] == pytest.approx(8 + 32 / 128**2)
    assert bits["lm_head"] == 16 and bits["router"] == 16


def test_moe_counts_dense_layers_apart() -> None:
    more_dense = {**DEEPSEEK_V3, "first_k_dense_replace": 10}
    a, b = decode_weight_bytes(DEEPSEEK_V3, 8), decode_weight_bytes(more_dense, 8)
    assert b.bytes_by_part["dense_mlp"] > a.bytes_by_part["dense_mlp"]
    assert b.bytes_by_part["routed_experts"] < a.bytes_by_part["routed_experts"]


def test_nested_text_config_is_read() -> None:
    nested = {"architectures": ["X"], "text_config": LLAMA_3_8B}
    assert (
        decode_weight_bytes(nested, 1).bytes_per_gpu
        == decode_weight_bytes(LLAMA_3_8B, 1).bytes_per_gpu
    )


def test_missing_field_is_named() -> None:
    broken = {k: v for k, v in KIMI.items() if k != "num_experts_per_tok"}
    with pytest.raises(ModelShapeError, match="num_experts_per_tok"):
        decode_weight_bytes(broken, 8)
