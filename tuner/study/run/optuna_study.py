"""The optuna study of a sweep: created or loaded, its sampler, its objectives named.

``open_objectives`` opens the study as the goal (tuner/study/policy/goal.py) asks: one
direction, or one per objective of ``objectives:``, each named after its metric so that
optuna-dashboard shows ``output_throughput`` instead of "Objective 0". Re-running the same
command loads the same study (same name, same storage): that is how a study resumes.
"""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Sequence

import optuna
import sqlalchemy.exc

from tuner import stats
from tuner.space.spec import Space
from tuner.study.policy.goal import goal_for


def open_study(
    storage: optuna.storages.BaseStorage,
    name: str,
    direction: stats.Direction | Sequence[stats.Direction],
    seed: int | None,
    metric: str | Sequence[str] | None = None,
) -> optuna.Study:
    """Create or load the optuna study; TPE seeded, our own stop logic; the objective named
    ``metric`` (optuna-dashboard shows the name instead of "Objective 0").

    Several objectives: ``direction`` and ``metric`` are sequences, one per objective; the
    study is optuna's multi-objective one (TPE models their Pareto front)."""
    directions = None if isinstance(direction, str) else list(direction)
    with warnings.catch_warnings():
        # multivariate TPE models interactions (NCCL_PROTO x channels); optuna still
        # labels it experimental, which is noise for our users.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=5, multivariate=True, group=True
        )
    for attempt in range(3):
        try:
            study = optuna.create_study(
                storage=storage,
                study_name=name,
                direction=direction if isinstance(direction, str) else None,
                directions=directions,
                sampler=sampler,
                load_if_exists=True,
            )
            name_objective(study, metric)
            return study
        except sqlalchemy.exc.IntegrityError:
            # Workers starting together on a fresh PostgreSQL race to create optuna's
            # tables; the loser retries and finds them made.
            if attempt == 2:
                raise
            time.sleep(0.5 + random.random())
    raise AssertionError("unreachable")


def name_objective(study: optuna.Study, metric: str | Sequence[str] | None) -> None:
    """Name the study's objectives after their metrics, once (a stored name is kept)."""
    if metric is None or study.metric_names is not None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([metric] if isinstance(metric, str) else list(metric))


def open_objectives(
    storage: optuna.storages.BaseStorage, name: str, space: Space, seed: int | None
) -> optuna.Study:
    """The optuna study: one objective, or several (``objectives:``) named ``metric@level``."""
    direction, metric = goal_for(space.spec).optuna_objectives(space.spec)
    return open_study(storage, name, direction, seed, metric)
