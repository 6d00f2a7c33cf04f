"""One request through the run: what `tuner run` asks, and the parts a test may swap.

``RunRequest`` holds the options of `tuner run` (tuner/cli/study_commands.py builds it
once) and travels whole: the console (tuner/views/console.py ``run_with_console``), the
GPU lock (locked_sweep.py), the sweep (sweep.py) and the controller read it, so an option
added to the command is one field here, not one parameter at every hop. ``Seams`` holds
what a run talks to that tests and benchmarks replace (docs/architecture.md, "Seams for
tests"): the observer, the GPUs, the launcher and benchmark, the probe's command, the
host's fingerprint, the heartbeat and the topology's reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tuner.check.topology import TopologyReader
from tuner.events import SweepObserver
from tuner.space.spec import Space
from tuner.study.run.probe_cache import ProbeRunner
from tuner.study.run.workers import Heartbeat
from tuner.telemetry.fingerprint import Fingerprint
from tuner.telemetry.gpu import GpuBackend, NullGpuBackend
from tuner.trial.runner import Runner, RunnerOptions


@dataclass(frozen=True)
class RunRequest:
    """The options of one `tuner run` (see the module)."""

    storage: str
    """The database's URL (--storage)."""
    trials: int
    """The study's budget of launches, all workers together (--trials; full launches, with a
    ``screening:`` section). A resumed study continues to it."""
    seed: int | None = None
    """Seeds optuna's TPE and the policy's draws (--seed): a seeded study decides the same."""
    study: str | None = None
    """The study's name instead of the space file's (--study)."""
    worker_trials: int | None = None
    """This worker's own budget (--worker-trials); None: the study's alone."""
    split_by_host: bool = False
    """Run on the study ``NAME@FINGERPRINT`` of this host's hardware (--split-by-host)
    instead of refusing a study that runs on other hardware."""
    hours: float | None = None
    """The study's hours of launches (--hours); None: no limit on time."""
    runs_dir: Path = Path("tuner-runs")
    """Where each launch's server log goes (--runs-dir)."""
    preflight: bool = True
    """`tuner check` before the first launch (False: a server whose --help is not vLLM's,
    in tests; a swapped runner launches nothing, so it is never checked)."""

    def named(self, space: Space) -> Space:
        """``space`` under the study name asked for (--study), else as it is."""
        if not self.study:
            return space
        return space.model_copy(update={"study_name": self.study})

    def runner_options(self) -> RunnerOptions:
        """The trial runner's options this request sets."""
        return RunnerOptions(runs_dir=self.runs_dir)


@dataclass(frozen=True)
class Seams:
    """What a run talks to, each replaceable (see the module); the defaults are a real run's
    without GPUs: a silent observer, no NVML, the space's server and probe command."""

    observer: SweepObserver = field(default_factory=SweepObserver)
    gpu: GpuBackend = field(default_factory=NullGpuBackend)
    runner: Runner | None = None
    """Replaces the launcher and benchmark (tests/fakes.FakeRunner); None: the space's
    server, launched by a TrialRunner for each trial."""
    probe_runner: ProbeRunner | None = None
    """Replaces the space's probe command; None: the command of its ``probe:``."""
    fingerprint: Fingerprint | None = None
    """This host's hardware; None: read from ``gpu`` and the host."""
    heartbeat: Heartbeat | None = None
    """The workers' heartbeat; None: from the environment (docs/distributed.md)."""
    read_topology: TopologyReader | None = None
    """Replaces NVML's reading of the GPUs' topology (a space's ``topology:`` file is read
    in any case); None: NVML's."""
