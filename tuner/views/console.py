"""The sweep as a person sees it: one line per finished trial under a live rich progress display."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optuna.trial import FrozenTrial
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from tuner.events import SweepObserver
from tuner.secrets import safe_url
from tuner.space.spec import load_space
from tuner.study.facts.plan import CostPlan
from tuner.study.run.locked_sweep import run_locked_sweep
from tuner.study.run.sweep import SweepOutcome
from tuner.telemetry.gpu import open_gpu_backend
from tuner.trial.runner import RunnerOptions
from tuner.views.plan_text import plan_lines
from tuner.views.trial_line import trial_line


class MessageObserver(SweepObserver):
    """Prints the sweep's notices only (for commands that launch nothing)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.count = 0

    def message(self, text: str) -> None:
        self.count += 1
        self.console.print(f"[yellow]•[/] {text}", highlight=False)

    def cost_plan(self, plan: CostPlan) -> None:
        self.message("\n".join(plan_lines(plan)))


class ConsoleObserver(MessageObserver):
    """Renders sweep events: a trials bar, a phase line (loading 56%, round 2/3), trial lines."""

    def __init__(self, console: Console, progress: Progress, total: int) -> None:
        super().__init__(console)
        self.progress = progress
        self.trials_task = progress.add_task("trials", total=total)
        self.phase_task = progress.add_task("", total=None)

    def _phase(self, text: str, completed: float | None = None) -> None:
        self.progress.update(
            self.phase_task,
            description=text,
            total=100 if completed is not None else None,
            completed=completed or 0,
        )

    def trial_started(self, number: int, role: str, changed: dict[str, Any]) -> None:
        what = " ".join(f"{k}={v}" for k, v in changed.items()) or "defaults"
        self._phase(f"trial {number} ({role}): starting server [{what}]")

    def load_progress(self, number: int, percent: float | None, line: str) -> None:
        text = line.strip()[:70]
        self._phase(f"trial {number}: {text}", percent)

    def healthy(self, number: int, seconds: float) -> None:
        self._phase(f"trial {number}: healthy after {seconds:.1f} s, benchmarking")

    def level_done(self, number: int, round_index: int, summary: Any) -> None:
        self._phase(
            f"trial {number}: round {round_index + 1}, concurrency {summary.concurrency}: "
            f"{summary.output_throughput:.1f} tok/s"
        )

    def trial_finished(self, trial: FrozenTrial, metric: str) -> None:
        self.console.print(trial_line(trial, metric), highlight=False)
        self.progress.advance(self.trials_task)


def run_with_console(
    space_path: Path,
    *,
    trials: int,
    storage: str,
    study: str | None,
    seed: int | None,
    runs_dir: Path,
    console: Console,
    worker_trials: int | None = None,
    split_by_host: bool = False,
    hours: float | None = None,
) -> SweepOutcome:
    """Load the space, open the GPUs (or say there are none), and run the sweep live.

    The sweep runs with its GPUs locked (tuner/study/run/locked_sweep.py): the live view
    starts once they are held; a run refused there raises GpusBusyError.
    """
    space = load_space(space_path)
    if study:
        space = space.model_copy(update={"study_name": study})
    gpu = open_gpu_backend()
    if not gpu.available:
        console.print(f"[dim]{getattr(gpu, 'reason', 'no NVIDIA GPU: GPU telemetry off')}[/]")
    console.print(
        f"Study [bold]{space.study_name}[/] in {safe_url(storage)}: "
        f"{len(space.spec.params)} params, "
        f"objective {space.spec.objective.label} at concurrency {space.spec.objective_concurrency}"
    )
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    observer = ConsoleObserver(console, progress, trials)
    return run_locked_sweep(
        space,
        storage=storage,
        n_trials=trials,
        seed=seed,
        observer=observer,
        gpu=gpu,
        runner_options=RunnerOptions(runs_dir=runs_dir),
        worker_trials=worker_trials,
        split_by_host=split_by_host,
        display=progress,
        hours=hours,
    )
