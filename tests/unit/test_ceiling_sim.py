"""On the simulator's kimi profile tuner's ceiling reproduces the sim's own truth.

tuner computes the bound from search_spaces/sim.yaml: the weight bytes of the config.json
it points to, its memory bandwidth, and the sim's probe of every NCCL value the space
lists; the sim knows its step's parts (tuner.sim.model.memory_floor_s and step_parts).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.probe.ceiling import CeilingInputs, ceiling
from tuner.probe.model_config import probe_model_config
from tuner.probe.weights import decode_weight_bytes
from tuner.sim import PROFILES, SimSettings, parse_settings
from tuner.sim.model import (
    ceiling_tokens_per_s,
    expected_output_throughput,
    memory_floor_s,
    step_parts,
)
from tuner.sim.probe import allreduce_us
from tuner.space.spec import DEFAULT, load_space

SIM_YAML = Path(__file__).parents[2] / "search_spaces" / "sim.yaml"
KIMI = PROFILES["kimi-k2.5-int4-tp8"]
SIZE_1 = 7168 * 2


def _sim(env: dict[str, str]) -> SimSettings:
    return parse_settings(["--profile", KIMI.name, "--port", "1"], env)


def _probed_us() -> dict[str, float]:
    """The sim probe's all-reduce time for the defaults and each NCCL value of sim.yaml."""
    space = load_space(SIM_YAML)
    times = {"": allreduce_us(KIMI, _sim({}), SIZE_1)}
    for param in space.spec.params.values():
        if param.env is None:
            continue
        for value in param.choices or ():
            if value != DEFAULT:
                env = {param.env: str(value)}
                times[f"{param.env}={value}"] = allreduce_us(KIMI, _sim(env), SIZE_1)
    return times


def test_the_seeds_single_stream_rate() -> None:
    assert expected_output_throughput(KIMI, SimSettings(), 1) == pytest.approx(81.4, rel=0.01)


def test_the_memory_floor_fits_inside_the_step_s_compute_part() -> None:
    compute, _ = step_parts(KIMI, SimSettings(), 1)
    memory = memory_floor_s(KIMI, SimSettings())
    assert memory is not None and 0.5 * compute < memory < compute


def test_tuner_s_weight_count_agrees_with_the_profile_s_figure() -> None:
    config = probe_model_config(load_space(SIM_YAML))
    assert config is not None
    counted = decode_weight_bytes(config, 8).bytes_per_gpu
    assert counted == pytest.approx(KIMI.decode_weight_bytes_per_gpu, rel=0.05)


def test_tuner_s_ceiling_is_the_sim_s_within_five_percent() -> None:
    space = load_space(SIM_YAML)
    probe = space.spec.probe
    assert probe is not None and isinstance(probe.layers, int)
    config = probe_model_config(space)
    assert config is not None
    times = _probed_us()
    best = min(times, key=lambda k: times[k])
    measured = expected_output_throughput(KIMI, SimSettings(), 1)
    tuner = ceiling(
        CeilingInputs(
            weight_bytes_per_gpu=decode_weight_bytes(config, 8).bytes_per_gpu,
            memory_bandwidth_gbps=probe.memory_bandwidth_gbps,
            allreduces_per_token=probe.layers * probe.allreduces_per_layer,
            best_us=times[best],
            own_us=times[""],
            measured_tokens_per_s=measured,
            other_settings=True,
        )
    )
    best_env = dict([best.split("=", 1)]) if best else {}
    truth = ceiling_tokens_per_s(KIMI, _sim(best_env))
    assert truth is not None and tuner.bound_tokens_per_s is not None
    assert tuner.bound_tokens_per_s == pytest.approx(truth, rel=0.05)
    assert tuner.share == pytest.approx(measured / truth, rel=0.05)
    # The bound sits above the seeds' 81.4 tok/s, and the gap the study could close is
    # what the floors leave of the step.
    assert 81.4 < tuner.bound_tokens_per_s < 100
    assert tuner.max_gain == pytest.approx(truth / measured - 1, abs=0.01)
    assert "no launch setting of this study can give more than" in tuner.sentence
