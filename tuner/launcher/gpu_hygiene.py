"""GPU hygiene around a launch: idle before it, memory given back after it.

A trial measured on a GPU that another process is using measures that process
too; a server that left 96 GB behind poisons every trial after it. Before a
launch, ``ensure_gpus_idle`` waits for the GPUs to be free and otherwise names
who holds them (tuner never kills a process it did not start). After a stop,
``check_gpu_memory_back`` waits for the memory to return to its pre-launch level.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence

from tuner.errors import LaunchError
from tuner.launcher.procfs import describe, paths_in_use, proc_table
from tuner.telemetry.gpu import GpuBackend, GpuProcess

logger = logging.getLogger("tuner.launcher")

SecondPass = Callable[[list[int]], list[str]]
"""Given the GPUs whose memory did not come back, kill what of ours holds them;
returns sentences saying what it did."""


def gpu_indices(gpu: GpuBackend, devices: Sequence[int] | None) -> list[int]:
    """The NVML indices to watch: the given ones, or every GPU."""
    if devices is None:
        return list(range(gpu.device_count()))
    return list(devices)


def memory_snapshot(gpu: GpuBackend | None, devices: Sequence[int] | None) -> dict[int, float]:
    """Memory used per GPU now (empty without a usable backend; a GPU that cannot
    report is left out, so it is not checked after the stop either)."""
    if gpu is None or not gpu.available:
        return {}
    snapshot = {}
    for index in gpu_indices(gpu, devices):
        used = _memory(gpu, index)
        if used is None:
            logger.warning("GPU %d cannot report its memory: not checked after the stop", index)
        else:
            snapshot[index] = used
    return snapshot


def _memory(gpu: GpuBackend, index: int) -> float | None:
    # A backend may raise when it cannot say (NVML's GpuQueryError): unknown, not zero.
    try:
        return gpu.memory_used_mib(index)
    except Exception:  # noqa: BLE001
        return None


def _holders(gpu: GpuBackend, index: int) -> list[GpuProcess]:
    try:
        return gpu.compute_processes(index)
    except Exception:  # noqa: BLE001
        return []


def ensure_gpus_idle(
    gpu: GpuBackend,
    devices: list[int] | None,
    *,
    max_memory_mib: float,
    timeout_s: float,
    poll_s: float = 1.0,
) -> None:
    """Wait up to ``timeout_s`` for the GPUs to hold no compute process and less than
    ``max_memory_mib`` each; else raise LaunchError naming every holder.

    A GPU whose memory cannot be read counts as busy: unknown is not free.
    """
    if not gpu.available:
        return
    indices = gpu_indices(gpu, devices)
    deadline = time.monotonic() + timeout_s
    while True:
        busy = []
        for index in indices:
            used = _memory(gpu, index)
            procs = _holders(gpu, index)
            if procs or used is None or used >= max_memory_mib:
                busy.append((index, used, procs))
        if not busy:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(poll_s, remaining))
    parts = [
        (
            f"GPU {index} cannot report its memory"
            if used is None
            else f"GPU {index} uses {used:.0f} MiB (limit {max_memory_mib:.0f} MiB)"
        )
        + (f", held by {describe_holders(procs)}" if procs else ", no compute process listed")
        for index, used, procs in busy
    ]
    raise LaunchError(
        f"GPUs not idle after {timeout_s:g} s: "
        + "; ".join(parts)
        + ". tuner does not stop processes it did not start: stop them or pick other GPUs"
    )


def describe_holders(procs: Sequence[GpuProcess]) -> str:
    """'pid 12 (vllm serve ...) with 9000 MiB, pid 99 ((not visible)) with ? MiB'."""
    out = []
    for proc in procs:
        memory = "?" if proc.used_memory_mib is None else f"{proc.used_memory_mib:.0f}"
        out.append(f"{describe(proc.pid)} with {memory} MiB")
    return ", ".join(out)


def memory_over(
    gpu: GpuBackend, baseline: dict[int, float], tolerance_mib: float
) -> dict[int, float | None]:
    """GPUs above their pre-launch memory plus tolerance: index -> memory used now
    (None: it cannot be read, which does not count as given back)."""
    over: dict[int, float | None] = {}
    for index, before in baseline.items():
        used = _memory(gpu, index)
        if used is None or used > before + tolerance_mib:
            over[index] = used
    return over


def check_gpu_memory_back(
    gpu: GpuBackend | None,
    baseline: dict[int, float],
    *,
    tolerance_mib: float,
    timeout_s: float,
    poll_s: float = 0.5,
    second_pass: SecondPass | None = None,
) -> tuple[bool | None, list[str]]:
    """Wait for every GPU to be back within ``tolerance_mib`` of ``baseline``.

    Returns (ok, problem sentences); ok is None when there is nothing to check.
    Half-way through, ``second_pass`` gets the GPUs still held (the driver can
    take seconds to free a killed process's memory, so it is not called at once).
    """
    if gpu is None or not gpu.available or not baseline:
        return None, []
    start = time.monotonic()
    notes: list[str] = []
    passed_twice = second_pass is None
    while True:
        over = memory_over(gpu, baseline, tolerance_mib)
        elapsed = time.monotonic() - start
        if not over:
            return True, notes
        if not passed_twice and elapsed >= timeout_s / 2:
            notes.extend(second_pass(sorted(over)))  # type: ignore[misc]
            passed_twice = True
            continue
        if elapsed >= timeout_s:
            break
        time.sleep(min(poll_s, max(timeout_s - elapsed, 0.0)))
    problems = notes
    for index, used in sorted(over.items()):
        if used is None:
            problems.append(f"GPU {index} cannot report its memory {timeout_s:g} s after the stop")
            continue
        holders = _holders(gpu, index)
        problems.append(
            f"GPU {index} still uses {used:.0f} MiB, {used - baseline[index]:.0f} MiB more "
            f"than before the launch (tolerance {tolerance_mib:.0f} MiB), "
            f"{timeout_s:g} s after the stop"
            + (f"; held by {describe_holders(holders)}" if holders else "")
        )
    return False, problems


def device_file_holders(min_start_ticks: int = 0) -> set[int]:
    """Pids (not ours) with a ``/dev/nvidia*`` file open or mapped, started at or after
    ``min_start_ticks``: NVML does not list processes of another pid namespace."""
    me = os.getpid()
    return {
        pid
        for pid, stat in proc_table().items()
        if pid != me
        and stat.start_ticks >= min_start_ticks
        and not stat.dead
        and paths_in_use(pid, "/dev/nvidia")
    }
