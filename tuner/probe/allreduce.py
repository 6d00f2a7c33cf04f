"""`tuner probe allreduce`: time torch.distributed all-reduces across this machine's devices.

One process per rank, started with multiprocessing's ``spawn`` and meeting at a
127.0.0.1 rendezvous: NCCL on the visible GPUs (one rank per GPU), or gloo on CPU
processes where there is no GPU (or with ``--backend gloo``). Each rank inherits tuner's
environment, which for a trial is the trial's own: its NCCL variables act on this probe
as they would on the server. For every size: a few warm-up all-reduces, then
``repeats`` timed batches of ``iters`` all-reduces; a sample is the slowest rank's time
per all-reduce, in microseconds. torch is optional: without it ProbeError says what to
install. One rank (one GPU) moves nothing between devices: the figures are then a
launch's overhead, and the JSON says so.
"""

from __future__ import annotations

import math
import multiprocessing
import queue
import socket
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from tuner.probe.run import ProbeError

Backend = Literal["auto", "nccl", "gloo"]
GLOO_DEFAULT_WORLD = 2
TORCH_MISSING = (
    "torch is not installed in this Python, so `tuner probe allreduce` cannot run: "
    "pip install torch (its CPU build runs the gloo probe; vLLM installs it), or probe "
    "with nccl-tests: tuner probe nccl-tests -- all_reduce_perf -b 8 -e 128M -f 2 -g 8"
)


@dataclass(frozen=True)
class AllreduceOptions:
    """What to time, and where."""

    sizes: tuple[int, ...]
    repeats: int = 5
    iters: int = 20
    warmup: int = 5
    backend: Backend = "auto"
    world_size: int | None = None
    timeout_s: float = 300.0


def import_torch() -> Any:
    """The torch module, or ProbeError with what to install."""
    try:
        import torch  # noqa: PLC0415 - optional: only this command needs it
        import torch.distributed  # noqa: PLC0415, F401
    except ImportError:
        raise ProbeError(TORCH_MISSING) from None
    return torch


def resolve(options: AllreduceOptions, torch: Any) -> tuple[str, int]:
    """The backend and world size to use; ProbeError when the request cannot be met."""
    dist = torch.distributed
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    backend = options.backend
    if backend == "auto":
        backend = "nccl" if gpus > 0 and dist.is_nccl_available() else "gloo"
    if backend == "nccl":
        if gpus == 0 or not dist.is_nccl_available():
            raise ProbeError(
                "--backend nccl needs a CUDA build of torch and a visible GPU; this torch "
                f"sees {gpus} GPU(s) (NCCL available: {dist.is_nccl_available()}); use "
                "--backend gloo to time CPU processes"
            )
        world = options.world_size or gpus
        if world > gpus:
            raise ProbeError(
                f"--world-size {world} needs {world} GPUs, one per rank; {gpus} are visible "
                "(CUDA_VISIBLE_DEVICES)"
            )
        return backend, world
    if not dist.is_gloo_available():
        raise ProbeError("this torch was built without gloo: use --backend nccl")
    return "gloo", options.world_size or GLOO_DEFAULT_WORLD


def run_allreduce(options: AllreduceOptions) -> dict[str, Any]:
    """Time the all-reduces; the probe's JSON object (docs/probe.md)."""
    if not options.sizes or min(options.sizes) < 1:
        raise ProbeError("--sizes: give positive byte sizes, e.g. 14336,114688")
    if options.repeats < 1 or options.iters < 1:
        raise ProbeError("--repeats and --iters must be at least 1")
    torch = import_torch()
    backend, world = resolve(options, torch)
    if world < 1:
        raise ProbeError("--world-size must be at least 1")
    ctx = multiprocessing.get_context("spawn")
    results: Any = ctx.Queue()
    port = _free_port()
    procs = [
        ctx.Process(
            target=_rank_main,
            args=(rank, world, backend, port, options, results),
            name=f"tuner-probe-rank{rank}",
        )
        for rank in range(world)
    ]
    for proc in procs:
        proc.start()
    try:
        outcome = _collect(results, procs, options.timeout_s)
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join()
    samples: dict[int, list[float]] = outcome["samples"]
    out: dict[str, Any] = {
        "sizes": {str(s): statistics.median(v) for s, v in sorted(samples.items())},
        "samples": {str(s): v for s, v in sorted(samples.items())},
        "backend": backend,
        "world_size": world,
        "dtype": outcome["dtype"],
        "iters": options.iters,
        "devices": outcome["devices"],
        "torch": str(torch.__version__),
    }
    if outcome.get("nccl_version"):
        out["nccl_version"] = outcome["nccl_version"]
    if world == 1:
        out["note"] = (
            "one rank: nothing crosses between devices, so these times are the overhead of "
            "a launch, not communication; NCCL settings cannot show their effect"
        )
    return out


