"""A hand-made stored study for the views' tests: known params and per-round values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.trial import TrialState

from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.storage.store import Store
from tuner.study.attrs import LAUNCHED as LAUNCHED_ATTR
from tuner.study.attrs import PARAMS as PARAMS_ATTR
from tuner.study.attrs import REASON as REASON_ATTR
from tuner.study.attrs import ROLE as ROLE_ATTR

SPACE = {
    "study": "hand",
    "server": {"command": ["srv", "--port", "{port}"]},
    "params": {
        "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
        "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
    },
    "stop": {"min_gain": 0.01, "confidence": 0.95, "confirmations": 1},
}

Launch = (
    tuple[Mapping[str, Any], Sequence[float] | None]
    | tuple[Mapping[str, Any], Sequence[float] | None, str]
)
"""A trial of a hand-made study: its changed params and per-round values (None: failed),
and its role when it is not the usual one (baseline for the defaults, else search)."""

BASELINE: Launch = ({}, [81.4, 81.2, 81.5])
BASELINE_AGAIN: Launch = ({}, [81.0, 81.3, 81.1])
FAILED_REASON = "refused before launch"


def final_block(
    changed: Mapping[str, Any],
    candidate: Sequence[float],
    defaults: Sequence[float] = (81.3, 81.1, 81.4),
) -> list[Launch]:
    """The final comparison of ``changed`` (tuner/stats/final.py): fresh launches of it and
    of the defaults at these round values, interleaved C B B C, role ``final``."""
    shifted = [v * 1.001 for v in candidate]
    return [
        (changed, list(candidate), "final"),
        ({}, list(defaults), "final"),
        ({}, [v * 0.999 for v in defaults], "final"),
        (changed, shifted, "final"),
    ]


def hand_study(tmp_path: Path, launches: Sequence[Launch]) -> str:
    """A stored study 'hand' whose trials launch these params; its storage URL.

    Each entry is (changed params, per-round objective values); values None make a
    trial that failed before any launch (no launch row; its reason FAILED_REASON).
    """
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump(SPACE))
    space = load_space(path)
    storage = f"sqlite:///{tmp_path}/e.db"
    store = Store(storage)
    store.ensure_study("hand", space_path=str(path), space_text=path.read_text())
    rdb = optuna.storages.RDBStorage(storage)
    study = optuna.create_study(storage=rdb, study_name="hand", direction="maximize")
    study_id = rdb.get_study_id_from_name("hand")
    for entry in launches:
        params, rounds = entry[0], entry[1]
        settings = settings_from_params(space.spec, params)
        role = entry[2] if len(entry) > 2 else ("baseline" if not settings.changed else "search")
        trial = study.ask()
        trial.set_user_attr(PARAMS_ATTR, dict(settings.params))
        trial.set_user_attr(ROLE_ATTR, role)
        if rounds is None:
            trial.set_user_attr(REASON_ATTR, FAILED_REASON)
            study.tell(trial, state=TrialState.FAIL)
            continue
        trial.set_user_attr(LAUNCHED_ATTR, True)  # what --trials counts (study/state.py)
        launch_id = store.add_launch(
            study="hand",
            trial_id=rdb.get_trial_id_from_study_id_trial_number(study_id, trial.number),
            trial_number=trial.number,
            role=role if role == "final" else "search",
            config_hash=settings.config_hash,
            params=dict(settings.params),
            env=settings.env,
            argv=["srv"],
        )
        store.update_launch(
            launch_id,
            status="complete",
            objective_rounds=rounds,
            objective_mean=sum(rounds) / len(rounds),
        )
        study.tell(trial, sum(rounds) / len(rounds))
    return storage
