#!/usr/bin/env python3
"""Check tuner's NVML telemetry on a real NVIDIA GPU with PyTorch (no vLLM), in under a minute.

Prints the inventory, samples the GPU at 10 Hz while a matmul loop keeps cuda:0 busy
for ~10 s, prints the summary, and checks the facts the launcher's "are the GPUs
free" logic relies on: this process is listed as a compute process while torch holds
the GPU, and the used memory returns near its baseline after ``del`` and
``torch.cuda.empty_cache()``. Each check prints PASS, WARN or FAIL; the exit status
is 1 when any FAIL, else 0. Without torch, CUDA or NVML it prints why, "skipped",
and exits 0.

    python benchmarks/nvml_check.py            # from the repository root

Needs only nvidia-ml-py, psutil and torch: it imports tuner.telemetry.gpu and tuner.telemetry
and nothing else of tuner, and runs from a checkout without installing it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUSY_S = 10.0
SAMPLE_HZ = 10.0
BALLAST_GIB = 2.0  # allocated on top of the matmul operands so the memory swing is clear
RETURN_SLACK_MIB = 256.0  # "near baseline": allocator and NVML rounding
MEMORY_WAIT_S = 5.0  # NVML's view of memory lags the allocator a little
MIB = 1024 * 1024

failures: list[str] = []


def report(status: str, what: str, detail: str = "") -> None:
    print(f"{status:4}  {what}" + (f": {detail}" if detail else ""), flush=True)
    if status == "FAIL":
        failures.append(what)


def import_tuner() -> tuple[Any, Any, Any, Any]:
    """tuner.telemetry.gpu and the telemetry modules, with or without tuner's other dependencies.

    If importing the package fails (tuner/__init__.py pulls in something this machine
    lacks), a bare package object pointing at the checkout stands in for it, so only
    the modules used here are loaded.
    """
    sys.path.insert(0, str(ROOT))
    try:
        import tuner  # noqa: F401
    except ImportError:
        for name in [n for n in sys.modules if n == "tuner" or n.startswith("tuner.")]:
            del sys.modules[name]
        package = types.ModuleType("tuner")
        package.__path__ = [str(ROOT / "tuner")]
        sys.modules["tuner"] = package
    from tuner.telemetry import gpu, gpu_sampler, inventory
    from tuner.telemetry import gpu_summary as summary

    return gpu, gpu_sampler, inventory, summary


def in_container() -> bool:
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    try:
        cgroup = Path("/proc/1/cgroup").read_text()
    except OSError:
        return False
    return any(word in cgroup for word in ("docker", "kubepods", "containerd", "lxc"))


def nvml_index_of_cuda0(torch: Any, backend: Any) -> int:
    """cuda:0's NVML index, matched by UUID (CUDA_VISIBLE_DEVICES and CUDA's own device
    order can both make cuda:0 a different GPU than NVML index 0)."""
    uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
    if uuid is not None:
        wanted = str(uuid).lower().removeprefix("gpu-")
        for index in range(backend.device_count()):
            if backend.info(index).uuid.lower().removeprefix("gpu-") == wanted:
                return index
        print(f"note: cuda:0 UUID {uuid} not among NVML's GPUs; assuming NVML index 0")
    return 0


def wait_for_memory(backend: Any, index: int, ok: Any) -> float:
    """Poll used memory until ``ok(value)`` or the timeout (NVML lags the allocator a bit)."""
    deadline = time.monotonic() + MEMORY_WAIT_S
    value = backend.memory_used_mib(index)
    while not ok(value) and time.monotonic() < deadline:
        time.sleep(0.05)
        value = backend.memory_used_mib(index)
    return value


def fmt(value: float | None, unit: str = "", digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{unit}"


def main() -> int:
    started = time.monotonic()
    try:
        gpu, gpu_sampler, inventory, summary = import_tuner()
    except ImportError as exc:
        print(f"skipped: {exc.name or exc} is not installed (needs nvidia-ml-py, psutil, torch)")
        return 0
    backend = gpu.open_gpu_backend()
    print("== inventory")
    for line in inventory.inventory_lines(inventory.collect_inventory(backend)):
        print(line)
    if not backend.available:
        print(f"skipped: {backend.reason}")
        return 0
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("skipped: torch.cuda.is_available() is False")
        return 0

    try:
        return run_checks(torch, backend, gpu_sampler, summary, started)
    finally:
        backend.close()


def run_checks(torch: Any, backend: Any, gpu_sampler: Any, summary: Any, started: float) -> int:
    index = nvml_index_of_cuda0(torch, backend)
    device = torch.device("cuda:0")
    print(f"\n== cuda:0 is NVML GPU {index}: {backend.info(index).name}")

    # Sample-call cost, so the sweep's interval can be judged for an 8-GPU box.
    t0 = time.perf_counter()
    for _ in range(20):
        backend.sample(index)
    per_sample_ms = (time.perf_counter() - t0) / 20 * 1000
    report(
        "PASS" if per_sample_ms < 100 else "WARN", "one GPU sample costs", f"{per_sample_ms:.2f} ms"
    )

    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    # Create the CUDA context and load cuBLAS (a small matmul) before the baseline: both
    # stay for the process's life, and are not what "memory comes back" is about.
    w = torch.ones(1024, 1024, device=device, dtype=dtype)
    (w @ w).sum().item()
    del w
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    baseline = backend.memory_used_mib(index)
    print(f"baseline used memory with a CUDA context: {baseline:.0f} MiB")

    # Compute processes while torch holds the GPU.
    pids = {p.pid for p in backend.compute_processes(index)}
    if os.getpid() in pids:
        report("PASS", "own pid listed as a compute process", f"pid {os.getpid()}")
    elif in_container():
        report(
            "WARN",
            "own pid not listed (container: NVML shows host pids)",
            f"listed {sorted(pids)}; the launcher must judge idleness by memory",
        )
    else:
        report(
            "FAIL",
            "own pid listed as a compute process",
            f"pid {os.getpid()}, listed {sorted(pids)}",
        )

    n = 8192
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    ballast = torch.empty(int(BALLAST_GIB * 1024**3), dtype=torch.uint8, device=device)
    torch.cuda.synchronize()
    expected_mib = BALLAST_GIB * 1024 + 2 * n * n * 2 / MIB
    held = wait_for_memory(backend, index, lambda v: v >= baseline + 0.9 * expected_mib)
    status = "PASS" if held >= baseline + 0.9 * expected_mib else "FAIL"
    report(status, "NVML sees torch's allocation", f"{held:.0f} MiB (+{held - baseline:.0f})")

    print(f"\n== {BUSY_S:.0f} s of {dtype} matmuls on cuda:0, sampling at {SAMPLE_HZ:.0f} Hz")
    sampler = gpu_sampler.GpuSampler(backend, [index], interval_s=1.0 / SAMPLE_HZ)
    sampler.start()
    t_start = time.time()
    iterations = 0
    while time.time() - t_start < BUSY_S:
        for _ in range(10):
            c = a @ b
        torch.cuda.synchronize()
        iterations += 10
    duration = time.time() - t_start
    samples = sampler.stop()
    tflops = iterations * 2 * n**3 / duration / 1e12
    print(f"{iterations} matmuls in {duration:.1f} s ({tflops:.0f} TFLOP/s)")

    s = summary.summarize_gpu(samples, output_tokens=iterations, duration_s=duration)
    # The same samples without the counter: energy from integrating power alone.
    without_counter = [dataclasses.replace(x, energy_mj=None) for x in samples]
    by_power = summary.summarize_gpu(without_counter, output_tokens=iterations, duration_s=duration)
    g = s.per_gpu[0] if s.per_gpu else None
    print(f"samples: {len(samples)}, sampler errors: {sampler.errors} {sampler.last_error or ''}")
    print(f"util mean: {fmt(s.util_mean_pct, ' %')}")
    print(f"power mean / max: {fmt(s.power_mean_w, ' W')} / {fmt(s.power_max_w, ' W')}")
    print(
        f"energy: {fmt(s.energy_j, ' J')} ({s.energy_source}); from power alone: "
        f"{fmt(by_power.energy_j, ' J')}; per matmul: {fmt(s.j_per_token, ' J', 3)}"
    )
    print(f"temperature max: {fmt(s.temperature_max_c, ' C')}")
    print(
        f"clocks SM / mem mean: {fmt(g.sm_clock_mean_mhz if g else None, ' MHz', 0)} / "
        f"{fmt(g.mem_clock_mean_mhz if g else None, ' MHz', 0)}"
    )
    print(
        f"PCIe TX / RX mean: {fmt(s.pcie_tx_mean_kbps, ' KB/s', 0)} / "
        f"{fmt(s.pcie_rx_mean_kbps, ' KB/s', 0)}"
    )
    print(f"memory max: {fmt(s.memory_max_mib, ' MiB', 0)}")
    print(f"throttle reasons: {sorted(s.throttle_reasons) or 'none'}")

    expected = duration * SAMPLE_HZ
    report(
        "PASS" if len(samples) >= 0.6 * expected else "FAIL",
        "sampling rate",
        f"{len(samples)} samples in {duration:.1f} s (expected ~{expected:.0f})",
    )
    report("PASS" if sampler.errors == 0 else "FAIL", "no sampler errors")
    util_ok = s.util_mean_pct is not None and s.util_mean_pct >= 50
    report(
        "PASS" if util_ok else "FAIL",
        "GPU busy while the loop runs",
        f"util mean {fmt(s.util_mean_pct, ' %')}",
    )
    report("PASS" if s.power_max_w else "FAIL", "power reported", fmt(s.power_max_w, " W"))
    report("PASS" if s.energy_j else "FAIL", "energy over the loop", fmt(s.energy_j, " J"))
    if s.energy_source == "counter" and s.energy_j and by_power.energy_j:
        ratio = s.energy_j / by_power.energy_j
        report(
            "PASS" if 0.75 <= ratio <= 1.33 else "WARN",
            "energy counter vs power integral",
            f"ratio {ratio:.2f}",
        )
    else:
        report("WARN", "energy counter", "not reported: J/token falls back to integrating power")
    report("PASS" if s.temperature_max_c else "FAIL", "temperature reported")
    report("PASS" if g and g.sm_clock_mean_mhz else "FAIL", "SM clock reported")
    report("PASS" if s.pcie_tx_mean_kbps is not None else "WARN", "PCIe throughput reported")
    unknown = [r for r in s.throttle_reasons if r.startswith("unknown")]
    report(
        "PASS" if not unknown else "WARN",
        "throttle reasons decoded",
        str(sorted(s.throttle_reasons)),
    )
    mem_ok = s.memory_max_mib is not None and s.memory_max_mib >= baseline + 0.9 * expected_mib
    report(
        "PASS" if mem_ok else "FAIL",
        "sampled memory shows the allocation",
        fmt(s.memory_max_mib, " MiB", 0),
    )

    del a, b, c, ballast
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    after = wait_for_memory(backend, index, lambda v: v <= baseline + RETURN_SLACK_MIB)
    if after <= baseline + RETURN_SLACK_MIB:
        status = "PASS"
    elif after < baseline + 0.5 * expected_mib:
        status = "WARN"  # most came back; the rest is kernels or workspaces loaded on the way
    else:
        status = "FAIL"
    report(
        status,
        "memory back near baseline after del + empty_cache",
        f"{after:.0f} MiB (baseline {baseline:.0f}, +{after - baseline:.0f})",
    )

    print(
        f"\n{'FAILED: ' + ', '.join(failures) if failures else 'all checks passed'}"
        f" ({time.monotonic() - started:.0f} s)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
