"""Model-aware validity: configurations the model's shape rules out, known before a launch.

A large model can take half an hour to load before vLLM finds that a tensor-parallel
size does not divide its heads. When the model's ``config.json`` is on this machine (a
local directory, or the local Hugging Face cache; never downloaded), ``refusal`` says
which argv cannot start and why, in vLLM's own words where vLLM has them, so the sweep
records the trial as not launched instead of paying for the load.

The rules follow vLLM (0.32): attention heads must divide by TP; KV heads must divide by
TP, or, when there are fewer KV heads than ranks, TP must be a whole multiple of them
(vLLM then replicates each KV head on TP / kv ranks); MLA models have no KV-head split;
FP8 block-quantized MoE experts need their intermediate size per rank to be a multiple
of the block (``quantization_config.weight_block_size`` = [block_n, block_k]), unless
expert parallelism keeps each expert whole on one rank.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tuner.space.layout import expert_parallel as expert_parallel  # re-exported
from tuner.space.layout import gpu_refusal, layout_of
from tuner.space.layout import last_value as _last_value
from tuner.space.settings import (
    Settings,
    baseline_params,
    server_argv,
    server_env,
    settings_from_params,
)
from tuner.space.spec import Space

INSPECT_PORT = 8000
"""Stands in for ``{port}`` when a command is read rather than run."""

_MODEL_FLAGS = ("--model",)
_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
# The model types vLLM runs with multi-head latent attention: no KV-head split.
_MLA_KEYS = ("kv_lora_rank",)
EXPERT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
"""config.json's names for a MoE layer's routed experts (DeepSeek and Kimi, Mixtral and
MiniMax, Qwen, others)."""


def inspect_names(space: Space) -> dict[str, str]:
    """Placeholder values for reading a command without running it (no trial exists yet)."""
    study_dir = Path("tuner-runs") / space.study_name
    return {
        "trial_dir": str((study_dir / "trial-0000").resolve()),
        "study_dir": str(study_dir.resolve()),
        "space_dir": str(space.path.resolve().parent),
    }


def baseline_argv(space: Space) -> tuple[list[str], dict[str, str]]:
    """The baseline's argv and fixed env, placeholders filled as a launch would fill them."""
    settings = settings_from_params(space.spec, baseline_params(space.spec))
    names = inspect_names(space)
    server = space.spec.server
    argv = server_argv(server, settings, port=INSPECT_PORT, **names)
    env = server_env(server, settings, port=INSPECT_PORT, **names)
    return argv, env


def model_argument(argv: Sequence[str]) -> str | None:
    """The model an inference-server argv names: ``--model X``, or ``serve X`` (vllm serve)."""
    value = _last_value(argv, _MODEL_FLAGS)
    if value is not None:
        return value
    args = list(argv)
    if "serve" in args:
        after = args[args.index("serve") + 1 :]
        if after and not after[0].startswith("-"):
            return after[0]
    return None


def hub_cache_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """Where huggingface_hub keeps downloads: HF_HUB_CACHE, else HF_HOME/hub, else the default."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return [Path(env["HF_HUB_CACHE"]).expanduser()]
    if env.get("HUGGINGFACE_HUB_CACHE"):  # the older name, still honoured by the hub
        return [Path(env["HUGGINGFACE_HUB_CACHE"]).expanduser()]
    if env.get("HF_HOME"):
        return [Path(env["HF_HOME"]).expanduser() / "hub"]
    xdg = env.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return [Path(xdg).expanduser() / "huggingface" / "hub"]


def find_config_json(
    model: str, env: Mapping[str, str] | None = None, revision: str | None = None
) -> Path | None:
    """The model's config.json on this machine, or None; never touches the network."""
    local = Path(model).expanduser()
    if (local / "config.json").is_file():
        return local / "config.json"
    if not _REPO_ID.match(model):
        return None
    org, name = model.split("/", 1)
    for hub in hub_cache_dirs(env):
        repo = hub / f"models--{org}--{name}"
        snapshots = repo / "snapshots"
        if not snapshots.is_dir():
            continue
        ref = repo / "refs" / (revision or "main")
        wanted = ref.read_text().strip() if ref.is_file() else (revision or "")
        if wanted and (snapshots / wanted / "config.json").is_file():
            return snapshots / wanted / "config.json"
        # No ref to follow: the most recently written snapshot that has a config.
        found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime)
        if found:
            return found[-1]
    return None


