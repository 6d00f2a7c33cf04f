"""Stopping one started launch: its process tree, its shared memory, its GPUs' memory.

``Teardown.run`` is the stop sequence of ``ServerProcess.stop`` once the watcher is
stopped: terminate the tree (``tree.py``), remove the shared memory it left, wait for
the GPUs' memory to come back (killing processes of this launch the tree missed that
still hold them), then reap the leader. Every step that can fail says so in the
``StopReport`` instead of raising, because a stop runs in cleanup paths (``finally``,
``except KeyboardInterrupt``, ``atexit``); an interruption is handed back to re-raise.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass

from tuner.launcher.gpu_hygiene import check_gpu_memory_back, device_file_holders
from tuner.launcher.identity import MARKER_ENV
from tuner.launcher.procfs import (
    describe,
    environ_has,
    is_alive,
    read_stat,
    send_signal,
    zombie_note,
)
from tuner.launcher.shm import ShmTracker
from tuner.launcher.spec import LaunchSpec
from tuner.launcher.tree import ProcessTree, TerminateResult
from tuner.telemetry.gpu import GpuBackend


@dataclass(frozen=True)
class StopReport:
    """How a stop went. ``clean`` means ``problems`` is empty: every process exited on
    SIGTERM within the stop timeout, none survived, no shared memory was left behind
    and the GPUs' memory came back (or was not checked: ``gpu_memory_ok`` None).

    ``zombies`` had exited but their parent had not reaped them yet when the
    stop ended: not running, not survivors, no problem; ``notes`` says so for each."""

    clean: bool
    exit_code: int | None
    sigkilled: tuple[int, ...]
    survivors: tuple[int, ...]
    shm_removed: tuple[str, ...]
    gpu_memory_ok: bool | None
    seconds: float
    problems: tuple[str, ...]
    zombies: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line for a console or a log."""
        head = f"stopped in {self.seconds:.1f} s"
        if self.exit_code is not None:
            head += f" (exit code {self.exit_code})"
        return head + ": " + "; ".join((self.problems or ("clean",)) + self.notes)


NOTHING_TO_STOP = StopReport(
    clean=True, exit_code=None, sigkilled=(), survivors=(), shm_removed=(),
    gpu_memory_ok=None, seconds=0.0, problems=(),
)  # fmt: skip
"""The report of a stop before any start."""


