"""The probe in the sweep, with a fake runner on the sim's speed model and the sim's probe.

No process is started: FakeRunner draws launches from the simulator's noise-free
throughput, and the probe runner times the simulator's all-reduce in-process, so these
check what the probe decides (screening, freezing, stopping) and what it saves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
from rich.console import Console

from tests.fakes import FakeRunner
from tests.probe_helpers import KIMI_SIZE, nccl_space, sim_probe, sim_speed, write
from tuner.probe.run import ProbeError, ProbeResult
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep
from tuner.views.best import best_report
from tuner.views.best_print import print_best


def _sweep(  # type: ignore[no-untyped-def]
    tmp_path: Path, space: dict, profile: str, *, seed: int = 0, trials: int = 30, probe=None
):
    path = write(tmp_path, space)
    loaded = load_space(path)
    storage = f"sqlite:///{tmp_path}/p.db"
    runner = FakeRunner(Store(storage), "p", speed=sim_speed(loaded.spec, profile), seed=seed)
    if probe is None and "probe" in space:
        probe = sim_probe(profile, seed=seed)
    result = run_sweep(
        loaded, RunRequest(storage, trials, seed=seed), Seams(runner=runner, probe_runner=probe)
    )
    return result, runner, storage, probe


def test_kimi_nccl_study_stops_after_the_baseline_with_the_probe_finding(tmp_path: Path) -> None:
    result, runner, storage, probe = _sweep(tmp_path, nccl_space(), "kimi-k2.5-int4-tp8")
    assert result.stop_reason == "probe"
    assert "NCCL settings cannot help at these sizes" in result.stop_detail
    assert result.launched == 2  # the baseline launches, nothing else
    assert [role for role, _ in runner.launched] == ["baseline", "baseline"]
    # Each distinct NCCL setting was probed once: the defaults and every value alone.
    keys = [tuple(sorted(env.items())) for env in probe.calls]
    assert len(keys) == len(set(keys)) == 1 + 2 + 3 + 3 + 4 + 4 + 3 + 2 + 2
    study = optuna.load_study(study_name="p", storage=storage)
    verdict = study.user_attrs[attrs.PROBE_FINDING]
    assert verdict["can_help"] is False and 0.5 < verdict["comm_share"] < 0.7
    report = best_report(storage, "p")
    assert report.keep_defaults is True
    assert report.probe is not None and report.probe.finding == verdict["sentence"]
    # The floor: 122 all-reduces of ~67 us per token cap one stream near 121 tok/s, and
    # the measured 81 tok/s spends about two thirds of its step in communication.
    assert report.probe.allreduces_per_token == 122 and report.probe.size == KIMI_SIZE
    assert 115 < report.probe.floor_tokens_per_s < 125
    assert report.probe.measured_tokens_per_s == pytest.approx(report.baseline.value, rel=1e-9)  # type: ignore[union-attr]
    assert 0.6 < report.probe.comm_share < 0.7  # type: ignore[operator]
    assert report.to_json()["probe"]["floor_tokens_per_s"] == report.probe.floor_tokens_per_s
    console = Console(record=True, width=200)
    print_best(report, "table", console)
    text = console.export_text()
    assert "Communication floor: at most 12" in text and "single-stream" in text
    assert "of decode time in communication" in text
    assert "Probe finding: NCCL settings cannot help at these sizes" in text


def test_a_resumed_study_probes_nothing_again(tmp_path: Path) -> None:
    _, _, storage, probe = _sweep(tmp_path, nccl_space(), "kimi-k2.5-int4-tp8", trials=1)
    first = len(probe.calls)
    again = sim_probe("kimi-k2.5-int4-tp8")
    result, *_ = _sweep(tmp_path, nccl_space(), "kimi-k2.5-int4-tp8", probe=again)
    assert first > 0 and again.calls == []
    assert result.stop_reason == "probe" and result.launched == 2


@pytest.mark.parametrize("seed", [0])
def test_a_real_nccl_gain_is_found_as_without_the_probe_in_fewer_launches(
    tmp_path: Path, seed: int
) -> None:
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    space = nccl_space(with_vllm_params=True)
    plain = {k: v for k, v in space.items() if k != "probe"}
    probed, _, storage_p, _ = _sweep(tmp_path / "with", space, "nccl-gain", seed=seed)
    bare, _, storage_b, _ = _sweep(tmp_path / "without", plain, "nccl-gain", seed=seed)
    with_probe = best_report(storage_p, "p").recommended
    without = best_report(storage_b, "p").recommended
    assert with_probe is not None and without is not None
    assert with_probe.env.get("NCCL_PROTO") == "LL" == without.env.get("NCCL_PROTO")
    assert probed.launched < bare.launched
    study = optuna.load_study(study_name="p", storage=storage_p)
    frozen = set(study.user_attrs[attrs.PROBE_FINDING]["frozen"])
    assert "NCCL_PROTO" not in frozen and "NCCL_BUFFSIZE" in frozen
    # The probe's nominee, the faster protocol alone, is the first configuration searched.
    assert study.user_attrs[attrs.PROBE_FINDING]["open_values"] == {"NCCL_PROTO": ["LL"]}
    (first, *_) = [t for t in study.trials if t.user_attrs.get(attrs.ROLE) == "search"]
    assert first.user_attrs[attrs.PROPOSER] == "probe"
    assert {k: v for k, v in first.user_attrs[attrs.PARAMS].items() if v != "default"} == {
        "NCCL_PROTO": "LL"
    }


def test_a_value_the_probe_finds_cannot_help_is_not_searched(tmp_path: Path) -> None:
    inner = sim_probe("nccl-gain")

    def probe(env: Any, unset: Any) -> ProbeResult:  # LL128 times as the default does
        return inner({k: v for k, v in env.items() if env.get(k) != "LL128"}, unset)

    space = nccl_space(
        params={"NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "LL128"]},
                "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]}},
        constraints=[],
        search={"method": "tpe"},  # TPE samples the whole space, LL128 included
    )  # fmt: skip
    _, runner, storage, _ = _sweep(tmp_path, space, "nccl-gain", trials=10, probe=probe)
    assert all(changed.get("NCCL_PROTO") != "LL128" for _, changed in runner.launched)
    study = optuna.load_study(study_name="p", storage=storage)
    assert study.user_attrs[attrs.PROBE_FINDING]["open_values"] == {"NCCL_PROTO": ["LL"]}
    reasons = [t.user_attrs.get(attrs.REASON, "") for t in study.trials]
    assert any(r.startswith("NCCL_PROTO=LL128 not searched: the probe found it") for r in reasons)


def test_a_configuration_with_a_slower_probe_is_never_launched(tmp_path: Path) -> None:
    space = nccl_space(
        params={"NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
                "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]}},
        constraints=[],
        probe={"command": ["unused"], "sizes": [KIMI_SIZE], "layers": 61, "comm_share": 1.0},
        # TPE samples the whole space; the local search never proposes a value it closed.
        search={"method": "tpe"},
    )  # fmt: skip
    result, runner, storage, _ = _sweep(tmp_path, space, "nccl-gain", trials=12)
    assert all(changed.get("NCCL_PROTO") != "Simple" for _, changed in runner.launched)
    study = optuna.load_study(study_name="p", storage=storage)
    (simple,) = [
        t
        for t in study.trials
        if (t.user_attrs.get(attrs.PARAMS) or {}).get("NCCL_PROTO") == "Simple"
    ][:1]
    assert simple.state == optuna.trial.TrialState.PRUNED
    assert simple.user_attrs[attrs.LAUNCHED] is False
    assert simple.user_attrs[attrs.REASON].startswith("pruned by the probe: all-reduce")
    numbers = simple.user_attrs[attrs.PROBE]
    assert numbers["verdict"] == "slower" and numbers["rel_diff"] > 0.01
    assert best_report(storage, "p").recommended.env.get("NCCL_PROTO") == "LL"  # type: ignore[union-attr]


def test_a_default_whose_probe_fails_turns_the_probe_off(tmp_path: Path) -> None:
    def broken(env: Any, unset: Any) -> ProbeResult:
        raise ProbeError("the probe exited with code 1: torch is not installed")

    space = nccl_space(params={"NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL"]}},
                       constraints=[])  # fmt: skip
    result, runner, storage, _ = _sweep(tmp_path, space, "nccl-gain", trials=9, probe=broken)
    assert result.stop_reason != "probe"
    assert any(changed.get("NCCL_PROTO") == "LL" for _, changed in runner.launched)
    study = optuna.load_study(study_name="p", storage=storage)
    assert "torch is not installed" in study.user_attrs[attrs.PROBE_DISABLED]


def test_a_setting_whose_probe_fails_is_not_launched(tmp_path: Path) -> None:
    inner = sim_probe("nccl-gain")

    def probe(env: Any, unset: Any) -> ProbeResult:
        if env.get("NCCL_PROTO") == "LL128":
            raise ProbeError("NCCL WARN no algorithm/protocol available for AllReduce")
        return inner(env, unset)

    space = nccl_space(
        params={"NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "LL128"]},
                "compilation": {"args": ["-O{value}"], "choices": ["default", 0]}},
        constraints=[],
    )  # fmt: skip
    # 12: room for a search trial after the gain, before the final comparison's 4 launches.
    _, runner, storage, _ = _sweep(tmp_path, space, "nccl-gain", trials=12, probe=probe)
    assert all(changed.get("NCCL_PROTO") != "LL128" for _, changed in runner.launched)
    study = optuna.load_study(study_name="p", storage=storage)
    reasons = [t.user_attrs.get(attrs.REASON, "") for t in study.trials]
    assert any("it fails with these NCCL settings (NCCL WARN" in r for r in reasons)
    assert "NCCL_PROTO" not in study.user_attrs[attrs.PROBE_FINDING]["frozen"]


def test_a_tpe_proposal_that_changes_a_frozen_param_is_not_launched(tmp_path: Path) -> None:
    space = nccl_space(
        params={"NCCL_BUFFSIZE": {"env": "NCCL_BUFFSIZE", "choices": ["default", 16777216]},
                "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]}},
        constraints=[],
        search={"method": "tpe"},
    )  # fmt: skip
    _, runner, storage, _ = _sweep(tmp_path, space, "kimi-k2.5-int4-tp8", trials=8)
    searched = [changed for role, changed in runner.launched if role == "search"]
    assert searched and all("NCCL_BUFFSIZE" not in changed for changed in searched)
    study = optuna.load_study(study_name="p", storage=storage)
    reasons = [t.user_attrs.get(attrs.REASON, "") for t in study.trials]
    assert any(
        r.startswith("NCCL_BUFFSIZE no longer searched: the probe found it") for r in reasons
    )


def test_probe_config_json_sizes_the_probe_and_gives_best_its_ceiling(tmp_path: Path) -> None:
    kimi = Path(__file__).parents[2] / "search_spaces" / "models" / "kimi-k2.5-int4"
    space = nccl_space(
        server={"command": ["srv", "--port", "{port}", "--tensor-parallel-size", "8"]}
    )
    space["probe"] = {"command": ["unused"], "config_json": str(kimi)}  # sizes, layers: auto
    space["probe"]["memory_bandwidth_gbps"] = 1792
    result, _, storage, probe = _sweep(tmp_path, space, "kimi-k2.5-int4-tp8")
    assert result.stop_reason == "probe"
    report = best_report(storage, "p")
    assert report.probe is not None
    assert report.probe.size == KIMI_SIZE and report.probe.allreduces_per_token == 122
    c = report.ceiling
    assert c is not None and c.bound_tokens_per_s is not None
    assert 81.4 < c.bound_tokens_per_s < 95  # memory 3.4 ms + communication ~8.2 ms
    # NCCL settings alone: the gap they can close is the probe's difference, under 1%.
    assert c.max_gain is not None and 0 <= c.max_gain < 0.01
    console = Console(record=True, width=400)
    print_best(report, "table", console)
    assert "no launch setting of this study can give more than" in console.export_text()
