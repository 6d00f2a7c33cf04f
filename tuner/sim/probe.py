"""The simulator's all-reduce probe: ``python -m tuner.sim.probe --profile P --sizes ...``.

It speaks the probe contract of docs/probe.md (one JSON object on stdout, microseconds
per all-reduce by message size, one sample per repeat) and times the all-reduce part of
the simulated decode step, :func:`tuner.sim.model.step_parts`, so that a probe and the
simulated server agree: the NCCL variables it reads from its environment change the probe
exactly as they change the server's throughput, per profile. A bonus whose conditions are
all NCCL settings (the ``hidden-gain`` and ``nccl-gain`` profiles) is taken to act on the
all-reduces. A message of ``size`` bytes is the all-reduce of a batch of ``size /
(hidden_size x bytes per element)`` streams; a step makes two all-reduces per layer.
Like NCCL, it fails on a variable NCCL rejects and on an algorithm set that leaves
vLLM's collectives nothing. Each sample has its own small noise (``--noise``, relative sd).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
from collections.abc import Mapping, Sequence

from tuner.nccl import NcclEnvError
from tuner.sim.geometry import geometry
from tuner.sim.model import features, step_parts
from tuner.sim.nccl import parse_nccl_env, warmup_failure
from tuner.sim.nccl_tuner_plugin import read_table
from tuner.sim.profiles import PROFILES, Profile, get_profile
from tuner.sim.settings import DEFAULT_NCCL_VERSION, DEFAULT_PROFILE, SimSettings

NCCL_FEATURES = frozenset(
    {
        "allreduce_algo",
        "allreduce_proto",
        "min_nchannels",
        "max_nchannels",
        "buffsize",
        "nthreads",
        "cuda_device_max_connections",
    }
)
"""Features of tuner.sim.model.features that only NCCL variables set."""
SINGLE_RANK_US = 2.0
"""An all-reduce over one rank moves nothing: a launch's latency."""
DEFAULT_NOISE = 0.003


def allreduce_us(
    profile: Profile | str,
    settings: SimSettings,
    size: int,
    *,
    bytes_per_element: int = 2,
    time_scale: float = 1.0,
) -> float:
    """Noise-free microseconds of one all-reduce of ``size`` bytes with these settings."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    hidden, layers = geometry(prof)
    batch = max(1, round(size / (hidden * bytes_per_element)))
    compute, comm = step_parts(prof, settings, batch)
    if comm <= 0:
        return SINGLE_RANK_US * time_scale
    # A bonus on NCCL settings alone shortens the step through its all-reduces.
    nccl_bonus = _nccl_bonus(prof, settings)
    comm -= (compute + comm) * (1.0 - 1.0 / nccl_bonus)
    return max(comm, 0.0) / (2 * layers) * 1e6 * time_scale


def _nccl_bonus(profile: Profile, settings: SimSettings) -> float:
    feats = features(settings)
    factor = 1.0
    for bonus in profile.bonuses:
        names = {key for key, _ in bonus.conditions}
        if names <= NCCL_FEATURES and all(feats.get(k) == v for k, v in bonus.conditions):
            factor *= bonus.speedup
    return factor


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tuner.sim.probe",
        description="The simulator's all-reduce probe: prints microseconds per all-reduce "
        "by message size as JSON, with the NCCL variables of its environment applied.",
    )
    p.add_argument("--profile", default=DEFAULT_PROFILE, choices=sorted(PROFILES))
    p.add_argument("-tp", "--tensor-parallel-size", type=int, default=None)
    p.add_argument("--sizes", required=True, help="message sizes in bytes, e.g. 14336,57344")
    p.add_argument("--repeats", type=int, default=5, help="samples per size (default 5)")
    p.add_argument("--bytes-per-element", type=int, default=2)
    p.add_argument("--time-scale", type=float, default=1.0, help="as the server's")
    p.add_argument("--noise", type=float, default=DEFAULT_NOISE, help="relative sd per sample")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="repeatable noise: each NCCL setting draws its own, the same on every run",
    )
    p.add_argument("--nccl-version", default=DEFAULT_NCCL_VERSION)
    return p


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Print the probe's JSON; 1 when NCCL would fail with this environment, 2 on bad usage."""
    args = build_parser().parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        print(f"--sizes {args.sizes!r}: write byte sizes as 14336,57344", file=sys.stderr)
        return 2
    if not sizes or min(sizes) < 1 or args.repeats < 1:
        print("--sizes and --repeats must be positive", file=sys.stderr)
        return 2
    try:
        nccl, _ = parse_nccl_env(os.environ if env is None else env)
    except NcclEnvError as exc:
        print(f"NCCL WARN {exc.warn}", file=sys.stderr)
        return 1
    failure = warmup_failure(nccl, args.nccl_version)
    if failure:
        print(f"NCCL WARN {failure}", file=sys.stderr)
        return 1
    settings = SimSettings(
        profile=args.profile,
        tensor_parallel_size=args.tensor_parallel_size,
        nccl=nccl,
        nccl_tuner=read_table(os.environ if env is None else env),
    )
    # Seeded with the NCCL variables too: a setting's samples repeat run after run, and two
    # settings do not share one draw (which would hide the noise of their difference).
    nccl_vars = sorted(
        (k, v) for k, v in (os.environ if env is None else env).items() if k.startswith("NCCL_")
    )
    rng = random.Random(None if args.seed is None else f"{args.seed}:{nccl_vars}")
    samples = {}
    for size in sizes:
        mean = allreduce_us(
            args.profile,
            settings,
            size,
            bytes_per_element=args.bytes_per_element,
            time_scale=args.time_scale,
        )
        samples[str(size)] = [
            mean * math.exp(rng.gauss(0.0, args.noise)) for _ in range(args.repeats)
        ]
    out = {
        "sizes": {k: sum(v) / len(v) for k, v in samples.items()},
        "samples": samples,
        "backend": "sim",
        "profile": args.profile,
        "world_size": settings.tensor_parallel_size or get_profile(args.profile).default_tp,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
