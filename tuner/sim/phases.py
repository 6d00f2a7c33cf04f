"""The phases of a launch's startup, in seconds: what ``--load-seconds`` is spread over.

A full launch at the default settings takes ``--load-seconds`` in all, and its phases keep the
profile's shares (:class:`tuner.sim.profiles.StartupFigures`, from the seeds' load times and
vLLM's published startup timings): reading the weights, building the model around them,
torch.compile, CUDA-graph capture, and the rest of the engine's init (profile run, KV cache).
Settings drop phases as vLLM does: ``--load-format dummy`` reads no weights (random ones are
filled in on the GPUs), ``-O0`` compiles nothing and captures no graphs, and
``--enforce-eager`` captures none (and compiles nothing unless a level is given). What is
dropped is not spread over the others: such a launch is shorter than ``--load-seconds``.
With ``--host-ram-gib`` the weights take what the page cache and the load strategy make
of them (tuner/sim/page_cache.py) instead of the profile's figure, at the same scale; a
smaller ``--max-cudagraph-capture-size`` captures fewer graphs (tuner/sim/graphs.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.sim.graphs import capture_share
from tuner.sim.model import compilation_level
from tuner.sim.profiles import Profile
from tuner.sim.settings import SimSettings


@dataclass(frozen=True)
class StartupPlan:
    """Wall seconds of each startup phase of one launch."""

    weights_s: float  # 0 with --load-format dummy
    model_init_s: float
    compile_s: float  # 0 without compilation
    graphs_s: float  # 0 without CUDA graphs
    engine_s: float
    dummy: bool
    compile_logged: bool  # vLLM prints its torch.compile lines (level 3, VLLM_COMPILE)

    @property
    def load_s(self) -> float:
        """What vLLM's ``Model loading took ... seconds`` covers."""
        return self.weights_s + self.model_init_s

    @property
    def init_engine_s(self) -> float:
        """What vLLM's ``init engine (profile, create kv cache, warmup model) took`` covers."""
        return self.compile_s + self.graphs_s + self.engine_s

    @property
    def total_s(self) -> float:
        return self.load_s + self.init_engine_s


def compiles(settings: SimSettings) -> bool:
    """torch.compile runs: any level above 0; ``--enforce-eager`` without a level means
    none, as vLLM then picks no compilation."""
    if settings.compilation_level is None:
        return not settings.enforce_eager
    return settings.compilation_level > 0


def captures_graphs(settings: SimSettings) -> bool:
    """CUDA graphs are captured unless ``--enforce-eager`` or ``-O0``."""
    return not settings.enforce_eager and compilation_level(settings) > 0


def startup_plan(
    profile: Profile, settings: SimSettings, weights_s: float | None = None
) -> StartupPlan:
    """This launch's phases: the profile's figures scaled so that a full launch at the
    default settings takes ``--load-seconds``, less what the settings skip. ``weights_s``:
    the weights' read in the profile's seconds, as the page cache makes it (None: the
    profile's figure)."""
    fig = profile.startup
    scale = settings.load_seconds / fig.full_s if fig.full_s > 0 else 0.0
    dummy = settings.load_format == "dummy"
    compiled = compiles(settings)
    read_s = fig.weights_s if weights_s is None else weights_s
    graphs = fig.graphs_s * capture_share(settings)
    return StartupPlan(
        weights_s=0.0 if dummy else read_s * scale,
        model_init_s=fig.model_init_s * scale,
        compile_s=fig.compile_s * scale if compiled else 0.0,
        graphs_s=graphs * scale if captures_graphs(settings) else 0.0,
        engine_s=fig.engine_s * scale,
        dummy=dummy,
        compile_logged=compiled and compilation_level(settings) == 3,
    )


def dummy_share(profile: Profile) -> float:
    """A dummy launch's time as a share of a full one, both at the default settings."""
    fig = profile.startup
    return fig.dummy_s / fig.full_s
