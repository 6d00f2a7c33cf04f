"""The sweep as a person sees it: one line per finished trial under a live rich progress display."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optuna.trial import FrozenTrial
from rich.console import Console
from rich.live import Live

from tuner.events import BenchStep, SweepObserver
from tuner.secrets import safe_url
from tuner.space.spec import load_space
from tuner.study.facts.plan import CostPlan
from tuner.study.run.locked_sweep import run_locked_sweep
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import SweepOutcome
from tuner.telemetry.gpu import open_gpu_backend
from tuner.views.console_live import LiveView
from tuner.views.plan_text import plan_summary
from tuner.views.trial_line import trial_line
from tuner.vocabulary import is_load_metric


class MessageObserver(SweepObserver):
    """Prints the sweep's notices only (for commands that launch nothing)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.count = 0

    def message(self, text: str) -> None:
        self.count += 1
        self.console.print(f"[yellow]•[/] {text}", highlight=False)

    def cost_plan(self, plan: CostPlan) -> None:
        # Five plain lines between the trial lines; the whole arithmetic is
        # `tuner check --plan`'s and the report's (views/plan_text.plan_lines).
        self.message("\n".join(plan_summary(plan)))


class ConsoleObserver(MessageObserver):
    """Renders sweep events: the live view's two lines (views/console_live.LiveView: the
    study, what runs now) under the printed notices and trial lines."""

    def __init__(self, console: Console, view: LiveView) -> None:
        super().__init__(console)
        self.view = view

    def cost_plan(self, plan: CostPlan) -> None:
        super().cost_plan(plan)
        self.view.plan(plan)

    def resumed(self, launches_done: int, plan: CostPlan | None) -> None:
        self.view.launches_done = launches_done
        if plan is not None:
            self.view.plan(plan)

    def probe_progress(self, done: int, total: int, what: str) -> None:
        self.view.probe(done, total, what)

    def trial_started(self, number: int, role: str, changed: dict[str, Any]) -> None:
        what = " ".join(f"{k}={v}" for k, v in changed.items()) or "defaults"
        self.view.trial_started(number, role, what)

    def load_progress(self, number: int, percent: float | None, line: str) -> None:
        self.view.load_line(number, percent, line)

    def healthy(self, number: int, seconds: float) -> None:
        self.view.healthy(number)

    def bench_level(self, number: int, step: BenchStep) -> None:
        self.view.bench_level(number, step)

    def stopping(self, number: int) -> None:
        self.view.stopping(number)

    def trial_finished(self, trial: FrozenTrial, metric: str) -> None:
        self.console.print(trial_line(trial, metric), highlight=False)
        self.view.trial_finished(trial.number)


def run_with_console(space_path: Path, request: RunRequest, console: Console) -> SweepOutcome:
    """Load the space, open the GPUs (or say there are none), and run the sweep live.

    ``request``: the options of `tuner run`, as the CLI built them. The sweep runs with its
    GPUs locked (tuner/study/run/locked_sweep.py): the live view starts once they are held;
    a run refused there raises GpusBusyError.
    """
    space = request.named(load_space(space_path))
    gpu = open_gpu_backend()
    if not gpu.available:
        console.print(f"[dim]{getattr(gpu, 'reason', 'no NVIDIA GPU: GPU telemetry off')}[/]")
    objective = space.spec.objective
    at = (  # a launch's load has one value per launch, no level
        " (per launch)"
        if is_load_metric(objective.metric)
        else f" at concurrency {space.spec.objective_concurrency}"
    )
    console.print(
        f"Study [bold]{space.study_name}[/] in {safe_url(request.storage)}: "
        f"{len(space.spec.params)} params, objective {objective.label}{at}"
    )
    view = LiveView(space.study_name, request.trials)
    display = Live(view, console=console, refresh_per_second=4, transient=True)
    return run_locked_sweep(space, request, ConsoleObserver(console, view), gpu, display)
