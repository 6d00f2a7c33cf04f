"""`tuner check --plan`: the cost plan of a space before its study runs.

If the study already has baseline launches in ``--storage``, the plan comes from them.
Otherwise the baseline is launched once (the trial runner, as the sweep launches it)
into a temporary database that is thrown away afterwards, so nothing is added to the
real study: the within-launch noise then comes from that launch's rounds, and the
between-launch noise is the prior (tuner/stats DEFAULT_PRIOR_REL_SD, or one round's sd
if larger), assumed until two launches exist, as the plan says.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from rich.console import Console

from tuner.errors import BenchmarkError, LaunchError, StoreError
from tuner.launcher.gpu_lock import GpuLock
from tuner.space.settings import settings_from_params
from tuner.space.spec import Space
from tuner.storage import LaunchRow, Store
from tuner.study.facts import analysis, plan
from tuner.study.facts.plan import CostPlan
from tuner.study.policy import futility
from tuner.telemetry.gpu import GpuBackend, open_gpu_backend
from tuner.trial.runner import RunnerOptions, TrialRunner, server_gpus
from tuner.views.console import MessageObserver


def stored_baseline(
    space: Space, storage: str
) -> tuple[analysis.StudyAnalysis, list[LaunchRow]] | None:
    """The study's analysis and launches when ``storage`` holds its measured baseline."""
    if storage.startswith("sqlite:///") and not Path(storage.removeprefix("sqlite:///")).exists():
        return None  # no database yet: do not create one just to look
    store = Store(storage)
    if store.study(space.study_name) is None:
        return None
    result = analysis.analyze(store, space)
    if result.baseline is None:
        return None
    return result, store.launches(space.study_name)


def launch_baseline_once(
    space: Space, *, console: Console, gpu: GpuBackend | None = None
) -> tuple[analysis.StudyAnalysis, list[LaunchRow]]:
    """Launch the defaults once into a temporary database; its analysis and launch rows."""
    gpu = gpu if gpu is not None else open_gpu_backend()
    devices = server_gpus(space.spec.server.env, gpu)
    with tempfile.TemporaryDirectory(prefix="tuner-plan-") as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'plan.db'}")
        store.ensure_study(space.study_name, space_path=str(space.path), space_text=None)
        runner = TrialRunner(
            space,
            store,
            gpu=gpu,
            observer=MessageObserver(console),
            options=RunnerOptions(runs_dir=Path(tmp) / "runs"),
        )
        settings = settings_from_params(space.spec, {})
        console.print("plan: launching the defaults once to measure the noise of a launch")
        try:
            with GpuLock(gpu, devices, study=space.study_name):
                runner.run(trial_id=None, trial_number=0, role="baseline", settings=settings)
        except (LaunchError, BenchmarkError) as exc:
            raise StoreError(
                f"plan: the baseline launch failed, so there is no plan: {exc}"
            ) from exc
        finally:
            gpu.close()
        result = analysis.analyze(store, space)
        rows = store.launches(space.study_name)
        store.engine.dispose()
    return result, rows


def check_plan(space: Space, storage: str, *, console: Console) -> CostPlan:
    """The plan of ``space``: from the stored baseline if there is one, else one launch."""
    found = stored_baseline(space, storage)
    if found is not None:
        console.print(
            f"plan: from the baseline launches of study {space.study_name!r} in {storage}"
        )
    else:
        found = launch_baseline_once(space, console=console)
    result, rows = found
    baseline = result.baseline
    if baseline is None or result.noise is None:
        raise StoreError("plan: the baseline launch measured nothing, so there is no plan")
    return plan.cost_plan(
        space.spec,
        result.noise,
        plan.launch_times(rows),
        baseline_measured=len(baseline.launches),
        futility_min_trials=futility.MIN_TRIALS if space.spec.stop.futility > 0 else None,
    )
