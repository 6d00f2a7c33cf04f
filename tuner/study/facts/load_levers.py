"""The one lever most likely to cut a full load, by a fixed rule on what its figures say.

The figures (``LoadFacts``) are tuner/study/facts/load_explained.py's: the part of the load
that takes longest, the weights' bytes against the RAM, the read rate, the filesystem, the
load strategy the launches used, a cold first load against warm later ones. The rule, on
the part that takes longest:

1. the weights, and they do not fit the page cache, or they are read from a network or
   parallel filesystem below ``SLOW_READ``: ``--safetensors-load-strategy prefetch``
   (vLLM PR #36012: DeepSeek-V3's weights on 8 GPUs, 1,500 s to 435 s), where the server's
   --help has it and the launches do not prefetch already; weights larger than the RAM
   may evict prefetched pages before they are read, so there it is a lever to measure;
2. the weights, and they fit: a first load that read the disk and later ones the page
   cache (measured cold against warm in the study): keep the weights cached before a
   restart;
3. torch.compile, not loaded from its cache: a compile cache kept per configuration (vLLM
   PR #11005: compiling Llama-3-8B's graph was 14.8 of its 19.4 s of torch.compile, what a
   warm cache loads instead);
4. CUDA graphs: ``--max-cudagraph-capture-size`` (vLLM 0.32's --help) below its default
   512: fewer graphs captured, batches above it run without them;
5. otherwise (the rest of the load, a lever already in use, a flag the server does not
   offer, the weights already read from memory): no lever, and why.

Each lever carries its figure and its source; the weights' cache and the rest are said
in tuner/study/facts/load_explained.py's sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.telemetry.weights_disk import NETWORK_FILESYSTEMS

SLOW_READ = 1e9
"""Bytes a second below which a network filesystem's read is worth prefetching."""
STRATEGY_FLAG = "--safetensors-load-strategy"
CAPTURE_FLAG = "--max-cudagraph-capture-size"


@dataclass(frozen=True)
class LoadFacts:
    """The figures of a full load of the defaults (None: not known)."""

    launches: int
    healthy_s: float
    dominant: str | None
    """The part that takes longest: weights, compile, cuda_graphs or rest (None: no phase)."""
    dominant_s: float | None
    weights_s: float | None
    weights_bytes: float | None
    ram_total: float | None
    ram_available: float | None
    filesystem: str | None
    strategy: str | None
    """The load strategy the launches gave (None: vLLM's default)."""
    cold_s: float | None = None
    """The first full load's weights seconds, when it read the disk and later ones did not."""
    warm_s: float | None = None
    compile_cached: bool = False

    @property
    def read_rate(self) -> float | None:
        """Bytes a second the weights phase reached (bytes / its median seconds)."""
        if self.weights_bytes is None or not self.weights_s:
            return None
        return self.weights_bytes / self.weights_s

    @property
    def fits(self) -> bool | None:
        """Whether the page cache can hold the weights: one copy, whatever the TP (each
        rank reads the whole checkpoint, vLLM issue #5405, through the same cache), against
        the RAM available, else the total."""
        room = self.ram_available if self.ram_available is not None else self.ram_total
        if self.weights_bytes is None or room is None:
            return None
        return self.weights_bytes <= room

    @property
    def network_fs(self) -> bool:
        return self.filesystem in NETWORK_FILESYSTEMS


@dataclass(frozen=True)
class Lever:
    """One change that would cut the load, with its figure and where the figure is from."""

    change: str
    effect: str
    source: str
    caveat: str = ""
    """What may undo it here, said after the source."""


def choose_lever(facts: LoadFacts, offers: frozenset[str] | None) -> tuple[Lever | None, str]:
    """The module's rule: (the lever, "") or (None, why none). ``offers``: the options
    the server's --help lists (None: not read here, so a flag is named as it may be)."""
    f = facts

    def offered(flag: str) -> bool:
        return offers is None or flag in offers

    if f.dominant == "compile":
        if f.compile_cached:
            return None, "torch.compile loaded its graphs from the cache already"
        return Lever(
            "a compile cache kept per configuration (server.env VLLM_CACHE_ROOT: "
            '"{study_dir}/vllm-cache/{config}")',
            "lets a repeat launch load its graphs instead of compiling them: 14.8 of "
            "Llama-3-8B's 19.4 s of torch.compile",
            "vLLM PR #11005",
        ), ""
    if f.dominant == "cuda_graphs":
        if not offered(CAPTURE_FLAG):
            return None, f"this server's --help has no {CAPTURE_FLAG}"
        return Lever(
            f"`{CAPTURE_FLAG}` below 512 (batches above it run without CUDA graphs)",
            "captures fewer graphs than the 51 sizes up to 512 it captures by default",
            "vLLM 0.32's CompilationConfig",
        ), ""
    if f.dominant == "rest":
        return None, "the rest (imports, processes, memory profiling, the KV cache) has no lever"
    if f.cold_s is not None and f.warm_s is not None and f.fits is not False:
        return Lever(
            "keep the weights in the page cache before a restart (read them once, e.g. "
            "`vmtouch -t DIR`):",
            f"{secs_text(f.cold_s)} cold, {secs_text(f.warm_s)} warm",
            "measured in this study",
        ), ""
    slow_net = f.network_fs and (f.read_rate is None or f.read_rate < SLOW_READ)
    if f.fits is False or slow_net:
        if f.strategy == "prefetch":
            return None, "the launches prefetch already: a faster disk or more RAM is left"
        if not offered(STRATEGY_FLAG):
            return None, f"this server's --help has no {STRATEGY_FLAG} (vLLM PR #36012 added it)"
        return Lever(
            f"`{STRATEGY_FLAG} prefetch`",
            "cut DeepSeek-V3's weights load on 8 GPUs from 1,500 s to 435 s",
            "vLLM PR #36012",
            "larger than the RAM, prefetched pages may be evicted before they are read: "
            "measure it (search_spaces/load.yaml)"
            if f.fits is False
            else "",
        ), ""
    if f.fits:
        return None, "read from memory, the weights phase is building and copying them"
    return None, "the weights' size is not known on this machine"


def secs_text(value: float) -> str:
    """Seconds as a load's sentence says them: '4.2 s', '42 s', '2,160 s'."""
    return f"{value:,.0f} s" if value >= 10 else f"{value:.1f} s"
