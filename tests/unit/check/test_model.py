"""tuner.check.model: a local model path must exist; the model's shape rules out settings."""

from __future__ import annotations

import json
from pathlib import Path

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
    assert "params.tp: 3 can never start" in warnings and "recorded as not launched" in warnings
    assert "2 can never" not in warnings
    assert "config read from" in messages(report, "ok")
