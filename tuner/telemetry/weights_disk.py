"""The model's weights on this machine: their bytes and the filesystem they are read from.

vLLM reads one format of a checkpoint folder, not every file in it: the safetensors when
there are any, else the PyTorch ``.bin``/``.pt``/``.pth`` files, else a GGUF file; so the
size counted is that format's files only (a Hugging Face snapshot's links are followed to
their blobs). The filesystem is the mount holding the first of those files (its blob, for
a snapshot), as psutil lists the mounts: a network or parallel one (NFS, Lustre, ...) reads
a checkpoint slower than a local disk, and vLLM (0.32) prefetches on NFS and Lustre by itself
when the checkpoint fits in 90% of the available RAM. tuner init sizes its startup limit
with these bytes (tuner/init/startup.py); the study's inventory keeps them, so a load can be
explained on any machine (tuner/study/facts/load_explained.py).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import psutil

from tuner.space.model_limits import load_model_config
from tuner.space.spec import Space

_FORMATS = (("*.safetensors",), ("*.bin", "*.pt", "*.pth"), ("*.gguf",))

NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "lustre",
        "cifs",
        "smb3",
        "smbfs",
        "ceph",
        "glusterfs",
        "gpfs",
        "beegfs",
        "wekafs",
        "9p",
        "fuse.juicefs",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "fuse.mountpoint-s3",
        "fuse.ceph",
    }
)
"""Filesystems that read over a network or a parallel store: a lazy (mmap) read of a
checkpoint there pays a round trip per page fault (vLLM's config/load.py)."""


@dataclass(frozen=True)
class WeightsOnDisk:
    """The weight files vLLM reads from one folder: where, how many bytes, on what."""

    path: str
    bytes: int
    fstype: str | None
    """The mount's filesystem type (``ext4``, ``xfs``, ``nfs4``, ``lustre``, ``overlay``,
    ``tmpfs`` ...); None when no mount holds it (psutil found none)."""
    mountpoint: str | None


def weight_files(folder: Path) -> list[Path]:
    """The files vLLM reads from ``folder``: its first format that has any (see the module)."""
    for patterns in _FORMATS:
        files = [f for pattern in patterns for f in sorted(folder.glob(pattern))]
        if files:
            return files
    return []


def weights_on_disk(folder: Path) -> int | None:
    """Bytes of the weight files vLLM reads from ``folder``; None when it holds none."""
    for patterns in _FORMATS:
        files = [f for pattern in patterns for f in sorted(folder.glob(pattern))]
        sizes = []
        for file in files:
            with contextlib.suppress(OSError):  # a broken link: a blob not downloaded
                sizes.append(file.stat().st_size)
        if sizes:
            return sum(sizes)
    return None


def filesystem_of(path: Path) -> tuple[str, str] | None:
    """The (filesystem type, mount point) holding ``path`` (links followed): the mount
    with the longest mount point above it; None when psutil lists none."""
    try:
        target = os.path.realpath(path)
        mounts = psutil.disk_partitions(all=True)
    except (OSError, RuntimeError):
        return None
    best: tuple[str, str] | None = None
    for mount in mounts:
        point = mount.mountpoint
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > len(best[1])):
            best = (mount.fstype.lower(), point)
    return best


def weights_facts(folder: Path) -> WeightsOnDisk | None:
    """The weights in ``folder`` (a model folder, or a Hugging Face snapshot); None when it
    holds no weight file this machine can read."""
    size = weights_on_disk(folder)
    files = weight_files(folder)
    if size is None or not files:
        return None
    mount = filesystem_of(files[0])
    return WeightsOnDisk(
        path=str(folder),
        bytes=size,
        fstype=mount[0] if mount else None,
        mountpoint=mount[1] if mount else None,
    )


def model_folder(space: Space) -> Path | None:
    """The folder of the model the space's server command names, when its config.json is
    on this machine (a local folder, or the Hugging Face cache's snapshot); else None."""
    config = load_model_config(space)
    found = (config or {}).get("_tuner_config_path")
    return Path(found).parent if isinstance(found, str) else None
