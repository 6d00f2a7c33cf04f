"""tuner.check.probe: a probe that cannot run or be sized is a warning, never an error."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.unit.check.helpers import SIM, messages, run_check

SIM_PROBE = ["{python}", "-m", "tuner.sim.probe", "--sizes", "{sizes}"]
TORCH_PROBE = ["{python}", "-m", "tuner", "probe", "allreduce", "--sizes", "{sizes}"]


def test_a_probe_with_listed_sizes_is_ok_and_says_its_sizes(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        benchmark={"concurrency": [1, 4]},
        probe={"command": SIM_PROBE, "sizes": [14336, 57344], "layers": 61},
    )
    assert report.ok and "probe" not in messages(report, "warning")
    ok = messages(report, "ok")
    assert "14336 bytes at concurrency 1, 57344 bytes at concurrency 4" in ok
    assert "122 all-reduces per token" in ok


def test_sizes_come_from_the_model_s_config_json(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"hidden_size": 128, "num_hidden_layers": 2}))
    report = run_check(
        tmp_path, command=[*SIM, "--model", str(model)], probe={"command": SIM_PROBE}
    )
    ok = messages(report, "ok")
    assert "256 bytes at concurrency 1" in ok and "config.json" in ok
    assert "4 all-reduces per token" in ok


def test_probe_config_json_sizes_the_probe_or_warns(tmp_path: Path) -> None:
    kimi = Path(__file__).parents[3] / "search_spaces" / "models" / "kimi-k2.5-int4"
    report = run_check(tmp_path, probe={"command": SIM_PROBE, "config_json": str(kimi)})
    ok = messages(report, "ok")
    assert "14336 bytes at concurrency 1" in ok and "122 all-reduces per token" in ok
    broken = run_check(tmp_path, probe={"command": SIM_PROBE, "config_json": "nope.json"})
    assert broken.ok  # a warning: the probe and the ceiling, never an error
    assert "probe.config_json" in messages(broken, "warning")


def test_auto_sizes_without_a_config_json_warn_that_the_sweep_runs_without_it(
    tmp_path: Path,
) -> None:
    report = run_check(tmp_path, probe={"command": SIM_PROBE})
    assert report.ok
    assert "probe.sizes: probe.sizes is 'auto' but the model's config.json" in messages(
        report, "warning"
    )


def test_a_missing_program_or_torch_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = run_check(tmp_path, probe={"command": ["no-such-probe"], "sizes": [8], "layers": 1})
    assert report.ok
    assert "'no-such-probe' is not an executable on PATH" in messages(report, "warning")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    report = run_check(tmp_path, probe={"command": TORCH_PROBE, "sizes": [8], "layers": 1})
    assert "torch is not installed, which `tuner probe allreduce` needs" in messages(
        report, "warning"
    )
