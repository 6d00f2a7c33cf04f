"""`tuner best`'s ceiling: where its bandwidth and weights come from, and what it says
when one is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tuner.space.spec import load_space
from tuner.views.ceiling_summary import ceiling_summary, inventory_bandwidth_gbps
from tuner.views.probe_summary import ProbeSummary

SIM_YAML = Path(__file__).parents[2] / "search_spaces" / "sim.yaml"
PROBE = ProbeSummary(
    size=14336,
    allreduces_per_token=122,
    default_us=67.4,
    best_us=67.1,
    best_env={"NCCL_PROTO": "LL"},
    floor_tokens_per_s=122.2,
    measured_tokens_per_s=81.2,
    comm_share=0.67,
    finding=None,
    frozen=(),
    probed=20,
    pruned=0,
    own_us=67.4,
)


def _space(tmp_path: Path, **probe: Any) -> Any:
    raw = yaml.safe_load(SIM_YAML.read_text())
    raw["probe"]["config_json"] = str(SIM_YAML.parent / "models" / "kimi-k2.5-int4")
    raw["probe"].pop("memory_bandwidth_gbps")
    raw["probe"].update(probe)
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_space(path)


def test_the_space_file_s_bandwidth_comes_first(tmp_path: Path) -> None:
    space = _space(tmp_path, memory_bandwidth_gbps=1792)
    inventory = {"gpus": [{"memory_bandwidth_gbps": 900.0}]}
    c = ceiling_summary(space, PROBE, None, inventory)
    assert c is not None and c.memory_s == pytest.approx(6.03e9 / 1792e9, rel=0.01)
    assert c.bandwidth_source.startswith("the space file")
    assert c.weights_source.endswith("config.json at TP=8")  # sim.yaml's command says TP 8


def test_else_nvml_s_peak_of_the_slowest_stored_gpu(tmp_path: Path) -> None:
    inventory = {"gpus": [{"memory_bandwidth_gbps": 1792.0}, {"memory_bandwidth_gbps": 1700.0}]}
    assert inventory_bandwidth_gbps(inventory) == 1700.0
    c = ceiling_summary(_space(tmp_path), PROBE, None, inventory)
    assert c is not None and c.memory_s == pytest.approx(6.03e9 / 1700e9, rel=0.01)
    assert "NVML's theoretical peak" in c.bandwidth_source


def test_without_a_bandwidth_the_ceiling_says_what_is_missing(tmp_path: Path) -> None:
    old = {"gpus": [{"name": "stored by an older tuner"}]}
    c = ceiling_summary(_space(tmp_path), PROBE, None, old)
    assert c is not None and c.bound_tokens_per_s is None
    assert "probe.memory_bandwidth_gbps" in c.sentence and "tuner probe membw" in c.sentence


def test_a_missing_config_json_is_said_not_raised(tmp_path: Path) -> None:
    space = _space(tmp_path, memory_bandwidth_gbps=1792, config_json="nowhere/config.json")
    c = ceiling_summary(space, PROBE, None)
    assert c is not None and c.bound_tokens_per_s is None
    assert "cannot read" in c.weights_source and "weight bytes" in c.sentence


def test_no_probe_no_ceiling(tmp_path: Path) -> None:
    assert ceiling_summary(_space(tmp_path), None, None) is None


def test_a_study_of_speculative_decoding_gets_no_gain_figure(tmp_path: Path) -> None:
    raw = yaml.safe_load(SIM_YAML.read_text())
    raw["probe"]["config_json"] = str(SIM_YAML.parent / "models" / "kimi-k2.5-int4")
    raw["params"]["drafts"] = {
        "args": ["--num-speculative-tokens", "{value}"],
        "choices": ["default", 3],
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw))
    c = ceiling_summary(load_space(path), PROBE, None)
    assert c is not None and c.bound_tokens_per_s is not None and c.max_gain is None
    assert "speculative decoding" in c.sentence
