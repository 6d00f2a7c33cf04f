"""What the study ran on: host, GPUs, driver, server and NCCL versions, the model's weights.

Collected once per study and stored with it, so two studies' numbers can be
compared knowing whether the machine, the driver or the server changed. Every
field is gathered on its own and left None when it cannot be read; without GPUs
the host side is still complete and ``gpu_note`` says why there are no GPUs. The RAM
available (with the first healthy server up: what a page cache may hold beside a server)
and the weights on disk (bytes, filesystem; tuner/telemetry/weights_disk.py) explain a
load wherever the study is read (tuner/study/facts/load_explained.py).
"""

from __future__ import annotations

import logging
import platform
import re
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import psutil

import tuner
from tuner.telemetry.gpu import GpuBackend, GpuInfo
from tuner.telemetry.weights_disk import weights_facts

log = logging.getLogger(__name__)

# "NCCL version 2.27.3+cuda12.9" (NCCL's own banner with NCCL_DEBUG=INFO) and
# "vLLM is using nccl==2.21.5" (vLLM's pynccl wrapper, at INFO level).
_NCCL_PATTERNS = (
    re.compile(r"NCCL version (\d+\.\d+\.\d+(?:\+cuda[\d.]+)?)"),
    re.compile(r"using nccl\s*==\s*(\d+\.\d+\.\d+)", re.IGNORECASE),
)


