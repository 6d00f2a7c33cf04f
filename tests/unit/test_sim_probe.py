"""The simulator's probe agrees with the simulated server: same NCCL model, per profile."""

from __future__ import annotations

import json

import pytest

from tuner.sim import PROFILES, SimSettings, parse_settings, step_time
from tuner.sim.probe import allreduce_us, geometry, main

KIMI = "kimi-k2.5-int4-tp8"
SIZE_1 = 7168 * 2  # one stream's all-reduce: hidden 7168, bf16
SETTINGS = [
    {},
    {"NCCL_PROTO": "LL"},
    {"NCCL_PROTO": "Simple"},
    {"NCCL_ALGO": "allreduce:tree"},
    {"NCCL_MAX_NCHANNELS": "16"},
    {"NCCL_BUFFSIZE": "16777216"},
    {"CUDA_DEVICE_MAX_CONNECTIONS": "1"},
    {"NCCL_PROTO": "LL128", "NCCL_MAX_NCHANNELS": "16"},
]


def _sim(profile: str, env: dict[str, str]) -> SimSettings:
    return parse_settings(["--profile", profile, "--port", "1"], env)


def test_the_all_reduces_of_a_step_take_the_profile_s_comm_share() -> None:
    hidden, layers = geometry(PROFILES[KIMI])
    assert (hidden, layers) == (7168, 61)
    per_step = 2 * layers * allreduce_us(KIMI, _sim(KIMI, {}), SIZE_1) * 1e-6
    assert per_step / step_time(KIMI, _sim(KIMI, {}), 1) == pytest.approx(0.67, rel=1e-6)


@pytest.mark.parametrize("profile", [KIMI, "nccl-gain", "hidden-gain", "flat"])
@pytest.mark.parametrize("env", SETTINGS)
@pytest.mark.parametrize("batch", [1, 4])
def test_a_probe_difference_is_the_step_time_difference(
    profile: str, env: dict[str, str], batch: int
) -> None:
    _, layers = geometry(PROFILES[profile])
    size = SIZE_1 * batch
    probe = allreduce_us(profile, _sim(profile, env), size) - allreduce_us(
        profile, _sim(profile, {}), size
    )
    step = step_time(profile, _sim(profile, env), batch) - step_time(
        profile, _sim(profile, {}), batch
    )
    assert 2 * layers * probe * 1e-6 == pytest.approx(step, rel=1e-9, abs=1e-12)


def test_nccl_gain_s_ll_is_a_real_gain_and_kimi_s_is_not() -> None:
    def gain(profile: str) -> float:
        base = allreduce_us(profile, _sim(profile, {}), SIZE_1)
        return 1 - allreduce_us(profile, _sim(profile, {"NCCL_PROTO": "LL"}), SIZE_1) / base

    assert gain("nccl-gain") * 0.67 == pytest.approx(0.05 / 1.05, rel=0.15)
    assert 0 < gain(KIMI) * 0.67 < 0.005


def test_the_time_scale_scales_the_probe_like_the_server() -> None:
    st = _sim(KIMI, {})
    assert allreduce_us(KIMI, st, SIZE_1, time_scale=0.1) == pytest.approx(
        0.1 * allreduce_us(KIMI, st, SIZE_1)
    )


def test_the_command_prints_the_probe_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--sizes", f"{SIZE_1},{4 * SIZE_1}", "--repeats", "4", "--seed", "3"], {})
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["sizes"]) == {str(SIZE_1), str(4 * SIZE_1)}
    assert len(doc["samples"][str(SIZE_1)]) == 4
    mean = allreduce_us(KIMI, SimSettings(), SIZE_1)
    assert doc["sizes"][str(SIZE_1)] == pytest.approx(mean, rel=0.01)
    assert doc["backend"] == "sim" and doc["world_size"] == 8


def test_it_fails_where_nccl_would(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sizes", "8"], {"NCCL_ALGO": "Tree"}) == 1  # bare NCCL_ALGO, NCCL 2.31
    assert "no algorithm/protocol available" in capsys.readouterr().err
    assert main(["--sizes", "8"], {"NCCL_NTHREADS": "100"}) == 1
    assert "NCCL_NTHREADS" in capsys.readouterr().err
    assert main(["--sizes", "big"], {}) == 2
