"""vLLM's rule for its custom all-reduce: where ``--disable-custom-all-reduce`` changes nothing.

vLLM (vllm/distributed/device_communicators/custom_all_reduce.py, ``CustomAllreduce``
and ``should_custom_ar``, read at vllm-project/vllm commit 00d618aa, main in 2026; the
supported sizes and the NVLink test are those of the first custom all-reduce, v0.4)
builds its own all-reduce for the tensor-parallel group only when all of these hold:

1. the group has more than one GPU (TP=1: none is built; cuda_communicator.py);
2. its size is one of ``_SUPPORTED_WORLD_SIZES`` = 2, 4, 6, 8 (else a warning, off);
3. 2 GPUs, or every pair of the group's GPUs joined by NVLink:
   ``is_fully_connected`` (vllm/platforms/cuda.py) asks NVML's P2P status over NVLink
   for every pair, an NVML error counting as "no" ("not supported on more than two
   PCIe-only GPUs");
4. P2P access between the GPUs works (``gpu_p2p_access_check``, a real CUDA IPC test);
5. the group does not span nodes.

When one fails, every all-reduce goes to NCCL whatever the flag says: setting
``--disable-custom-all-reduce`` launches the defaults again. ``off_reason`` says which
failed, from the argv's TP and PP sizes and the GPUs' topology; it never guesses: an
unknown TP (``--config`` without one on the command line), an unknown topology, or P2P
NVML cannot vouch for leaves the flag searched. On ROCm the rule differs (XGMI through
amdsmi, and the flag also turns QuickReduce off), and tuner reads NVML only: there the
topology is unknown and nothing is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tuner.space.layout import PP_FLAGS, TP_FLAGS, flag_name, last_value
from tuner.space.settings import is_default
from tuner.space.spec import ParamSpec, SpaceSpec
from tuner.telemetry.topology import Topology

FLAG = "--disable-custom-all-reduce"
SUPPORTED_SIZES = (2, 4, 6, 8)
"""vLLM's ``CustomAllreduce._SUPPORTED_WORLD_SIZES``."""
_CONFIG_FLAGS = ("--config",)
_PARALLELISM = ("CUDA_VISIBLE_DEVICES",)


def is_custom_allreduce_param(param: ParamSpec) -> bool:
    """A param whose args pass ``--disable-custom-all-reduce`` (any value, any spelling)."""
    return any(flag_name(a) == FLAG for a in param.args or ())


def sets_parallelism(param: ParamSpec) -> bool:
    """A param that can change the TP or PP size or the GPUs: the rule then differs by
    configuration, and is applied to each one (``refusal``) instead of to the space."""
    flags = {flag_name(a) for a in param.args or ()}
    return bool(flags & {*TP_FLAGS, *PP_FLAGS, *_CONFIG_FLAGS}) or param.env in _PARALLELISM


def off_reason(
    topology: Topology | None, argv: Sequence[str], env: Mapping[str, str]
) -> str | None:
    """Why vLLM's custom all-reduce is off anyway with this command, or None (it may be on,
    or tuner cannot tell). ``env`` is the server's (CUDA_VISIBLE_DEVICES picks the GPUs)."""
    tp = _int_flag(argv, TP_FLAGS)
    if tp is None and last_value(argv, _CONFIG_FLAGS) is not None:
        return None  # the TP may be in the --config file: unknown
    tp = tp or 1
    if tp == 1:
        return "TP=1: vLLM builds no custom all-reduce for one GPU"
    if tp not in SUPPORTED_SIZES:
        sizes = ", ".join(map(str, SUPPORTED_SIZES))
        return f"TP={tp}: vLLM's custom all-reduce supports TP {sizes} only"
    if topology is None:
        return None
    gpus = _visible(env, topology.gpus)
    pp = _int_flag(argv, PP_FLAGS) or 1
    if gpus is None or len(gpus) < tp * pp:
        return None  # GPUs named by UUID, or too few: the launch says more than we can
    reasons = [_group_off(topology, gpus[i * tp : (i + 1) * tp], tp) for i in range(pp)]
    if any(r is None for r in reasons):
        return None  # on in one TP group at least: the flag changes that group
    return reasons[0]


def _group_off(topology: Topology, group: list[int], tp: int) -> str | None:
    names = _gpu_names(group)
    unlinked = topology.unlinked(group) if tp > 2 else []
    if unlinked:
        pair = unlinked[0]
        return (
            f"TP={tp} on GPUs {names} with no NVLink between GPU {pair.a} and GPU {pair.b}: "
            "vLLM uses its custom all-reduce only on 2 GPUs or on GPUs all joined by NVLink"
        )
    blocked = topology.p2p_unsupported(group)
    if blocked:
        pair = blocked[0]
        return (
            f"TP={tp} on GPUs {names}: NVML says P2P does not work between GPU {pair.a} and "
            f"GPU {pair.b}, and vLLM's custom all-reduce needs it"
        )
    return None


def ignored_params(
    spec: SpaceSpec,
    topology: Topology | None,
    argv: Sequence[str],
    env: Mapping[str, str],
) -> dict[str, str]:
    """The params whose every non-default value vLLM ignores with this command: the name
    and why. Empty when a param can change the parallelism (``sets_parallelism``)."""
    if any(sets_parallelism(p) for p in spec.params.values()):
        return {}
    reason = off_reason(topology, argv, env)
    if reason is None:
        return {}
    return {n: reason for n, p in spec.params.items() if is_custom_allreduce_param(p)}


def refusal(
    spec: SpaceSpec,
    topology: Topology | None,
    params: Mapping[str, object],
    argv: Sequence[str],
    env: Mapping[str, str],
) -> str | None:
    """Why one configuration (its params and full argv) repeats the defaults' all-reduce,
    or None: it sets the custom all-reduce flag where vLLM would not use its own anyway."""
    named = [
        f"{n}={params[n]}"
        for n, p in spec.params.items()
        if is_custom_allreduce_param(p) and n in params and not is_default(params[n])
    ]
    if not named:
        return None
    reason = off_reason(topology, argv, env)
    if reason is None:
        return None
    return f"{', '.join(named)}: vLLM ignores {FLAG} here ({reason})"


def _gpu_names(group: list[int]) -> str:
    """``0-7`` for a run of consecutive indices, else ``4,0,5``."""
    if len(group) > 2 and group == list(range(group[0], group[0] + len(group))):
        return f"{group[0]}-{group[-1]}"
    return ",".join(map(str, group))


def _visible(env: Mapping[str, str], count: int) -> list[int] | None:
    """The NVML indices of the server's GPUs, in its CUDA order; None when not integers."""
    text = env.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return list(range(count))
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        return None


def _int_flag(argv: Sequence[str], flags: Sequence[str]) -> int | None:
    value = last_value(argv, flags)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None  # not a number: the server will say so
