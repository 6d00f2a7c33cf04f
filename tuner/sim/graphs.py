"""The CUDA-graph capture sizes of a launch, as vLLM 0.32 lists them.

Without ``--cudagraph-capture-sizes`` vLLM captures ``[1, 2, 4] + range(8, 256, 8) +
range(256, max + 1, 16)`` up to ``--max-cudagraph-capture-size`` (512 by default;
vllm/config/vllm.py ``_set_cudagraph_sizes``): 51 graphs. The simulator's capture phase
takes its time per graph (a smaller maximum, a shorter capture), and a decode batch above
the largest captured size runs without CUDA graphs, as eager mode does
(tuner/sim/model.py ``compilation_factor``), up to the default's 512: the profiles were
measured with the default list.
"""

from __future__ import annotations

from tuner.sim.settings import SimSettings

DEFAULT_MAX_CAPTURE = 512


def capture_sizes(max_size: int) -> list[int]:
    """The batch sizes vLLM captures up to ``max_size``."""
    sizes = [s for s in (1, 2, 4) if s <= max_size]
    sizes += list(range(8, min(max_size + 1, 256), 8))
    sizes += list(range(256, max_size + 1, 16))
    return sizes


def max_capture(settings: SimSettings) -> int:
    """``--max-cudagraph-capture-size``, else vLLM's 512."""
    given = settings.max_cudagraph_capture_size
    return DEFAULT_MAX_CAPTURE if given is None else given


def largest_graph(settings: SimSettings) -> int:
    """The largest batch a graph is captured for: a larger one runs without CUDA graphs."""
    return capture_sizes(max_capture(settings))[-1]


def loses_graph(settings: SimSettings, batch: int) -> bool:
    """A decode batch the default list captures and this launch's does not: it runs eager.
    Batches above the default's largest are not counted, since the profiles' tables were
    measured with the default list: what runs without graphs there is in them already."""
    return largest_graph(settings) < batch <= capture_sizes(DEFAULT_MAX_CAPTURE)[-1]


def capture_share(settings: SimSettings) -> float:
    """This launch's graphs against the default's: its share of the capture phase."""
    return len(capture_sizes(max_capture(settings))) / len(capture_sizes(DEFAULT_MAX_CAPTURE))
