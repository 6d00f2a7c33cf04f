"""The background samplers' mechanics: start/stop, bounds, errors, marks and windows."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pytest

from tests.fakes import FakeGpu, FakeGpuBackend
from tuner.telemetry import GpuSampler
from tuner.telemetry.gpu import GpuSample, NullGpuBackend
from tuner.telemetry.sampler import PeriodicSampler

DEADLINE_S = 10.0


def wait_until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.005)


def test_gpu_sampler_samples_every_gpu_until_stopped() -> None:
    sampler = GpuSampler(
        FakeGpuBackend([FakeGpu(util_pct=90.0) for _ in range(3)]), interval_s=0.01
    )
    assert sampler.indices == (0, 1, 2)
    sampler.start()
    assert sampler.running
    wait_until(lambda: len(sampler.records()) >= 12, "four ticks")
    samples = sampler.stop()
    assert not sampler.running
    assert {s.index for s in samples} == {0, 1, 2}
    assert all(s.util_pct == 90.0 for s in samples)
    assert len(samples) % 3 == 0  # whole ticks, including the ones at start and stop
    assert sampler.stop() == samples  # stopping twice is harmless
    assert not any(t.name == GpuSampler.thread_name for t in threading.enumerate())


def test_gpu_sampler_takes_a_reading_at_start_and_at_stop() -> None:
    sampler = GpuSampler(FakeGpuBackend(), interval_s=60.0)
    sampler.start()
    assert len(sampler.records()) == 2  # two GPUs, read at start
    assert len(sampler.stop()) == 4  # and again at stop, without waiting a minute


def test_gpu_sampler_on_a_subset() -> None:
    with GpuSampler(FakeGpuBackend(), [1], interval_s=60.0) as sampler:
        pass
    assert {s.index for s in sampler.records()} == {1}


def test_gpu_sampler_without_gpus_does_nothing() -> None:
    sampler = GpuSampler(NullGpuBackend("no NVIDIA GPU: GPU telemetry off"), interval_s=0.01)
    assert sampler.indices == ()
    sampler.start()
    assert not sampler.running
    assert sampler.stop() == []


class FlakyBackend(FakeGpuBackend):
    """GPU 1 cannot be read at all."""

    def sample(self, index: int) -> GpuSample:
        if index == 1:
            raise RuntimeError("GPU has fallen off the bus")
        return super().sample(index)


def test_one_failing_gpu_keeps_the_others() -> None:
    sampler = GpuSampler(FlakyBackend(), interval_s=0.01).start()
    wait_until(lambda: len(sampler.records()) >= 3, "three readings")
    samples = sampler.stop()
    assert {s.index for s in samples} == {0}
    assert sampler.errors >= 3
    assert sampler.last_error == "RuntimeError: GPU has fallen off the bus"


def test_memory_is_bounded() -> None:
    sampler = GpuSampler(FakeGpuBackend(), interval_s=0.005, max_samples=5).start()
    wait_until(lambda: sampler.dropped > 10, "records to be dropped")
    assert len(sampler.stop()) == 5


@dataclass(frozen=True)
class Reading:
    time_s: float
    n: int


class Counter(PeriodicSampler[Reading]):
    """Reads a counter; tests feed records by hand for exact times."""

    def __init__(self) -> None:
        super().__init__(interval_s=0.01)
        self.n = 0

    def _read(self) -> Iterable[Reading]:
        self.n += 1
        return [Reading(time.time(), self.n)]


def test_window_slices_by_wall_clock() -> None:
    sampler = Counter()
    sampler._append([Reading(float(t), t) for t in range(10)])
    assert [r.n for r in sampler.window(3.0, 5.0)] == [3, 4, 5]
    assert sampler.window(20.0, 30.0) == []
    assert [r.n for r in sampler.samples_since(7.0)] == [7, 8, 9]


def test_by_mark_groups_readings_after_each_mark() -> None:
    sampler = Counter()
    sampler._marks = [("c1", 2.0), ("c8", 5.0)]
    sampler._append([Reading(float(t), t) for t in range(8)])
    groups = sampler.by_mark()
    assert [r.n for r in groups[""]] == [0, 1]
    assert [r.n for r in groups["c1"]] == [2, 3, 4]
    assert [r.n for r in groups["c8"]] == [5, 6, 7]


def test_marks_split_a_live_run() -> None:
    sampler = Counter()
    sampler.mark("level-1")
    sampler.start()
    wait_until(lambda: len(sampler.records()) >= 3, "level 1 readings")
    sampler.mark("level-2")
    n = len(sampler.records())
    wait_until(lambda: len(sampler.records()) >= n + 3, "level 2 readings")
    sampler.stop()
    groups = sampler.by_mark()
    assert set(groups) == {"level-1", "level-2"}
    assert max(r.n for r in groups["level-1"]) < min(r.n for r in groups["level-2"])


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError):
        GpuSampler(FakeGpuBackend(), interval_s=0)


def test_a_signal_during_start_leaves_stop_harmless(monkeypatch: pytest.MonkeyPatch) -> None:
    # SIGTERM as Terminated (a KeyboardInterrupt) between the thread's creation and its
    # start: the trial's `finally` stops the sampler, and that stop must not replace the
    # signal with "cannot join thread before it is started" (CI, stop 29).
    def interrupted(self: threading.Thread) -> None:
        raise KeyboardInterrupt

    sampler = GpuSampler(FakeGpuBackend(), interval_s=60.0)
    monkeypatch.setattr(threading.Thread, "start", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sampler.start()
    monkeypatch.undo()
    samples = sampler.stop()
    assert len(samples) == 2  # the reading at start (two GPUs) is kept
    assert not sampler.running
