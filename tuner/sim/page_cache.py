"""The page cache under the simulated weight load: a cold read, a warm one, the load strategy.

Off unless ``--host-ram-gib`` is given: then the weights phase follows the host's page
cache instead of the profile's one figure. The cache holds ``PAGE_CACHE_SHARE`` of the RAM
(vLLM 0.32 prefetches only what fits 90% of the available RAM). A load reads the bytes the
cache holds of these weights at ``WARM_READ`` and the rest at ``COLD_READ``; with
``--safetensors-load-strategy prefetch`` the cold bytes the cache has room for are read
``PREFETCH_SPEEDUP`` times faster, and the rest, which the prefetch would evict before the
workers read them, at the lazy rate. ``eager``, ``torchao`` and ``lazy`` read as the
default does: no public figure times them on a local disk. After a full load the cache
holds the weights when they fit, else ``OVERFLOW_KEEP`` of its room (a read larger than
the cache evicts its own first pages).

What the cache holds outlives the process in ``--page-cache-file PATH`` (give it
``{study_dir}/page-cache``: a study starts cold): one line, the profile and the bytes
cached, read at startup and written after the weights are read, under an exclusive
``fcntl.flock`` (faults.locked_state_file, as the launch counter). Without it every
load is a first load.

Calibration, in the seeds' box seconds (``--load-seconds`` then scales a launch as the
profile's figures do, tuner/sim/phases.py):

- ``COLD_READ``: 547 GB in 36 minutes, a first load (calibration.yaml, kimi-k2.5-int4-tp8);
- ``WARM_READ``: 230 GB in 75 s (calibration.yaml, minimax-m2.5-fp8-tp4, which fits);
- ``OVERFLOW_KEEP``: the same 547 GB took 20 minutes on a second load, against 512 GB of
  RAM (issue 41): the second load found 265 GB cached;
- ``PREFETCH_SPEEDUP``: 1,500 s to 435 s, DeepSeek-V3's weights on 8 GPUs (vLLM PR #36012).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from tuner.sim.faults import locked_state_file

GIB = 2**30
PAGE_CACHE_SHARE = 0.9
COLD_READ = 547e9 / (36 * 60)
WARM_READ = 230e9 / 75
PREFETCH_SPEEDUP = 1500 / 435
_SEEDS_ROOM = PAGE_CACHE_SHARE * 512e9
_SECOND_WARM = (36 * 60 - 20 * 60) / (1 / COLD_READ - 1 / WARM_READ)
OVERFLOW_KEEP = _SECOND_WARM / _SEEDS_ROOM
STRATEGIES = ("lazy", "eager", "prefetch", "torchao")
"""vLLM 0.32's ``--safetensors-load-strategy`` values (vllm/config/load.py)."""


def room(host_ram_gib: float) -> float:
    """Bytes the page cache can hold on a host with this RAM."""
    return host_ram_gib * GIB * PAGE_CACHE_SHARE


def weights_read_s(size: float, cached: float, space: float, strategy: str | None) -> float:
    """Seconds (the seeds' box's) to read ``size`` bytes of weights, ``cached`` of them in
    the page cache, which holds ``space`` bytes in all, with this load strategy."""
    warm = min(max(cached, 0.0), size)
    cold = size - warm
    if strategy != "prefetch":
        return warm / WARM_READ + cold / COLD_READ
    fetched = min(cold, max(0.0, space - warm))
    return (
        warm / WARM_READ + fetched / (COLD_READ * PREFETCH_SPEEDUP) + (cold - fetched) / COLD_READ
    )


def cached_after(size: float, space: float) -> float:
    """Bytes of these weights the cache holds after a full read of them."""
    return size if size <= space else OVERFLOW_KEEP * space


def checkpoint_line(size: float, host_ram_gib: float) -> str:
    """vLLM 0.32's line before it reads a safetensors checkpoint (weight_utils.py)."""
    return (
        f"Filesystem type for checkpoints: EXT4. Checkpoint size: {size / GIB:.2f} GiB. "
        f"Available RAM: {room(host_ram_gib) / GIB:.2f} GiB."
    )


class PageCacheFileError(OSError):
    """The page-cache file cannot be read or written, or holds something else."""


def read_cached(path: str | os.PathLike[str], key: str) -> float:
    """Bytes of ``key``'s weights the file says are cached (0 when missing or another's)."""
    target = Path(path)
    try:
        with open(target, encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_SH)  # never half of a write
            text = f.read().strip()
    except FileNotFoundError:
        return 0.0
    except OSError as exc:
        raise PageCacheFileError(f"--page-cache-file {target}: {exc.strerror or exc}") from exc
    if not text:
        return 0.0
    name, _, amount = text.partition(" ")
    try:
        value = float(amount)
    except ValueError:
        value = -1.0
    if value < 0:
        raise PageCacheFileError(
            f"--page-cache-file {target}: holds {text[:40]!r}, not 'PROFILE BYTES' (delete it "
            "to start again from a cold cache)"
        )
    return value if name == key else 0.0


def remember(path: str | os.PathLike[str], key: str, cached: float) -> None:
    """Write that ``cached`` bytes of ``key``'s weights are in the cache (one model's at a
    time: loading another's evicts them), under an exclusive flock."""
    with locked_state_file(Path(path), "--page-cache-file", PageCacheFileError) as f:
        f.seek(0)
        f.truncate()
        f.write(f"{key} {cached:.0f}\n")
        f.flush()
        os.fsync(f.fileno())