def load_model_config(space: Space) -> dict[str, Any] | None:
    """The config.json of the model the space's server command names, when readable here."""
    argv, env = baseline_argv(space)
    model = model_argument(argv)
    if model is None:
        return None
    lookup_env = {**os.environ, **env}
    path = find_config_json(model, lookup_env, _last_value(argv, ("--revision",)))
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    data.setdefault("_tuner_config_path", str(path.resolve()))
    return data


def settings_refusal(
    space: Space, model_config: Mapping[str, Any] | None, settings: Settings
) -> str | None:
    """``refusal`` for one trial: the space's command with the trial's arguments appended;
    first whether its layout fits the GPUs of ``server.gpus`` (no config.json needed)."""
    argv, _ = baseline_argv(space)
    argv += list(settings.args)
    too_many = gpu_refusal(layout_of(argv), space.spec.server.gpus)
    if too_many or not model_config:
        return too_many
    return refusal(model_config, argv)


def text_config(model_config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's part of a config: ``text_config`` (or ``llm_config``) when nested."""
    for key in ("text_config", "llm_config", "language_config"):
        nested = model_config.get(key)
        if isinstance(nested, Mapping) and "num_attention_heads" in nested:
            return nested
    return model_config


def expert_count(model_config: Mapping[str, Any]) -> int | None:
    """The routed experts of a MoE layer, from config.json; None for a dense model."""
    text = text_config(model_config)
    return next((n for k in EXPERT_KEYS if (n := _int(text.get(k))) and n > 0), None)


def tensor_parallel_size(argv: Sequence[str]) -> int:
    """The TP size an argv asks for; 1 when it names none."""
    return layout_of(argv).tensor_parallel


def refusal(model_config: Mapping[str, Any] | None, settings_argv: Sequence[str]) -> str | None:
    """Why this argv cannot start with this model, or None when nothing rules it out."""
    if not model_config:
        return None
    tp = tensor_parallel_size(settings_argv)
    if tp <= 1:
        return None
    text = text_config(model_config)
    heads = _int(text.get("num_attention_heads"))
    if heads and heads % tp:
        return (
            f"Total number of attention heads ({heads}) must be divisible by tensor "
            f"parallel size ({tp})."
        )
    if heads and not any(k in text and text[k] for k in _MLA_KEYS):
        kv = _kv_heads(text) or heads
        if kv >= tp and kv % tp:
            return f"{kv} KV heads are not divisible by tensor parallel size {tp}."
        if kv < tp and tp % kv:
            return (
                f"tensor parallel size {tp} is not a multiple of the {kv} KV heads "
                "(vLLM replicates KV heads only in whole copies)"
            )
    return _fp8_block_refusal(model_config, text, tp, expert_parallel(settings_argv))


def _fp8_block_refusal(
    model_config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ep: bool
) -> str | None:
    quant = model_config.get("quantization_config") or text.get("quantization_config")
    if not isinstance(quant, Mapping):
        return None
    block = quant.get("weight_block_size")
    if not (isinstance(block, Sequence) and len(block) == 2):
        return None
    block_n, block_k = _int(block[0]), _int(block[1])
    inter = _expert_intermediate_size(text)
    if not (block_n and block_k and inter) or ep:
        # With expert parallelism each expert lives whole on one rank: no split to check.
        return None
    if inter % tp:
        return f"moe intermediate size {inter} is not divisible by tensor parallel size {tp}."
    per_rank = inter // tp
    hint = " (--enable-expert-parallel keeps experts whole and lifts this)"
    if per_rank % block_n:
        return (
            f"ValueError: The output_size of gate's and up's weight = {per_rank} is not "
            f"divisible by weight quantization block_n = {block_n}.{hint}"
        )
    if per_rank % block_k:
        return (
            f"ValueError: The input_size of down's weight = {per_rank} is not divisible by "
            f"weight quantization block_k = {block_k}.{hint}"
        )
    return None


def _expert_intermediate_size(text: Mapping[str, Any]) -> int | None:
    """The per-expert MLP width: moe_intermediate_size, or intermediate_size in a MoE."""
    if text.get("moe_intermediate_size"):
        return _int(text["moe_intermediate_size"])
    if expert_count(text):
        return _int(text.get("intermediate_size"))
    return None


def _kv_heads(text: Mapping[str, Any]) -> int | None:
    # The names vLLM reads, in its order (Falcon, ..., Llama 2, ChatGLM, Step).
    for key in (
        "n_head_kv",
        "num_kv_heads",
        "num_key_value_heads",
        "multi_query_group_num",
        "num_attention_groups",
    ):
        value = _int(text.get(key))
        if value:
            return value
    return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