@dataclass(frozen=True)
class Inventory:
    """One machine and server, as a study saw them."""

    hostname: str
    os: str
    python_version: str
    tuner_version: str | None
    cpu_model: str | None
    cpu_count: int | None  # logical CPUs
    cpu_cores: int | None  # physical cores
    ram_total_gib: float | None
    gpu_count: int
    gpus: tuple[GpuInfo, ...]
    driver_version: str | None
    cuda_driver_version: str | None
    nvlink: bool | None  # any active NVLink link; None without GPUs
    gpu_note: str | None  # why there are no GPU facts, e.g. "no NVIDIA GPU: GPU telemetry off"
    server_version: str | None
    nccl_version: str | None
    collected_at: float  # time.time()
    ram_available_gib: float | None = None  # with the study's first healthy server up
    weights_path: str | None = None  # the model's folder on this machine (None: not here)
    weights_bytes: int | None = None  # of the files vLLM reads from it
    weights_fs: str | None = None  # the filesystem they are read from: ext4, nfs4, lustre ...

    @property
    def gpu_names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.gpus)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, ``gpu_names`` included."""
        data = asdict(self)
        data["gpus"] = [asdict(g) for g in self.gpus]
        data["gpu_names"] = list(self.gpu_names)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Inventory:
        """Rebuild from ``to_dict()`` output (as stored); unknown keys are ignored and
        missing ones read as None, so inventories stored by other versions still load."""
        gpu_fields = {f.name for f in fields(GpuInfo)}
        gpus = tuple(
            GpuInfo(**{k: v for k, v in g.items() if k in gpu_fields})
            for g in data.get("gpus") or ()
        )
        values: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls)}
        values.update(
            gpus=gpus,
            gpu_count=data.get("gpu_count", len(gpus)),
            hostname=data.get("hostname") or "?",
            os=data.get("os") or "?",
            python_version=data.get("python_version") or "?",
            collected_at=data.get("collected_at") or 0.0,
        )
        return cls(**values)


def parse_nccl_version(log_text: str | None) -> str | None:
    """The NCCL version a server log states (first mention), or None."""
    if not log_text:
        return None
    for pattern in _NCCL_PATTERNS:
        match = pattern.search(log_text)
        if match:
            return match.group(1)
    return None


def server_version(base_url: str, *, timeout_s: float = 5.0) -> str | None:
    """``GET {base_url}/version`` -> its "version" (vLLM answers ``{"version": "0.11.0"}``)."""
    # Only needed with a server: keeps this module (and `tuner best`) free of httpx.
    from tuner.server_http import server_client  # noqa: PLC0415

    try:
        with server_client(timeout=timeout_s) as client:
            response = client.get(base_url.rstrip("/") + "/version")
        if response.status_code != 200:
            return None
        version = response.json().get("version")
    except Exception as exc:  # noqa: BLE001 - a missing version is a blank, not an error
        log.debug("no server version from %s: %r", base_url, exc)
        return None
    return str(version) if version is not None else None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or None


def _tuner_version() -> str | None:
    version = tuner.__version__
    return None if version.startswith("unknown") else version


def _safe(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - one unreadable fact must not lose the rest
        log.debug("inventory: %s failed: %r", getattr(fn, "__name__", fn), exc)
        return None


def collect_inventory(
    gpu: GpuBackend,
    *,
    base_url: str | None = None,
    log_text: str | None = None,
    timeout_s: float = 5.0,
    weights_dir: Path | None = None,
) -> Inventory:
    """Gather the inventory; never raises.

    ``base_url`` adds the server's version (GET /version); ``log_text`` (the server's
    log so far) adds the NCCL version when the log states it; ``weights_dir`` (the model's
    folder on this machine) its weights' bytes and filesystem.
    """
    gpus: list[GpuInfo] = []
    count = (_safe(gpu.device_count) or 0) if gpu.available else 0
    for index in range(count):
        info = _safe(gpu.info, index)
        if info is not None:
            gpus.append(info)
    note = None if gpus else (getattr(gpu, "reason", None) or "no GPU facts: GPU telemetry off")
    memory = _safe(psutil.virtual_memory)
    weights = _safe(weights_facts, weights_dir) if weights_dir is not None else None
    return Inventory(
        hostname=socket.gethostname(),
        os=platform.platform(),
        python_version=sys.version.split()[0],
        tuner_version=_tuner_version(),
        cpu_model=_cpu_model(),
        cpu_count=_safe(psutil.cpu_count, True),
        cpu_cores=_safe(psutil.cpu_count, False),
        ram_total_gib=round(memory.total / 2**30, 1) if memory is not None else None,
        gpu_count=len(gpus),
        gpus=tuple(gpus),
        driver_version=_safe(gpu.driver_version) if gpu.available else None,
        cuda_driver_version=_safe(gpu.cuda_driver_version) if gpu.available else None,
        nvlink=any(g.nvlink_links > 0 for g in gpus) if gpus else None,
        gpu_note=note,
        server_version=server_version(base_url, timeout_s=timeout_s) if base_url else None,
        nccl_version=parse_nccl_version(log_text),
        collected_at=time.time(),
        ram_available_gib=round(memory.available / 2**30, 1) if memory is not None else None,
        weights_path=weights.path if weights is not None else None,
        weights_bytes=weights.bytes if weights is not None else None,
        weights_fs=weights.fstype if weights is not None else None,
    )


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)


def _link(gen: int | None, width: int | None) -> str:
    if gen is None and width is None:
        return "-"
    return f"Gen{_or_dash(gen)} x{_or_dash(width)}"


def inventory_lines(inv: Inventory) -> list[str]:
    """The inventory as plain ``key: value`` lines (for logs and scripts without rich)."""
    lines = [
        f"host: {inv.hostname} ({inv.os})",
        f"cpu: {_or_dash(inv.cpu_model)}, {_or_dash(inv.cpu_count)} threads, "
        f"{_or_dash(inv.cpu_cores)} cores",
        f"ram: {_or_dash(inv.ram_total_gib)} GiB, {_or_dash(inv.ram_available_gib)} available",
        f"python: {inv.python_version}, tuner: {_or_dash(inv.tuner_version)}",
        f"server: {_or_dash(inv.server_version)}, nccl: {_or_dash(inv.nccl_version)}",
    ]
    if inv.weights_bytes is not None:
        lines.append(
            f"weights: {inv.weights_bytes / 1e9:.1f} GB on {_or_dash(inv.weights_fs)} "
            f"({inv.weights_path})"
        )
    if not inv.gpus:
        lines.append(f"gpus: none ({inv.gpu_note})")
        return lines
    lines.append(
        f"gpus: {inv.gpu_count}, driver {_or_dash(inv.driver_version)}, "
        f"CUDA {_or_dash(inv.cuda_driver_version)}, NVLink {'yes' if inv.nvlink else 'no'}"
    )
    for g in inv.gpus:
        lines.append(
            f"  gpu {g.index}: {g.name}, {g.memory_total_mib / 1024:.1f} GiB, "
            f"PCIe {_link(g.pcie_gen, g.pcie_width)} "
            f"(max {_link(g.pcie_gen_max, g.pcie_width_max)}), "
            f"NVLink links {g.nvlink_links}, power limit {_or_dash(g.power_limit_w)} W"
        )
    return lines


def render_inventory_dict(data: Mapping[str, Any]) -> Any:
    """``render_inventory`` of a stored ``Inventory.to_dict()``."""
    return render_inventory(Inventory.from_dict(data))


def render_inventory(inv: Inventory) -> Any:
    """A rich renderable for ``tuner show``: a key/value table, then one row per GPU."""
    from rich.console import Group  # noqa: PLC0415 - rich only where something is drawn
    from rich.table import Table  # noqa: PLC0415

    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column()
    facts.add_row("Host", f"{inv.hostname} ({inv.os})")
    facts.add_row(
        "CPU",
        f"{_or_dash(inv.cpu_model)}, {_or_dash(inv.cpu_count)} threads, "
        f"{_or_dash(inv.cpu_cores)} cores",
    )
    facts.add_row("RAM", f"{_or_dash(inv.ram_total_gib)} GiB")
    if inv.gpus:
        names = sorted(set(inv.gpu_names))
        facts.add_row("GPUs", f"{inv.gpu_count} x {', '.join(names)}")
        facts.add_row(
            "Driver", f"{_or_dash(inv.driver_version)} (CUDA {_or_dash(inv.cuda_driver_version)})"
        )
        facts.add_row("NVLink", "yes" if inv.nvlink else "no")
    else:
        facts.add_row("GPUs", f"none: {inv.gpu_note}")
    facts.add_row("Server", _or_dash(inv.server_version))
    facts.add_row("NCCL", _or_dash(inv.nccl_version))
    facts.add_row("Python", inv.python_version)
    facts.add_row("tuner", _or_dash(inv.tuner_version))
    if not inv.gpus:
        return facts

    table = Table(title="GPUs", title_justify="left")
    for column in ("#", "name", "memory", "PCIe now", "PCIe max", "NVLink", "power limit"):
        table.add_column(column)
    for g in inv.gpus:
        table.add_row(
            str(g.index),
            g.name,
            f"{g.memory_total_mib / 1024:.1f} GiB",
            _link(g.pcie_gen, g.pcie_width),
            _link(g.pcie_gen_max, g.pcie_width_max),
            str(g.nvlink_links),
            f"{g.power_limit_w:.0f} W" if g.power_limit_w is not None else "-",
        )
    return Group(facts, table)
