"""The weight bytes one decode step reads per GPU, from a model's config.json.

At one stream and a short context a decode step is bound by reading the weights it uses
once: every linear weight of a dense model; for a mixture of experts the attention, the
dense layers' MLPs, the shared experts, the router and ``num_experts_per_tok`` routed
experts of each MoE layer; and the lm_head (the embedding lookup reads one row: nothing).
Under tensor parallelism each rank reads its 1/TP of the sharded weights and the whole of
the replicated ones (vLLM replicates MLA's ``q_a_proj`` and ``kv_a_proj_with_mqa``, the
router, and KV heads when there are fewer than ranks).

Approximated: the KV cache read (small at one stream and a short context), norms and
biases (tiny), and the MLP taken as gated (gate, up, down: Llama, DeepSeek, Qwen, Mixtral).
Bits per part come from ``quantization_config`` (compressed-tensors groups with their
``ignore`` list, or fp8) or the dtype; a quantized weight carries a 16-bit scale per group.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.space.model_limits import expert_count, text_config

PARTS = ("attention", "dense_mlp", "shared_experts", "routed_experts", "router", "lm_head")
"""What a decode step reads, in the order reports list them."""

# One module name per part, as Hugging Face names them, to match an ignore list against.
_SAMPLE_NAMES = {
    "attention": "model.layers.1.self_attn.o_proj",
    "dense_mlp": "model.layers.0.mlp.down_proj",
    "shared_experts": "model.layers.1.mlp.shared_experts.down_proj",
    "routed_experts": "model.layers.1.mlp.experts.0.down_proj",
    "router": "model.layers.1.mlp.gate",
    "lm_head": "lm_head",
}
_DTYPE_BITS = {"bfloat16": 16, "float16": 16, "half": 16, "float32": 32, "float": 32}


class ModelShapeError(ValueError):
    """config.json lacks a field the weight count needs; the message names it."""


@dataclass(frozen=True)
class DecodeWeights:
    """Bytes one decode step reads per GPU, by part (``PARTS``), and the bits used."""

    bytes_by_part: dict[str, float]
    bits_by_part: dict[str, float]
    tensor_parallel_size: int
    active_params: float
    """Parameters a token uses, all ranks together (for a sanity check against model cards)."""

    @property
    def bytes_per_gpu(self) -> float:
        return sum(self.bytes_by_part.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "bytes_per_gpu": self.bytes_per_gpu,
            "bytes_by_part": dict(self.bytes_by_part),
            "bits_by_part": dict(self.bits_by_part),
            "tensor_parallel_size": self.tensor_parallel_size,
            "active_params": self.active_params,
        }


def decode_weight_bytes(
    config: Mapping[str, Any], tensor_parallel_size: int, *, bits: float | None = None
) -> DecodeWeights:
    """The weight bytes one decode step reads per GPU; ``bits`` forces every part's width.

    ModelShapeError names the missing config.json field.
    """
    if tensor_parallel_size < 1:
        raise ValueError("the tensor-parallel size is at least 1")
    text = text_config(config)
    tp = tensor_parallel_size
    hidden = _field(text, "hidden_size")
    layers = _field(text, "num_hidden_layers")
    vocab = _field(text, "vocab_size")
    sharded_attn, replicated_attn = _attention_params(text, tp)
    n_experts = expert_count(text)
    moe_layers = _moe_layers(text, layers) if n_experts else 0
    dense_layers = layers - moe_layers
    params: dict[str, tuple[float, float]] = {  # part -> (sharded, replicated) parameters
        "attention": (sharded_attn * layers, replicated_attn * layers),
        "dense_mlp": (
            3 * hidden * _field(text, "intermediate_size") * dense_layers if dense_layers else 0.0,
            0.0,
        ),
        "shared_experts": (3 * hidden * _shared_intermediate(text) * moe_layers, 0.0),
        "routed_experts": (0.0, 0.0),
        "router": (0.0, float(hidden * (n_experts or 0) * moe_layers)),
        "lm_head": (float(hidden * vocab), 0.0),
    }
    if n_experts:
        top_k = _field(text, "num_experts_per_tok")
        expert = _int(text.get("moe_intermediate_size")) or _field(text, "intermediate_size")
        params["routed_experts"] = (3 * hidden * expert * top_k * moe_layers, 0.0)
    part_bits = {part: bits for part in PARTS} if bits is not None else weight_bits(config)
    by_part = {
        part: (sharded / tp + replicated) * part_bits[part] / 8
        for part, (sharded, replicated) in params.items()
    }
    return DecodeWeights(
        bytes_by_part=by_part,
        bits_by_part=dict(part_bits),
        tensor_parallel_size=tp,
        active_params=sum(s + r for s, r in params.values()),
    )


def weight_bits(config: Mapping[str, Any]) -> dict[str, float]:
    """Bits per weight of each part, scales included, from quantization_config or the dtype."""
    text = text_config(config)
    dtype = str(config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype") or "")
    base = float(_DTYPE_BITS.get(dtype, 16))
    bits = {part: base for part in PARTS}
    quant = config.get("quantization_config") or text.get("quantization_config")
    if not isinstance(quant, Mapping):
        return bits
    method = str(quant.get("quant_method", ""))
    ignore = [str(p) for p in quant.get("ignore") or quant.get("modules_to_not_convert") or []]
    quantized = _quantized_bits(quant, method)
    if quantized is None:
        return bits
    for part, name in _SAMPLE_NAMES.items():
        # The router is not an nn.Linear in DeepSeek-style models: weight-only schemes
        # that target Linear layers leave it at the dtype; the lm_head is usually kept too.
        if part == "router" or any(_matches(p, name) for p in ignore):
            continue
        if part == "lm_head" and method == "fp8":
            continue
        bits[part] = quantized
    return bits


def _quantized_bits(quant: Mapping[str, Any], method: str) -> float | None:
    """A quantized weight's bits: its own plus a 16-bit scale per group (fp8: per block)."""
    if method == "fp8":
        block = quant.get("weight_block_size") or [128, 128]
        return 8 + 32 / math.prod(int(b) for b in block)
    groups = quant.get("config_groups")
    if isinstance(groups, Mapping):
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, Mapping) else None
            if isinstance(weights, Mapping) and _int(weights.get("num_bits")):
                size = _int(weights.get("group_size"))
                return float(weights["num_bits"]) + (16 / size if size else 0.0)
    num_bits = _int(quant.get("bits")) or _int(quant.get("num_bits"))  # GPTQ, AWQ
    if num_bits:
        size = _int(quant.get("group_size"))
        return num_bits + (16 / size if size and size > 0 else 0.0)
    return None


