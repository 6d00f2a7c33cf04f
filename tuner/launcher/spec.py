"""What to launch: ``LaunchSpec`` (argv, environment, where it listens, limits) and ports.

A spec is fully resolved: ``{port}`` and ``{value}`` are already substituted, and
the environment is described as changes to tuner's own: ``env`` sets variables,
``unset`` removes inherited ones. ``unset`` is how a parameter at ``default`` stays
default even when the operator's shell exports it (an exported ``NCCL_ALGO`` would
otherwise leak into the baseline).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tuner.telemetry.gpu import GpuBackend


@dataclass(frozen=True, kw_only=True)
class LaunchSpec:
    """One server launch, ready to run."""

    argv: list[str]
    port: int
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    unset: frozenset[str] = frozenset()
    host: str = "127.0.0.1"
    health_path: str = "/health"
    startup_timeout_s: float = 3600.0
    stop_timeout_s: float = 60.0
    cpus: list[int] | None = None
    gpu_devices: list[int] | None = None
    cwd: Path | None = None
    kill_wait_s: float = 10.0
    """After SIGKILL, how long to wait for the processes to disappear (GPU teardown)."""
    gpu_memory_tolerance_mib: float = 512.0
    """After a stop, each GPU must be back within this much of its pre-launch memory."""
    gpu_release_timeout_s: float = 60.0
    """How long to wait for the GPU memory to come back after the processes are gone."""

    def __post_init__(self) -> None:
        # Normalise containers so a caller's later mutation cannot change a launch.
        object.__setattr__(self, "argv", [str(a) for a in self.argv])
        object.__setattr__(self, "env", {str(k): str(v) for k, v in self.env.items()})
        object.__setattr__(self, "unset", frozenset(self.unset))
        object.__setattr__(self, "log_path", Path(self.log_path))
        if not self.argv:
            raise ValueError("LaunchSpec.argv is empty: nothing to start")
        if not 0 < self.port < 65536:
            raise ValueError(f"LaunchSpec.port {self.port} is not a TCP port")
        both = sorted(self.unset & self.env.keys())
        if both:
            raise ValueError(f"variables both set and unset: {', '.join(both)}")
        if not self.health_path.startswith("/"):
            object.__setattr__(self, "health_path", "/" + self.health_path)
        for name in ("startup_timeout_s", "stop_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"LaunchSpec.{name} must be above 0")

    def child_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The server's environment: ``base`` (default: tuner's), less ``unset``, plus ``env``."""
        merged = dict(os.environ if base is None else base)
        for name in self.unset:
            merged.pop(name, None)
        merged.update(self.env)
        return merged

    @property
    def probe_host(self) -> str:
        """Where to connect to reach the server: a wildcard bind is reached on loopback."""
        if self.host in ("", "0.0.0.0"):
            return "127.0.0.1"
        if self.host == "::":
            return "::1"
        return self.host

    @property
    def health_url(self) -> str:
        host = self.probe_host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}{self.health_path}"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the kernel's pick); it may be taken again later."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """Something already listens on host:port (binding fails with EADDRINUSE)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Servers bind with SO_REUSEADDR too: a port in TIME_WAIT is free for them.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def port_listeners(port: int) -> list[int]:
    """Pids listening on a TCP port, as far as we may see (empty when unknown)."""
    pids: set[int] = set()
    with contextlib.suppress(psutil.Error, OSError):
        for conn in psutil.net_connections(kind="tcp"):
            listening = conn.status == psutil.CONN_LISTEN and conn.laddr
            if listening and conn.laddr.port == port and conn.pid is not None:
                pids.add(conn.pid)
    return sorted(pids)


def parse_visible_devices(value: str | None, gpu: GpuBackend | None = None) -> list[int] | None:
    """The NVML indices named by a ``CUDA_VISIBLE_DEVICES`` value; None means all GPUs.

    Numbers are taken as NVML indices, which matches CUDA only with
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; ``GPU-...`` UUIDs are looked up through the backend.
    An entry that cannot be resolved makes the answer None (check all GPUs, the safe side).
    """
    if value is None or value.strip() == "":
        return None
    devices: list[int] = []
    uuids: dict[str, int] | None = None
    for item in value.split(","):
        item = item.strip()
        if item.isdigit():
            devices.append(int(item))
            continue
        if item.startswith("GPU-") and gpu is not None and gpu.available:
            if uuids is None:
                uuids = {gpu.info(i).uuid: i for i in range(gpu.device_count())}
            match = [i for uuid, i in uuids.items() if uuid.startswith(item)]
            if len(match) == 1:
                devices.append(match[0])
                continue
        return None
    return devices
