"""`tuner probe membw`: each visible GPU's memory bandwidth, for the ceiling's memory floor.

With torch and a GPU it measures: a large device-to-device copy (each byte read once and
written once), timed with CUDA events, best of ``repeats`` batches of ``iters`` copies.
A copy is what decode does to its weights at best (one streaming pass), so its rate is
what a step can reach, below the spec sheet. Without torch or a GPU it falls back to
NVML's theoretical figure (max memory clock x bus width, telemetry/gpu.py) and says so;
with neither, ProbeError says what to install or to set ``probe.memory_bandwidth_gbps``.
The ceiling takes the slowest GPU: under tensor parallelism every rank waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuner.probe.run import ProbeError
from tuner.telemetry.gpu import GpuBackend, open_gpu_backend

NEITHER = (
    "no way to read the GPU's memory bandwidth here: torch sees no GPU ({torch}) and NVML "
    "gives no figure ({nvml}). Install torch with CUDA (vLLM installs it) or nvidia-ml-py "
    "on the GPU machine, or write the spec sheet's figure in the space file: "
    "probe: {{memory_bandwidth_gbps: 1792}}"
)


@dataclass(frozen=True)
class MembwOptions:
    """How much to copy, and how often."""

    size_bytes: int = 1 << 30
    repeats: int = 5
    iters: int = 10
    warmup: int = 2


def membw(
    options: MembwOptions, *, torch: Any = None, backend: GpuBackend | None = None
) -> dict[str, Any]:
    """The probe's JSON: ``memory_bandwidth_gbps`` (the slowest GPU), per GPU, the source.

    ``torch`` and ``backend`` are the seams tests replace; by default torch is imported
    if it can be and NVML opened (telemetry/gpu.open_gpu_backend).
    """
    if options.size_bytes < 1 << 20 or options.repeats < 1 or options.iters < 1:
        raise ProbeError("--size is at least 1M and --repeats and --iters at least 1")
    torch, why_not = (torch, "") if torch is not None else _import_torch()
    if torch is not None and torch.cuda.is_available() and torch.cuda.device_count() > 0:
        gpus = [_measure(torch, i, options) for i in range(torch.cuda.device_count())]
        return _result(gpus, "torch", "device-to-device copy, CUDA events, best of repeats")
    why_not = why_not or "torch.cuda.is_available() is False"
    backend = backend if backend is not None else open_gpu_backend()
    try:
        figures = [backend.info(i) for i in range(backend.device_count())]
    finally:
        backend.close()
    gpus = [
        {"index": g.index, "name": g.name, "gbps": g.memory_bandwidth_gbps}
        for g in figures
        if g.memory_bandwidth_gbps
    ]
    if not gpus:
        nvml = getattr(backend, "reason", None) or "NVML reports no memory clock or bus width"
        raise ProbeError(NEITHER.format(torch=why_not, nvml=nvml))
    return _result(
        gpus,
        "nvml",
        f"NVML's theoretical peak (max memory clock x bus width); not measured: {why_not}. "
        "a measured copy reaches less",
    )


def _import_torch() -> tuple[Any, str]:
    try:
        import torch  # noqa: PLC0415 - optional: only the measured path needs it
    except ImportError:
        return None, "torch is not installed"
    return torch, ""


def _measure(torch: Any, index: int, options: MembwOptions) -> dict[str, Any]:
    """One GPU's copy rate: GB/s of bytes read plus written, best of the repeats."""
    device = f"cuda:{index}"
    with torch.cuda.device(index):
        src = torch.empty(options.size_bytes, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        for _ in range(options.warmup):
            dst.copy_(src)
        samples = []
        for _ in range(options.repeats):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(options.iters):
                dst.copy_(src)
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
            samples.append(2 * options.size_bytes * options.iters / seconds / 1e9)
        del src, dst
        torch.cuda.empty_cache()
    return {
        "index": index,
        "name": str(torch.cuda.get_device_name(index)),
        "gbps": max(samples),
        "samples": samples,
    }


def _result(gpus: list[dict[str, Any]], source: str, method: str) -> dict[str, Any]:
    return {
        "memory_bandwidth_gbps": min(float(g["gbps"]) for g in gpus),
        "gpus": gpus,
        "source": source,
        "method": method,
    }
