"""A server's parallel layout read from its argv: TP, PP, expert parallelism, GPUs used.

vLLM places one rank on each of ``tensor_parallel_size x pipeline_parallel_size`` GPUs
(expert parallelism reuses those ranks, it adds none). The study reads the layout to
refuse one that asks for more GPUs than the server has (``server.gpus``) before it is
launched, and to divide the objective by the GPUs a launch used (``objective.per_gpu``):
layouts that use different GPU counts are compared per GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TP_FLAGS = ("--tensor-parallel-size", "-tp")
PP_FLAGS = ("--pipeline-parallel-size", "-pp")
EP_FLAGS = ("--enable-expert-parallel", "-ep")
NO_EP_FLAGS = ("--no-enable-expert-parallel",)


@dataclass(frozen=True)
class Layout:
    """How a server spreads the model over GPUs."""

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: bool = False

    @property
    def gpus(self) -> int:
        """GPUs the server occupies: one rank per GPU, TP x PP ranks."""
        return self.tensor_parallel * self.pipeline_parallel

    def describe(self) -> str:
        """``TP=8 x PP=1 with EP (8 GPUs)``: how sentences name a layout."""
        ep = " with EP" if self.expert_parallel else ""
        return f"TP={self.tensor_parallel} x PP={self.pipeline_parallel}{ep} ({self.gpus} GPUs)"


def layout_of(argv: Sequence[str]) -> Layout:
    """The layout an argv asks for; vLLM's defaults (1, 1, no EP) for what it leaves out.

    The last of a repeated flag wins, as argparse lets it: a param's argument appended to
    the space's command overrides the command's own.
    """
    return Layout(
        tensor_parallel=_size(argv, TP_FLAGS),
        pipeline_parallel=_size(argv, PP_FLAGS),
        expert_parallel=expert_parallel(argv),
    )


def expert_parallel(argv: Sequence[str]) -> bool:
    """Whether expert parallelism is on: the last of --enable-expert-parallel/-ep/--no-... wins."""
    state = False
    for arg in argv:
        name = flag_name(arg)
        if name in EP_FLAGS:
            state = True
        elif name in NO_EP_FLAGS:
            state = False
    return state


def gpu_refusal(layout: Layout, available: int | None) -> str | None:
    """Why ``layout`` cannot start on ``available`` GPUs (None: it fits, or the count is
    unknown). vLLM's own message for TP alone; the product for TP x PP."""
    if available is None or layout.gpus <= available:
        return None
    if layout.pipeline_parallel == 1:
        return (
            f"Tensor parallel size ({layout.tensor_parallel}) cannot be larger than the number "
            f"of available GPUs ({available}) (server.gpus)."
        )
    return (
        f"tensor parallel size {layout.tensor_parallel} x pipeline parallel size "
        f"{layout.pipeline_parallel} needs {layout.gpus} GPUs, more than the {available} "
        "available (server.gpus)."
    )


def flag_name(arg: str) -> str:
    """A flag's canonical name: the part before ``=``, underscores as dashes (vLLM takes either)."""
    name = arg.split("=", 1)[0]
    if name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
    return name


def last_value(argv: Sequence[str], flags: Sequence[str]) -> str | None:
    """The value of the last of these flags (``--flag V`` or ``--flag=V``)."""
    value = None
    args = list(argv)
    for i, arg in enumerate(args):
        if flag_name(arg) not in flags:
            continue
        if "=" in arg:
            value = arg.split("=", 1)[1]
        elif i + 1 < len(args):
            value = args[i + 1]
    return value


def _size(argv: Sequence[str], flags: Sequence[str]) -> int:
    value = last_value(argv, flags)
    try:
        size = int(value) if value is not None else 1
    except ValueError:
        return 1  # not a number: the server will say so; not ours to refuse
    return max(1, size)
