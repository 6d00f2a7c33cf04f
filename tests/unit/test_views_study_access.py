"""Which stored study a read-only command means, and the space it ran with."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml

from tests.unit.views_helpers import BASELINE, hand_study
from tuner.errors import ConfigError, StoreError
from tuner.storage.store import Store
from tuner.views.study_access import open_study, resolve_study, stored_space


def test_the_only_stored_study_is_the_one_meant_unless_one_is_named(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE])
    assert resolve_study(storage, None, None) == "hand"
    assert resolve_study(storage, "named", None) == "named"
    assert resolve_study(storage, None, tmp_path / "hand.yaml") == "hand"
    optuna.create_study(storage=storage, study_name="second")
    with pytest.raises(ConfigError, match=r"several studies \(hand, second\): pass --study"):
        resolve_study(storage, None, None)


def test_a_missing_database_or_an_empty_one_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such database"):
        resolve_study(f"sqlite:///{tmp_path}/none.db", None, None)
    empty = f"sqlite:///{tmp_path}/empty.db"
    Store(empty)
    with pytest.raises(StoreError, match="no study yet; run `tuner run --space FILE` first"):
        resolve_study(empty, None, None)


def test_the_stored_space_survives_edits_of_the_file(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE])
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "params": {}}))
    space = stored_space(Store(storage), "hand")
    assert set(space.spec.params) == {"NCCL_PROTO", "compilation"}
    opened = open_study(storage, "hand")
    assert opened.space.study_name == "hand" and len(opened.optuna_study.trials) == 1


def test_a_study_tuner_did_not_run_is_refused(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE])
    optuna.create_study(storage=storage, study_name="foreign")
    with pytest.raises(StoreError, match="no study named 'foreign' was run by tuner here"):
        open_study(storage, "foreign")
