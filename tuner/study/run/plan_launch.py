"""The figures of `tuner check --plan`: the study's stored baseline, or one launch of the defaults.

If the study already has baseline launches in ``--storage``, the plan comes from them
(``stored_baseline``). Otherwise the baseline is launched once (the trial runner, as the
sweep launches it, under the GPU lock) into a temporary database that is thrown away
afterwards, so nothing is added to the real study (``launch_baseline_once``): the
within-launch noise then comes from that launch's rounds, and the between-launch noise
is the prior (tuner/stats DEFAULT_PRIOR_REL_SD, or one round's sd if larger), assumed
until two launches exist, as the plan says. ``baseline_plan`` turns either into the
cost plan (tuner/study/facts/plan.py); tuner/views/plan.py says which and prints it.
``said_plan`` works out again the plan a sweep said after its baseline, for the report.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuner.errors import BenchmarkError, LaunchError, StoreError
from tuner.events import SweepObserver
from tuner.launcher.gpu_lock import GpuLock
from tuner.space.settings import settings_from_params
from tuner.space.spec import Space
from tuner.storage import LaunchRow, Store
from tuner.study import attrs
from tuner.study.facts import analysis, plan
from tuner.study.facts.launch_times import launch_costs, launch_times
from tuner.study.facts.load_explained import explain_study_load
from tuner.study.facts.plan import CostPlan
from tuner.study.policy import futility
from tuner.telemetry.gpu import GpuBackend, open_gpu_backend
from tuner.trial.runner import RunnerOptions, TrialRunner, server_gpus


def stored_baseline(
    space: Space, storage: str
) -> tuple[analysis.StudyAnalysis, list[LaunchRow]] | None:
    """The study's analysis and launches when ``storage`` holds its measured baseline."""
    if storage.startswith("sqlite:///") and not Path(storage.removeprefix("sqlite:///")).exists():
        return None  # no database yet: do not create one just to look
    store = Store(storage, read_only=True)  # `tuner check` writes nothing
    if store.study(space.study_name) is None:
        return None
    facts = analysis.analyze(store, space)
    if facts.baseline is None:
        return None
    return facts, store.launches(space.study_name)


def launch_baseline_once(
    space: Space, *, observer: SweepObserver, gpu: GpuBackend | None = None
) -> tuple[analysis.StudyAnalysis, list[LaunchRow]]:
    """Launch the defaults once into a temporary database; its analysis and launch rows.

    ``observer`` hears the launch as the sweep's would (its notices); ``gpu`` is closed.
    """
    gpu = gpu if gpu is not None else open_gpu_backend()
    devices = server_gpus(space.spec.server.env, gpu)
    with tempfile.TemporaryDirectory(prefix="tuner-plan-") as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'plan.db'}")
        store.ensure_study(space.study_name, space_path=str(space.path), space_text=None)
        runner = TrialRunner(
            space,
            store,
            gpu=gpu,
            observer=observer,
            options=RunnerOptions(runs_dir=Path(tmp) / "runs"),
        )
        settings = settings_from_params(space.spec, {})
        try:
            with GpuLock(gpu, devices, study=space.study_name):
                runner.run(trial_id=None, trial_number=0, role=attrs.BASELINE, settings=settings)
        except (LaunchError, BenchmarkError) as exc:
            raise StoreError(
                f"plan: the baseline launch failed, so there is no plan: {exc}"
            ) from exc
        finally:
            gpu.close()
        facts = analysis.analyze(store, space)
        rows = store.launches(space.study_name)
        store.engine.dispose()
    return facts, rows


def baseline_plan(
    space: Space,
    facts: analysis.StudyAnalysis,
    rows: list[LaunchRow],
    *,
    budget: int | None = None,
) -> CostPlan:
    """The cost plan of ``space`` from a baseline's analysis and launch rows (their costs
    too: with screening, both kinds of launch and a load's phases, as the sweep's plan)."""
    baseline = facts.baseline
    if baseline is None or facts.noise is None:
        raise StoreError("plan: the baseline launch measured nothing, so there is no plan")
    return plan.cost_plan(
        space.spec,
        facts.noise,
        launch_times(rows),
        baseline_measured=len(baseline.launches),
        budget=budget,
        futility_min_trials=futility.MIN_TRIALS if space.spec.stop.futility > 0 else None,
        costs=launch_costs(rows),
    )


def said_plan(
    store: Store, space: Space, rows: list[LaunchRow], recorded: Mapping[str, Any] | None
) -> CostPlan | None:
    """The plan the sweep said after the baseline (``recorded``: the study's ``tuner_plan``),
    worked out again from the same figures: the baseline launches among ``rows`` and the
    recorded --trials; None when the study has not said one. The report shows it whole,
    as the sweep printed only its summary (views/plan_text.py)."""
    if not recorded:
        return None
    # The plan is said once the baseline launches are measured, from them alone: the
    # later launches would change its noise and times into figures nobody was told.
    opening = [r for r in rows if r.role == attrs.BASELINE]
    facts = analysis.analyze(store, space, rows=opening)
    if facts.baseline is None or facts.noise is None:
        return None
    budget = (recorded.get("launches") or {}).get("budget")
    plan = baseline_plan(space, facts, opening, budget=budget)
    return dataclasses.replace(plan, load=explain_study_load(store, space, opening))
