"""A GPU server's layout against the GPUs this host has: asking for more cannot start here.

Only for a vLLM GPU server (tuner.check.server_kind): the simulator and vLLM's CPU build
use no GPU. The GPUs a launch needs are TP x PP (tuner.space.layout), times DP where the
command sets ``--data-parallel-size``. The GPUs found are the topology's (NVML, or the
space's ``topology:`` file, which stands in for NVML). Fewer found than needed is an error:
vLLM would fail after its imports, each launch. No topology (NVML absent: no driver, a
machine without GPUs) is a warning, not an error: the space may be written here and run
on the GPU host.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.check.model import warn_each_value
from tuner.check.report import Findings
from tuner.check.server_kind import ServerKind
from tuner.space.layout import last_value, layout_of
from tuner.space.spec import Space
from tuner.telemetry.topology import TopologyRead
from tuner.telemetry.versions import nvml_said

DP_FLAGS = ("--data-parallel-size", "-dp")


def gpus_needed(argv: Sequence[str]) -> tuple[int, str]:
    """The GPUs an argv's layout occupies, and the layout in words (``TP=8``, ``TP=4 x PP=2``)."""
    layout = layout_of(argv)
    dp = _size(last_value(argv, DP_FLAGS))
    words = [f"TP={layout.tensor_parallel}"]
    if layout.pipeline_parallel > 1:
        words.append(f"PP={layout.pipeline_parallel}")
    if dp > 1:
        words.append(f"DP={dp}")
    return layout.gpus * dp, " x ".join(words)


def check_gpu_count(
    space: Space, argv: Sequence[str], kind: ServerKind, topo: TopologyRead, found: Findings
) -> None:
    """The baseline's layout against the GPUs found; with GPUs found, each param value's too."""
    if kind != "vllm-gpu":
        return
    need, layout = gpus_needed(argv)
    if topo.topology is None:
        found.add(
            "warning",
            "server.command",
            f"{layout} needs {_gpus(need)}; no GPU found here ({nvml_said(topo.reason)}): "
            "the launch will fail on this host",
        )
        return
    have, source = topo.topology.gpus, topo.topology.source
    if need > have:
        found.add(
            "error",
            "server.command",
            f"{layout} needs {_gpus(need)}; {have} found here (from {source}): the launch "
            f"will fail on this host: lower the layout in server.command, or run on a host "
            f"with {need} GPUs",
        )
        return
    if space.spec.server.gpus is not None:
        return  # values beyond server.gpus are refused by the sweep and said by check_model

    def refusal(full: list[str]) -> str | None:
        more, words = gpus_needed(full)
        return f"{words} needs {_gpus(more)}, {have} found here" if more > have else None

    warn_each_value(
        space,
        argv,
        found,
        refusal,
        then=(
            f"such launches fail at start: remove the value, or set server.gpus: {have} "
            "(the sweep then skips a TP x PP beyond it)"
        ),
    )


def _gpus(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _size(value: str | None) -> int:
    try:
        return max(1, int(value)) if value is not None else 1
    except ValueError:
        return 1  # not a number: the server says so; not ours to refuse
