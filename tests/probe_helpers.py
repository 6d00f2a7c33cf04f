"""Studies against the simulator's speed model and its probe, without starting a process.

``sim_speed`` is a FakeRunner speed function: the sim's noise-free throughput of a
configuration (its env and args through the sim's own parser). ``sim_probe`` is a probe
runner that times the sim's all-reduce the way ``python -m tuner.sim.probe`` does, with
its small noise. ``nccl_space`` is the NCCL part of search_spaces/nccl.yaml (optionally
with its vLLM params) and a probe section sized for Kimi K2.5 at concurrency 1.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from tuner.probe.run import ProbeResult
from tuner.sim import expected_output_throughput, parse_settings
from tuner.sim.probe import DEFAULT_NOISE, allreduce_us
from tuner.sim.profiles import get_profile
from tuner.space.settings import settings_from_params
from tuner.space.spec import SHIPPED_SPACES, SpaceSpec

KIMI_SIZE = 7168 * 2  # one stream's all-reduce message: hidden 7168 in bf16
NCCL_PARAMS = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_BUFFSIZE",
    "NCCL_P2P_LEVEL",
    "NCCL_NTHREADS",
    "CUDA_DEVICE_MAX_CONNECTIONS",
)


def nccl_space(*, with_vllm_params: bool = False, probe: bool = True, **overrides: Any) -> dict:  # type: ignore[type-arg]
    """nccl.yaml's params (NCCL only, unless asked), constraint and stop rule."""
    shipped = yaml.safe_load((SHIPPED_SPACES / "nccl.yaml").read_text())
    params = {k: v for k, v in shipped["params"].items() if with_vllm_params or k in NCCL_PARAMS}
    space: dict[str, Any] = {
        "study": "p",
        "server": {"command": ["srv", "--port", "{port}"]},
        "params": params,
        "constraints": shipped["constraints"],
        "benchmark": {"concurrency": [1]},
        "objective": {"metric": "output_throughput", "concurrency": 1},
        "stop": shipped["stop"],
    }
    if probe:
        space["probe"] = {"command": ["unused"], "sizes": [KIMI_SIZE], "layers": 61}
    space.update(overrides)
    return space


def write(tmp_path: Path, space: Mapping[str, Any]) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(dict(space), sort_keys=False))
    return path


def _sim_settings(profile: str, env: Mapping[str, str], args: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    return parse_settings(["--profile", profile, "--port", "1", *args], dict(env), strict=False)


def sim_speed(spec: SpaceSpec, profile: str) -> Callable[[Mapping[str, Any]], float]:
    """The sim's noise-free output tok/s at concurrency 1 for a configuration's params."""

    def speed(params: Mapping[str, Any]) -> float:
        settings = settings_from_params(spec, params)
        sim = _sim_settings(profile, settings.env, settings.args)
        return expected_output_throughput(profile, sim, 1, prompt_tokens=0, output_tokens=256)

    return speed


def sim_probe(
    profile: str,
    *,
    seed: int = 0,
    noise: float = DEFAULT_NOISE,
    repeats: int = 5,
    sizes: tuple[int, ...] = (KIMI_SIZE,),
) -> Callable[[Mapping[str, str], frozenset[str]], ProbeResult]:
    """A probe runner timing the sim's all-reduce at ``sizes``, like `python -m
    tuner.sim.probe`."""
    rng = random.Random(seed)
    calls: list[dict[str, str]] = []

    def run(env: Mapping[str, str], unset: frozenset[str]) -> ProbeResult:
        calls.append(dict(env))
        sim = _sim_settings(profile, env)
        samples = {}
        for size in sizes:
            mean = allreduce_us(profile, sim, size)
            samples[size] = tuple(mean * math.exp(rng.gauss(0.0, noise)) for _ in range(repeats))
        world = sim.tensor_parallel_size or get_profile(profile).default_tp
        return ProbeResult(samples=samples, extra={"backend": "sim", "world_size": world})

    run.calls = calls  # type: ignore[attr-defined]
    return run