def peek_exit_code(popen: subprocess.Popen[bytes]) -> int | None:
    """The leader's exit status (negative: killed by that signal); None while it runs.

    Read with WNOWAIT: the leader stays a zombie until the stop reaps it, so its pid
    (which is also its session and group id) cannot be recycled meanwhile.
    """
    if popen.returncode is not None:
        return popen.returncode
    try:
        info = os.waitid(os.P_PID, popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return popen.poll()
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


class Teardown:
    """One stop of a started launch; ``run`` once."""

    def __init__(
        self,
        spec: LaunchSpec,
        *,
        popen: subprocess.Popen[bytes],
        tree: ProcessTree,
        shm: ShmTracker,
        gpu: GpuBackend | None,
        gpu_baseline: dict[int, float],
        marker: str,
    ) -> None:
        self.spec = spec
        self.popen = popen
        self.tree = tree
        self.shm = shm
        self.gpu = gpu
        self.gpu_baseline = gpu_baseline
        self.marker = marker
        self._extra_killed: list[int] = []

    def run(
        self, *, started: float, pending: BaseException | None
    ) -> tuple[StopReport, BaseException | None]:
        """Stop everything; the report, and the interruption (if any) to re-raise after.

        ``pending`` is an interruption that came before (Ctrl-C while the watcher
        stopped): then nothing waits gracefully, everything is killed at once.
        """
        spec, tree = self.spec, self.tree
        timeout_s = 0.0 if pending is not None else spec.stop_timeout_s
        result = tree.terminate(timeout_s=timeout_s, kill_wait_s=spec.kill_wait_s)
        pending = pending or result.interrupted
        problems = self._process_problems(result, interrupted=pending is not None)
        try:
            removed, shm_problems = self.shm.cleanup()
        except Exception as exc:  # noqa: BLE001
            removed, shm_problems = [], [f"could not clean /dev/shm: {exc}"]
        if removed:
            problems.append(
                f"removed {len(removed)} shared-memory file(s) the server left behind: "
                + ", ".join(removed)
            )
        problems.extend(shm_problems)
        gpu_ok: bool | None = None
        if pending is None:
            try:
                gpu_ok, gpu_problems = check_gpu_memory_back(
                    self.gpu,
                    self.gpu_baseline,
                    tolerance_mib=spec.gpu_memory_tolerance_mib,
                    timeout_s=spec.gpu_release_timeout_s,
                    second_pass=self._second_pass,
                )
            except Exception as exc:  # noqa: BLE001 - a stop reports, it does not raise
                gpu_ok, gpu_problems = False, [f"the GPU memory check failed: {exc}"]
            except BaseException as exc:  # Ctrl-C here: report, re-raise after cleanup
                pending = exc
                gpu_problems = ["the GPU memory check was interrupted"]
            problems.extend(gpu_problems)
        exit_code = self._reap_leader()
        tree.session = None  # the leader's pid is released: its number is no longer ours
        zombies = tree.zombies()  # after reaping the leader: tuner's own zombie is gone
        report = StopReport(
            clean=not problems,
            exit_code=exit_code,
            sigkilled=tuple(result.sigkilled) + tuple(self._extra_killed),
            survivors=result.survivors,
            shm_removed=tuple(removed),
            gpu_memory_ok=gpu_ok,
            seconds=time.monotonic() - started,
            problems=tuple(problems),
            zombies=tuple(sorted(zombies)),
            notes=tuple(zombie_note(zombies[pid]) for pid in sorted(zombies)),
        )
        return report, pending

    def _process_problems(self, result: TerminateResult, *, interrupted: bool) -> list[str]:
        spec = self.spec
        problems: list[str] = []
        if result.sigkilled:
            names = ", ".join(result.names.get(p, f"pid {p}") for p in result.sigkilled)
            why = (
                "the stop was interrupted, so they were killed at once"
                if interrupted
                else f"they were still running {spec.stop_timeout_s:g} s after SIGTERM"
            )
            count = len(result.sigkilled)
            problems.append(f"{count} process(es) killed with SIGKILL ({why}): {names}")
        if result.survivors:
            names = ", ".join(result.names.get(p, f"pid {p}") for p in result.survivors)
            problems.append(
                f"{len(result.survivors)} process(es) still exist {spec.kill_wait_s:g} s "
                f"after SIGKILL: {names}"
            )
        return problems

    def _reap_leader(self) -> int | None:
        popen = self.popen
        if peek_exit_code(popen) is None:
            return None  # survived SIGKILL (stuck in the kernel): do not block on it
        try:
            popen.wait(timeout=self.spec.kill_wait_s)
        except subprocess.TimeoutExpired:
            return None
        return popen.returncode

    def _second_pass(self, gpus: list[int]) -> list[str]:
        """Kill processes of this launch still holding the GPUs but missed by the tree
        (from NVML and from holders of /dev/nvidia*); never anyone else's."""
        tree, leader = self.tree, self.popen
        if self.gpu is None:
            return []
        candidates: set[int] = set()
        for index in gpus:
            candidates.update(p.pid for p in self.gpu.compute_processes(index))
        candidates |= device_file_holders(tree.leader_ticks or 0)
        ours: dict[int, int] = {}
        for pid in candidates:
            stat = read_stat(pid)
            if stat is None or stat.dead:
                continue
            # The leader is not reaped yet, so its session id cannot be someone else's.
            if stat.session == leader.pid or environ_has(pid, MARKER_ENV, self.marker):
                ours[pid] = stat.start_ticks
        if not ours:
            return []
        names = {pid: describe(pid) for pid in ours}
        killed = [pid for pid, ticks in ours.items() if send_signal(pid, ticks, signal.SIGKILL)]
        deadline = time.monotonic() + self.spec.kill_wait_s
        while time.monotonic() < deadline and any(is_alive(p, t) for p, t in ours.items()):
            time.sleep(0.05)
        self._extra_killed.extend(killed)
        return [
            f"a second pass killed {len(killed)} process(es) of this launch that still "
            f"held the GPUs: {', '.join(names[p] for p in killed)}"
        ] if killed else []  # fmt: skip
