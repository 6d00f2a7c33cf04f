"""tuner.launcher.gpu_lock: one tuner per GPU on a host, refused with the holder and the fix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import FakeGpuBackend
from tuner.launcher.gpu_lock import GpuLock, GpusBusyError
from tuner.telemetry.gpu import NullGpuBackend


def test_a_second_lock_on_the_same_gpu_is_refused_with_the_holder_and_the_fix(
    tmp_path: Path,
) -> None:
    gpu = FakeGpuBackend()
    with GpuLock(gpu, [0], study="first", lock_dir=tmp_path):
        with pytest.raises(GpusBusyError) as refused:
            GpuLock(gpu, None, study="second", lock_dir=tmp_path).acquire()
        message = str(refused.value)
        assert "GPU 0 (GPU-fake-0)" in message
        assert f"pid {os.getpid()}, study first" in message
        assert "CUDA_VISIBLE_DEVICES" in message
        # Other GPUs are free, and the refused lock took none of them.
        with GpuLock(gpu, [1], study="third", lock_dir=tmp_path):
            pass
    with GpuLock(gpu, [0, 1], study="after", lock_dir=tmp_path):
        pass  # released at the end of the first


def test_a_lock_of_a_killed_tuner_is_free_at_once(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(tmp_path / 'GPU-fake-0.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        gpu = FakeGpuBackend()
        with pytest.raises(GpusBusyError, match="holder unknown"):
            GpuLock(gpu, [0], study="s", lock_dir=tmp_path).acquire()
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        with GpuLock(gpu, [0], study="s", lock_dir=tmp_path):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_without_a_gpu_nothing_is_locked(tmp_path: Path) -> None:
    lock_dir = tmp_path / "locks"
    with (
        GpuLock(NullGpuBackend("no GPU"), None, study="a", lock_dir=lock_dir),
        GpuLock(NullGpuBackend("no GPU"), None, study="b", lock_dir=lock_dir),
    ):
        pass
    assert not lock_dir.exists()


def test_the_lock_folder_is_shared_by_every_user_of_the_host(tmp_path: Path) -> None:
    lock_dir = tmp_path / "locks"
    with GpuLock(FakeGpuBackend(), [0], study="s", lock_dir=lock_dir):
        assert lock_dir.stat().st_mode & 0o7777 == 0o1777


def test_tuner_run_refuses_before_any_launch_while_another_holds_its_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    from tests.integration.sweep_helpers import write_space
    from tuner.storage import Store
    from tuner.study.run.request import RunRequest
    from tuner.views import console as console_module

    gpu = FakeGpuBackend()
    monkeypatch.setattr(console_module, "open_gpu_backend", lambda: gpu)
    monkeypatch.setenv("TUNER_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    space = write_space(tmp_path)
    storage = f"sqlite:///{tmp_path}/experiments.db"
    with (
        GpuLock(gpu, [1], study="other", lock_dir=tmp_path / "locks"),
        pytest.raises(GpusBusyError, match="GPU 1"),
    ):
        request = RunRequest(storage, 2, runs_dir=tmp_path / "runs")
        console_module.run_with_console(space, request, Console(file=io.StringIO()))
    assert Store(storage).launches("fast") == []  # refused before the first launch
    assert gpu.closed
