"""One tuner per GPU: the sweep runs while this host's GPUs of its server are locked.

docs/launcher.md ("One tuner per GPU"): before the study is opened or anything is
launched, every GPU the space's servers will use is locked (launcher/gpu_lock.GpuLock);
a second `tuner run` that needs one of them is refused at once (GpusBusyError, naming
the holder). `tuner run` (tuner/views/console.py) calls ``run_locked_sweep``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from tuner.events import SweepObserver
from tuner.launcher.gpu_lock import GpuLock
from tuner.space.spec import Space
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import SweepOutcome, run_sweep
from tuner.telemetry.gpu import GpuBackend
from tuner.trial.runner import server_gpus


def run_locked_sweep(
    space: Space,
    request: RunRequest,
    observer: SweepObserver,
    gpu: GpuBackend,
    display: AbstractContextManager[object] | None = None,
) -> SweepOutcome:
    """``run_sweep`` with the server's GPUs locked for the whole run; ``gpu`` is closed.

    ``display`` (the live view) is entered once the GPUs are held, so a refused run shows
    none, and left before they are released.
    """
    # One tuner per GPU on this host: a second run on the same GPUs is refused here.
    devices = server_gpus(space.spec.server.env, gpu)
    try:
        with GpuLock(gpu, devices, study=space.study_name), display or nullcontext():
            return run_sweep(space, request, Seams(observer=observer, gpu=gpu))
    finally:
        gpu.close()
