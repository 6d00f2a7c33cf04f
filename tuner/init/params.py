"""Which params `tuner init` writes for a command on a host, each with why it can act.

The rules, in the order the file lists the params:

- NCCL variables only where more than one GPU talks (TP x PP > 1): with one GPU NCCL has
  no collective to carry. ``NCCL_P2P_LEVEL`` only where some pair of GPUs lacks NVLink
  (NVLinked GPUs talk over NVLink whatever the PCIe level allows).
- ``--disable-custom-all-reduce`` only where vLLM would build its custom all-reduce
  (tuner/check/custom_allreduce.py): left out at TP=1, at a TP vLLM does not support and
  at TP >= 3 without full NVLink, where NCCL carries every all-reduce already and the
  flag would launch the defaults again.
- vLLM's flags (compilation, CUDA graphs, max-num-seqs, batched tokens) only where the
  server's ``--help`` lists them: a flag it does not know fails every launch at start.

What is left out is listed too, with its reason, as a comment in the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tuner.check.custom_allreduce import FLAG, off_reason
from tuner.init.goals import Goal
from tuner.init.survey import Survey


@dataclass(frozen=True)
class Param:
    """One param of the file: its name, its space-file mapping, and why it is there."""

    name: str
    spec: dict[str, Any]
    comment: str


@dataclass(frozen=True)
class LeftOut:
    """What the file leaves out, and why (a comment in ``params:``)."""

    what: str
    reason: str


@dataclass(frozen=True)
class ParamChoice:
    params: tuple[Param, ...] = ()
    left_out: tuple[LeftOut, ...] = ()
    constraints: tuple[str, ...] = field(default_factory=tuple)

    @property
    def nccl(self) -> bool:
        """The file searches NCCL variables (and so has a use for the all-reduce probe)."""
        return any(p.name.startswith("NCCL_") for p in self.params)


def _env(name: str, choices: list[Any], comment: str) -> Param:
    return Param(name, {"env": name, "choices": ["default", *choices]}, comment)


_NCCL = (
    _env(
        "NCCL_ALGO",
        ["allreduce:ring", "allreduce:tree"],
        "Since NCCL 2.31 a bare NCCL_ALGO (e.g. Ring) disables the collectives it does not "
        "name and vLLM then fails at warmup; the per-collective form touches all-reduce only.",
    ),
    _env(
        "NCCL_PROTO",
        ["LL", "LL128", "Simple"],
        "LL is latency-optimised (small messages: decode at low concurrency), Simple is "
        "bandwidth-optimised (prefill, high concurrency); LL128 needs NVLink to pay off.",
    ),
    _env(
        "NCCL_MIN_NCHANNELS",
        [2, 4, 8],
        "More channels = more SMs driving the links; over PCIe the bus, not the SMs, is the limit.",
    ),
    _env("NCCL_MAX_NCHANNELS", [4, 8, 16, 32], ""),
    _env(
        "NCCL_BUFFSIZE",
        [1048576, 2097152, 8388608, 16777216],
        "The Simple protocol's per-channel buffer (NCCL's default: 4 MiB). 1 MiB fixed a slow "
        "ring all-reduce on PCIe GPUs (https://github.com/NVIDIA/nccl/issues/1530); larger "
        "buffers pay off only with large messages (prefill, high concurrency).",
    ),
    _env(
        "NCCL_P2P_LEVEL",
        ["LOC", "PHB", "SYS"],
        "How far apart two GPUs may be for NCCL to copy directly between them (P2P) rather "
        "than through host memory. Unset, NCCL stops at PXB (behind PCIe switches); PHB and "
        "SYS allow P2P through the CPU, which helps where it forwards peer traffic well; LOC "
        "turns P2P off, which helps where host memory beats P2P. GPUs without P2P (GeForce) "
        "ignore it. NCCL_P2P_DISABLE and NCCL_SHM_DISABLE are not params: the first is LOC, "
        "the second sends traffic over sockets (tuner check warns about both).",
    ),
    _env("NCCL_NTHREADS", [256, 512], "CUDA threads per NCCL block."),
    _env(
        "CUDA_DEVICE_MAX_CONNECTIONS",
        [1, 8],
        "1 serialises kernel launches on one hardware queue, which can help the overlap of "
        "all-reduce with compute.",
    ),
)
_CUSTOM_ALL_REDUCE = Param(
    "disable_custom_all_reduce",
    {"args": [FLAG], "choices": ["default", True]},
    "vLLM's own all-reduce for small messages; disabling it sends everything through NCCL, "
    "so that NCCL settings act on all of the traffic.",
)


def choose_params(survey: Survey, goal: Goal) -> ParamChoice:
    """The params that can act with this command on this host, and what is left out."""
    params: list[Param] = []
    left: list[LeftOut] = []
    layout = survey.layout
    if layout.gpus > 1:
        for param in _NCCL:
            if param.name == "NCCL_P2P_LEVEL" and _fully_nvlinked(survey):
                left.append(LeftOut(param.name, "every pair of these GPUs is joined by NVLink"))
            else:
                params.append(param)
    else:
        left.append(
            LeftOut(
                "NCCL variables",
                f"one GPU (TP={layout.tensor_parallel} x PP={layout.pipeline_parallel}): no "
                "GPU talks to another, so NCCL has nothing to carry",
            )
        )
    _custom_all_reduce(survey, params, left)
    _vllm_flags(survey, goal, params, left)
    constraints = ("NCCL_MIN_NCHANNELS <= NCCL_MAX_NCHANNELS",) if layout.gpus > 1 else ()
    return ParamChoice(tuple(params), tuple(left), constraints)


def _fully_nvlinked(survey: Survey) -> bool:
    topo = survey.topology
    return topo is not None and topo.fully_nvlinked(range(min(topo.gpus, survey.layout.gpus)))


def _custom_all_reduce(survey: Survey, params: list[Param], left: list[LeftOut]) -> None:
    name = _CUSTOM_ALL_REDUCE.name
    if not survey.accepts(FLAG):
        if survey.help.problem is None:
            left.append(LeftOut(name, f"the server's --help has no {FLAG}"))
        return
    # The server inherits this environment: CUDA_VISIBLE_DEVICES picks its GPUs.
    reason = off_reason(survey.topology, survey.argv, survey.env)
    if reason is not None:
        left.append(
            LeftOut(name, f"{reason}; vLLM ignores {FLAG} here, NCCL carries every all-reduce")
        )
        return
    params.append(_CUSTOM_ALL_REDUCE)


def _vllm_flags(survey: Survey, goal: Goal, params: list[Param], left: list[LeftOut]) -> None:
    """Compilation, CUDA graphs and the scheduler's two sizes, where the help lists them."""
    top = max(goal.levels)
    flags = (
        (
            "-O3",
            Param(
                "compilation",
                {"args": ["-O{value}"], "choices": ["default", 0, 3]},
                "vLLM's compilation level: -O0 runs eager PyTorch (starts sooner, decodes "
                "slower), -O3 compiles the most; the default lies between (2 in vLLM 0.32).",
            ),
        ),
        (
            "--enforce-eager",
            Param(
                "enforce_eager",
                {"args": ["--enforce-eager"], "choices": ["default", True]},
                "No CUDA graphs: each decode step launches its kernels one by one (slower at "
                "small batch), and the graphs' memory goes to the KV cache instead.",
            ),
        ),
        (
            "--max-num-seqs",
            Param(
                "max_num_seqs",
                {"args": ["--max-num-seqs", "{value}"], "choices": ["default", *_seqs(top)]},
                f"Requests scheduled together. From the benchmark's {top} streams up, so none "
                "waits in a queue: what changes is the CUDA graphs captured and their memory.",
            ),
        ),
        (
            "--max-num-batched-tokens",
            Param(
                "max_num_batched_tokens",
                {
                    "args": ["--max-num-batched-tokens", "{value}"],
                    "choices": ["default", 2048, 8192, 16384],
                },
                "Tokens per scheduler step, prefill chunks and decodes together: a larger "
                "chunk finishes a prompt sooner (TTFT) and holds the running decodes longer "
                "(TPOT).",
            ),
        ),
    )
    if survey.help.problem is not None:
        left.append(
            LeftOut(
                "vLLM flags",
                f"the server's --help could not be read ({survey.help.problem}); add them by "
                "hand (see search_spaces/nccl.yaml)",
            )
        )
        return
    for flag, param in flags:
        if survey.accepts(flag):
            params.append(param)
        else:
            left.append(LeftOut(param.name, f"the server's --help has no {flag.rstrip('3')}"))


def _seqs(top: int) -> list[int]:
    """The benchmark's top level, and 4 and 16 times it: none queues the benchmark."""
    return [top, 4 * top, 16 * top]