def _collect(results: Any, procs: Sequence[Any], timeout_s: float) -> dict[str, Any]:
    """Rank 0's result, or ProbeError with the first rank's error or a timeout."""
    deadline = time.monotonic() + timeout_s
    message: tuple[str, Any] | None = None
    while message is None:
        try:
            message = results.get(timeout=0.2)
        except queue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                message = _last_words(results, procs.index(dead[0]), dead[0].exitcode)
            elif time.monotonic() > deadline:
                message = ("error", f"did not finish within {timeout_s:g} s")
    kind, payload = message
    if kind != "ok":
        raise ProbeError(f"the all-reduce probe failed: {payload}")
    result: dict[str, Any] = payload
    return result


def _last_words(results: Any, rank: int, code: int) -> tuple[str, Any]:
    """A failed rank puts its reason on the queue just before it exits."""
    try:
        message: tuple[str, Any] = results.get(timeout=2)
    except queue.Empty:
        return ("error", f"rank {rank} exited with code {code} and no message")
    return message


def _rank_main(
    rank: int, world: int, backend: str, port: int, options: AllreduceOptions, results: Any
) -> None:
    """One rank: join the group, time every size, report (rank 0) or fail loudly."""
    import torch  # noqa: PLC0415
    import torch.distributed as dist  # noqa: PLC0415

    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
            device = torch.device("cuda", rank)
            dtype = torch.bfloat16
        else:
            torch.set_num_threads(1)  # one core per rank: ranks must not fight for cores
            device = torch.device("cpu")
            dtype = torch.float32
        dist.init_process_group(
            backend,
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=max(30.0, options.timeout_s)),
        )
        samples = {size: _time_size(size, options, device, dtype) for size in options.sizes}
        if rank == 0:
            results.put(
                (
                    "ok",
                    {
                        "samples": samples,
                        "dtype": str(dtype).removeprefix("torch."),
                        "devices": _devices(torch, backend, world),
                        "nccl_version": _nccl_version(torch) if backend == "nccl" else None,
                    },
                )
            )
        dist.destroy_process_group()
    except Exception as exc:  # the parent shows the first rank's reason
        results.put(("error", f"rank {rank}: {exc!r}"))
        raise SystemExit(1) from None


def _time_size(size: int, options: AllreduceOptions, device: Any, dtype: Any) -> list[float]:
    import torch  # noqa: PLC0415
    import torch.distributed as dist  # noqa: PLC0415

    elements = max(1, math.ceil(size / torch.tensor([], dtype=dtype).element_size()))
    # Zeros stay zeros: a sum that grew every iteration would end in inf.
    tensor = torch.zeros(elements, dtype=dtype, device=device)
    clock = torch.zeros(1, dtype=torch.float64, device=device)
    for _ in range(options.warmup):
        dist.all_reduce(tensor)
    out = []
    for _ in range(options.repeats):
        dist.all_reduce(clock)  # a barrier on the probe's own device
        _sync(device)
        start = time.perf_counter()
        for _ in range(options.iters):
            dist.all_reduce(tensor)
        _sync(device)
        clock.fill_(time.perf_counter() - start)
        dist.all_reduce(clock, op=dist.ReduceOp.MAX)  # the slowest rank's time
        out.append(float(clock.item()) / options.iters * 1e6)
    return out


def _sync(device: Any) -> None:
    import torch  # noqa: PLC0415

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _devices(torch: Any, backend: str, world: int) -> list[str]:
    if backend != "nccl":
        return [f"cpu process {r}" for r in range(world)]
    return [str(torch.cuda.get_device_name(r)) for r in range(world)]


def _nccl_version(torch: Any) -> str | None:
    try:
        version = torch.cuda.nccl.version()
    except Exception:  # an odd build: the version is a nicety
        return None
    if isinstance(version, tuple):
        return ".".join(str(v) for v in version)
    return str(version)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def parse_sizes(text: str) -> tuple[int, ...]:
    """``"14336,114688"`` -> (14336, 114688); suffixes K, M, G (powers of 1024) allowed."""
    sizes = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        scale = 1
        if part[-1].upper() in "KMG":
            scale = 1024 ** ("KMG".index(part[-1].upper()) + 1)
            part = part[:-1]
        try:
            value = int(part) * scale
        except ValueError:
            raise ProbeError(f"--sizes: {part!r} is not a byte size (e.g. 14336 or 128K)") from None
        if value < 1:
            raise ProbeError(f"--sizes: {value} is not a positive byte size")
        sizes.append(value)
    if not sizes:
        raise ProbeError("--sizes: give at least one byte size, e.g. 14336,114688")
    return tuple(sizes)
