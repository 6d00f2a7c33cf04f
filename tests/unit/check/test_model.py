"""tuner.check.model: a local model path must exist; the model's shape rules out settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.check.helpers import SIM, messages, run_check


def write_model(tmp_path: Path, heads: int, kv: int) -> Path:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(
        json.dumps({"num_attention_heads": heads, "num_key_value_heads": kv})
    )
    return model


def test_a_baseline_the_model_rules_out_is_an_error(tmp_path: Path) -> None:
    model = write_model(tmp_path, heads=4, kv=2)
    report = run_check(tmp_path, command=[*SIM, "--model", str(model), "-tp", "3"])
    assert "the baseline cannot start: Total number of attention heads (4)" in messages(
        report, "error"
    )


def test_a_choice_the_model_rules_out_is_a_warning(tmp_path: Path) -> None:
    model = write_model(tmp_path, heads=4, kv=2)
    report = run_check(
        tmp_path,
        command=[*SIM, "--model", str(model)],
        params={"tp": {"args": ["-tp", "{value}"], "choices": ["default", 2, 3]}},
    )
    assert report.ok
    warnings = messages(report, "warning")
    assert "params.tp: 3 can never start with the other params at default" in warnings
    assert "recorded as not launched" in warnings
    assert "2 can never" not in warnings
    assert "config read from" in messages(report, "ok")


# --- a model given as a local path ---------------------------------------------------------


def test_a_space_dir_model_path_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    # The space file copied away from the checkout: {space_dir}/../.cache/... is gone.
    report = run_check(tmp_path, command=[*SIM, "--model", "{space_dir}/../missing"])
    assert not report.ok
    [error] = report.errors
    assert error.key == "server.command"
    assert str(tmp_path / "space.yaml") in error.message
    assert f"no such directory: {tmp_path.parent / 'missing'}" in error.message
    assert "{space_dir}" in error.message
    # The simulator's model is not the tiny model: no recipe for it (a CPU space's test:
    # tests/unit/check/test_server_kind.py).
    assert "setup-vllm-cpu" not in error.message
    assert "point --model at a Hugging Face repo id or an existing folder" in error.message


def test_a_relative_or_positional_model_path_that_does_not_exist_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative path is read from where tuner runs, as a launch
    report = run_check(tmp_path, command=[*SIM, "--model=./models/absent"])
    assert f"no such directory: {tmp_path / 'models' / 'absent'}" in messages(report, "error")
    (tmp_path / "models" / "absent").mkdir(parents=True)
    assert run_check(tmp_path, command=[*SIM, "--model=./models/absent"]).ok
    # vllm serve's positional model: the same check, worded for a positional argument.
    report = run_check(tmp_path, command=[*SIM, "serve", str(tmp_path / "gone")])
    assert "point the model argument at" in messages(report, "error")


def test_an_existing_folder_and_a_repo_id_pass(tmp_path: Path) -> None:
    (tmp_path / "tiny").mkdir()
    report = run_check(tmp_path, command=[*SIM, "--model", "{space_dir}/tiny"])
    assert report.ok, report.summary()
    assert "no config.json for" in messages(report, "ok")
    report = run_check(tmp_path, command=[*SIM, "--model", "org/not-downloaded-here"])
    assert report.ok, report.summary()


# --- the layout against server.gpus --------------------------------------------------------


def test_a_layout_needing_more_gpus_than_the_server_has_is_named(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        command=[*SIM, "-tp", "2"],
        gpus=4,
        params={"tp": {"args": ["-tp", "{value}"], "choices": ["default", 4, 8]}},
    )
    warnings = messages(report, "warning")
    assert "params.tp: 8 can never start with the other params at default" in warnings
    assert "available GPUs (4) (server.gpus)" in warnings
    assert "params.tp: 4 can never" not in warnings
    baseline = run_check(tmp_path, command=[*SIM, "-tp", "8"], gpus=4)
    assert "the baseline cannot start: Tensor parallel size (8)" in messages(baseline, "error")
