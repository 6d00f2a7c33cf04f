"""`tuner best` and `tuner compare` on a hand-made study: keep the defaults, or a real gain."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
import yaml
from rich.console import Console

from tuner.views import report
from tuner.space.spec import load_space
from tuner.space.settings import settings_from_params
from tuner.study.attrs import PARAMS as PARAMS_ATTR
from tuner.study.attrs import ROLE as ROLE_ATTR
from tuner.storage import Store

SPACE = {
    "study": "hand",
    "server": {"command": ["srv", "--port", "{port}"]},
    "params": {
        "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
        "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
    },
    "stop": {"min_gain": 0.01, "confidence": 0.95, "confirmations": 1},
}


def _study(tmp_path: Path, launches: list[tuple[dict, list[float]]]) -> str:
    """A stored study whose launches have these params and per-round objective values."""
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump(SPACE))
    space = load_space(path)
    storage = f"sqlite:///{tmp_path}/e.db"
    store = Store(storage)
    store.ensure_study("hand", space_path=str(path), space_text=path.read_text())
    study = optuna.create_study(storage=storage, study_name="hand", direction="maximize")
    for params, rounds in launches:
        settings = settings_from_params(space.spec, params)
        trial = study.ask()
        trial.set_user_attr(PARAMS_ATTR, dict(settings.params))
        trial.set_user_attr(ROLE_ATTR, "baseline" if not settings.changed else "search")
        launch_id = store.add_launch(
            study="hand",
            trial_id=trial._trial_id,
            trial_number=trial.number,
            role="search",
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


BASELINE = ({}, [81.4, 81.2, 81.5])
BASELINE_AGAIN = ({}, [81.0, 81.3, 81.1])


def test_noise_sized_gain_means_keep_the_defaults(tmp_path: Path) -> None:
    # 81.9 vs 81.4: the published NCCL tuning that was noise.
    tuned = {"NCCL_PROTO": "LL"}
    storage = _study(
        tmp_path,
        [BASELINE, BASELINE_AGAIN, (tuned, [81.9, 82.0, 81.8]), (tuned, [81.6, 81.8, 81.9])],
    )
    answer = report.best_report(storage, "hand")
    assert answer["keep_defaults"] is True
    assert answer["recommended"]["params"] == {"NCCL_PROTO": "default", "compilation": "default"}
    assert answer["recommended"]["env"] == {} and answer["recommended"]["args"] == []
    assert "keep the defaults" in answer["recommended"]["reason"]
    assert answer["baseline"]["launches"] == 2
    assert answer["trials"] == {"complete": 4, "failed": 0, "pruned": 0, "running": 0}


def test_a_confirmed_real_gain_is_recommended_with_its_deployment(tmp_path: Path) -> None:
    fast = {"NCCL_PROTO": "LL", "compilation": 3}
    storage = _study(
        tmp_path, [BASELINE, BASELINE_AGAIN, (fast, [88.0, 88.3, 88.1]), (fast, [87.9, 88.2, 88.4])]
    )
    answer = report.best_report(storage, "hand")
    assert answer["keep_defaults"] is False
    rec = answer["recommended"]
    assert rec["env"] == {"NCCL_PROTO": "LL"} and rec["args"] == ["-O3"]
    assert rec["value"] == pytest.approx(88.15, abs=0.01)
    assert answer["gain_vs_baseline"]["verdict"] == "better"
    assert report.deployment_text(rec, "env").splitlines()[1:] == ["NCCL_PROTO=LL"]
    assert report.deployment_text(rec, "systemd").splitlines()[:2] == [
        "[Service]",
        'Environment="NCCL_PROTO=LL"',
    ]
    assert report.deployment_text(rec, "args") == "-O3"

    console = Console(record=True, width=200)
    report.print_best(answer, "json", console)
    assert json.loads(console.export_text())["recommended"]["trial"] == rec["trial"]


def test_simplest_equivalent_configuration_is_recommended(tmp_path: Path) -> None:
    two_changes = {"NCCL_PROTO": "LL", "compilation": 3}
    one_change = {"compilation": 3}
    storage = _study(
        tmp_path,
        [
            BASELINE,
            BASELINE_AGAIN,
            (two_changes, [88.2, 88.4, 88.3]),
            (two_changes, [88.1, 88.3, 88.2]),
            (one_change, [88.0, 88.1, 88.2]),
            (one_change, [88.1, 87.9, 88.0]),
        ],
    )
    answer = report.best_report(storage, "hand")
    assert answer["best"]["params"]["NCCL_PROTO"] == "LL"
    assert answer["recommended"]["params"] == {"NCCL_PROTO": "default", "compilation": 3}


def test_compare_gives_the_interval_and_verdict(tmp_path: Path) -> None:
    storage = _study(tmp_path, [BASELINE, BASELINE_AGAIN, ({"compilation": 0}, [61.0, 61.2, 60.9])])
    slower = report.compare_report(storage, "hand", 2, 0)
    assert slower["verdict"] == "worse"
    assert slower["ci_high"] < 0 < 0.25 + slower["rel_diff"]
    same = report.compare_report(storage, "hand", 1, 0)
    assert same["verdict"] == "within noise"
    assert same["ci_low"] < 0 < same["ci_high"]


def test_unknown_study_and_format_errors_are_clear(tmp_path: Path) -> None:
    storage = _study(tmp_path, [BASELINE])
    with pytest.raises(report.StoreError, match="no study named 'other'"):
        report.best_report(storage, "other")
    with pytest.raises(report.ConfigError, match="--format 'xml'"):
        report.print_best(report.best_report(storage, "hand"), "xml", Console())
    with pytest.raises(report.StoreError, match="no such database"):
        report.resolve_study(f"sqlite:///{tmp_path}/none.db", None, None)