def _matches(pattern: str, name: str) -> bool:
    if pattern.startswith("re:"):
        return re.match(pattern[3:], name) is not None
    return name == pattern or name.endswith("." + pattern) or pattern in name.split(".")


def _attention_params(text: Mapping[str, Any], tp: int) -> tuple[float, float]:
    """(sharded, replicated) attention parameters of one layer."""
    hidden = _field(text, "hidden_size")
    heads = _field(text, "num_attention_heads")
    kv_rank = _int(text.get("kv_lora_rank"))
    if kv_rank:  # multi-head latent attention (DeepSeek-V2/V3, Kimi K2)
        nope = _field(text, "qk_nope_head_dim")
        rope = _field(text, "qk_rope_head_dim")
        v_dim = _field(text, "v_head_dim")
        q_rank = _int(text.get("q_lora_rank"))
        q_sharded = (q_rank or hidden) * heads * (nope + rope)
        replicated = hidden * (kv_rank + rope) + (hidden * q_rank if q_rank else 0)
        sharded = q_sharded + kv_rank * heads * (nope + v_dim) + heads * v_dim * hidden
        return float(sharded), float(replicated)
    head_dim = _int(text.get("head_dim")) or hidden // heads
    kv_heads = _int(text.get("num_key_value_heads")) or heads
    # Fewer KV heads than ranks: vLLM gives each rank a whole copy of one.
    kv_per_rank = max(kv_heads / tp, 1.0)
    sharded = 2 * hidden * heads * head_dim  # q and o
    return float(sharded), float(2 * hidden * head_dim * kv_per_rank)


def _moe_layers(text: Mapping[str, Any], layers: int) -> int:
    """How many layers have a MoE block (DeepSeek's and Qwen's layouts; else all)."""
    first_dense = _int(text.get("first_k_dense_replace")) or 0
    freq = _int(text.get("moe_layer_freq")) or 1
    step = _int(text.get("decoder_sparse_step")) or 1
    dense_only = set(text.get("mlp_only_layers") or [])
    return sum(
        1
        for i in range(layers)
        if i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in dense_only
    )


def _shared_intermediate(text: Mapping[str, Any]) -> int:
    """The shared experts' total intermediate width (0 without them)."""
    qwen = _int(text.get("shared_expert_intermediate_size"))
    if qwen:
        return qwen
    shared = _int(text.get("n_shared_experts")) or 0
    return shared * (_int(text.get("moe_intermediate_size")) or 0)


def _field(text: Mapping[str, Any], key: str) -> int:
    value = _int(text.get(key))
    if value is None:
        raise ModelShapeError(
            f"config.json has no positive integer {key!r}: the decode step's weight bytes "
            "need it (give the model's own config.json, or set probe.weight_bytes_per_gpu)"
        )
    return value


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value > 0 and float(value).is_integer() else None
