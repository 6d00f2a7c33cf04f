"""What `tuner best` says about the ceiling: the bound from memory plus communication.

Gathers the figures tuner/probe/ceiling.py needs: the weight bytes a decode step reads
per GPU (the model's config.json at the recommended configuration's tensor-parallel
size), the GPU's memory bandwidth (``probe.memory_bandwidth_gbps``), the probe's fastest
and own all-reduce times and the measured rate (views/probe_summary.py), and which kinds
of setting the study searches (NCCL alone, others, speculative decoding).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuner.errors import ConfigError
from tuner.probe.ceiling import Ceiling, CeilingInputs, ceiling
from tuner.probe.model_config import probe_model_config
from tuner.probe.weights import ModelShapeError, decode_weight_bytes
from tuner.space.model_limits import baseline_argv, tensor_parallel_size
from tuner.space.settings import settings_from_params
from tuner.space.spec import Space
from tuner.study.facts import analysis
from tuner.study.policy.probe_narrowing import is_nccl_param
from tuner.views.probe_summary import ProbeSummary

_SPECULATIVE = ("--speculative-config", "--num-speculative-tokens", "--speculative-model")


def ceiling_summary(
    space: Space,
    probe: ProbeSummary | None,
    recommended: analysis.ConfigResult | None,
    inventory: Mapping[str, Any] | None = None,
) -> Ceiling | None:
    """The ceiling of the recommended configuration; None without the probe's figures.

    The bandwidth is ``probe.memory_bandwidth_gbps``, else NVML's theoretical peak of the
    slowest GPU in the study's stored ``inventory``: a peak gives a lower memory floor, so
    the bound stays a bound, only a looser one.
    """
    spec = space.spec.probe
    if spec is None or probe is None or probe.disabled:
        return None
    argv, _ = baseline_argv(space)
    if recommended is not None:
        argv += list(settings_from_params(space.spec, recommended.params).args)
    tp = tensor_parallel_size(argv)
    weights = weights_source = None
    try:
        config = probe_model_config(space)
    except ConfigError as exc:  # `tuner best` still answers; the ceiling says what is wrong
        config, weights_source = None, str(exc)
    if config is not None:
        try:
            weights = decode_weight_bytes(config, tp).bytes_per_gpu
            weights_source = f"{config.get('_tuner_config_path', 'config.json')} at TP={tp}"
        except ModelShapeError as exc:
            weights_source = str(exc)
    params = space.spec.params.values()
    bandwidth = spec.memory_bandwidth_gbps
    bandwidth_source = "the space file (probe.memory_bandwidth_gbps)"
    if bandwidth is None:
        bandwidth = inventory_bandwidth_gbps(inventory)
        bandwidth_source = (
            "NVML's theoretical peak of the study's GPUs (`tuner probe membw` measures a "
            "tighter one for probe.memory_bandwidth_gbps)"
            if bandwidth
            else ""
        )
    return ceiling(
        CeilingInputs(
            weight_bytes_per_gpu=weights,
            memory_bandwidth_gbps=bandwidth,
            allreduces_per_token=probe.allreduces_per_token,
            best_us=probe.best_us,
            own_us=probe.own_us if probe.own_us is not None else probe.default_us,
            measured_tokens_per_s=probe.measured_tokens_per_s,
            other_settings=any(not is_nccl_param(p) for p in params),
            speculative=any(
                any(str(a).split("=")[0] in _SPECULATIVE for a in p.args or ()) for p in params
            ),
            bandwidth_source=bandwidth_source,
            weights_source=weights_source or "",
        )
    )


def inventory_bandwidth_gbps(inventory: Mapping[str, Any] | None) -> float | None:
    """The slowest GPU's NVML figure in a stored inventory (telemetry/inventory.py)."""
    gpus = (inventory or {}).get("gpus") or []
    figures = [g.get("memory_bandwidth_gbps") for g in gpus if isinstance(g, Mapping)]
    found = [float(f) for f in figures if isinstance(f, int | float) and f > 0]
    return min(found) if found else None
