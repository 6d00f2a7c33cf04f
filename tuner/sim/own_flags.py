"""The simulator's own flags: its profile, noise, faults across launches and failures.

vLLM has none of these; they shape what the simulated stack does (its speed, its noise,
its slow first launch or drift, its refusals and leaks) so tests and demos can ask for it.
"""

from __future__ import annotations

import argparse

from tuner.sim.faults import DEFAULT_DRIFT_LAUNCHES
from tuner.sim.profiles import PROFILES

DEFAULT_PROFILE = "kimi-k2.5-int4-tp8"
DEFAULT_NCCL_VERSION = "2.31.0"
DEFAULT_ROUND_STEPS = 384  # benchmarks/search_efficiency.py's round: 3 requests x 128 tokens
# A dummy launch's throughput against the real weights: x (1 + bias), and a per-launch
# log-normal part of this relative sd. No seed measures them; random weights route a MoE's
# tokens evenly over its experts and sample no stop tokens, so a small gain is plausible.
DEFAULT_DUMMY_BIAS = 0.005
DEFAULT_DUMMY_NOISE = 0.005


def add_own_flags(p: argparse.ArgumentParser) -> None:
    """Add the simulator-only flags and the faults across launches to ``p``."""
    sim = p.add_argument_group("simulator-only flags")
    sim.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        choices=sorted(PROFILES),
        help=f"speed/behaviour profile (default {DEFAULT_PROFILE})",
    )
    sim.add_argument(
        "--load-seconds",
        type=float,
        default=2.0,
        help="wall-clock seconds the model load takes (default 2.0; "
        "not multiplied by --time-scale)",
    )
    sim.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the per-launch speed offset and step noise (default random)",
    )
    sim.add_argument(
        "--launch-noise",
        type=float,
        default=None,
        metavar="SD",
        help="relative sd of a launch's mean throughput between launches, a fraction "
        "(0.01: 1%%; default: the profile's, 0.4%%)",
    )
    sim.add_argument(
        "--round-noise",
        type=float,
        default=None,
        metavar="SD",
        help="relative sd of one benchmark round's mean throughput within a launch, a "
        "fraction, for rounds of --round-steps steps (default: the profile's slow drift)",
    )
    sim.add_argument(
        "--round-steps",
        type=int,
        default=DEFAULT_ROUND_STEPS,
        metavar="N",
        help="engine steps in one benchmark round, for --round-noise (about requests x "
        f"max_tokens / concurrency; default {DEFAULT_ROUND_STEPS}: 3 x 128 at concurrency 1)",
    )
    sim.add_argument(
        "--dummy-bias",
        type=float,
        default=DEFAULT_DUMMY_BIAS,
        metavar="B",
        help="with --load-format dummy: throughput x (1 + B) against the real weights, a "
        f"fraction (default {DEFAULT_DUMMY_BIAS:g}: 0.5%% faster)",
    )
    sim.add_argument(
        "--dummy-noise",
        type=float,
        default=DEFAULT_DUMMY_NOISE,
        metavar="SD",
        help="with --load-format dummy: relative sd of that factor from launch to launch, "
        f"drawn from --seed like --launch-noise (default {DEFAULT_DUMMY_NOISE:g})",
    )
    faults = p.add_argument_group(
        "faults across launches",
        "A slow first launch and a drift over launches; they need --launch-index-file, which "
        "counts the launches. Fractions like --launch-noise (0.05: 5%); all off by default.",
    )
    faults.add_argument(
        "--launch-index-file",
        default=None,
        metavar="PATH",
        help="a counter of launches: each start reads its launch index from PATH (0 when "
        "missing or empty) and writes index + 1 back, under an exclusive flock; give it "
        "'{study_dir}/sim-launches' in a space file",
    )
    faults.add_argument(
        "--cold-first-launch",
        type=float,
        default=0.0,
        metavar="F",
        help="launch 0 runs with throughput x (1 - F): its decode and prefill steps take "
        "1 / (1 - F) as long, as with a cold page or compile cache (0.05: 5%% slower; "
        "default 0)",
    )
    faults.add_argument(
        "--drift",
        type=float,
        default=0.0,
        metavar="D",
        help="launch k runs with throughput x (1 - D x min(k, N) / N), N = --drift-launches: "
        "positive D slows down over launches (a machine that throttles or gets busier), "
        "negative D speeds up (one that warms) (default 0)",
    )
    faults.add_argument(
        "--drift-launches",
        type=int,
        default=DEFAULT_DRIFT_LAUNCHES,
        metavar="N",
        help=f"launches over which --drift builds up, then stays (default "
        f"{DEFAULT_DRIFT_LAUNCHES})",
    )
    cache = p.add_argument_group(
        "the page cache",
        "The weights' read follows the host's page cache (tuner/sim/page_cache.py); off "
        "without --host-ram-gib, when every load takes the profile's figure.",
    )
    cache.add_argument(
        "--host-ram-gib",
        type=float,
        default=None,
        metavar="GIB",
        help="the host's RAM: the page cache holds 90%% of it; weights larger than that are "
        "read from the disk on every load (the seeds' box: 477, 512 GB; default: off)",
    )
    cache.add_argument(
        "--page-cache-file",
        default=None,
        metavar="PATH",
        help="what the page cache holds between launches: a second load of the same weights "
        "reads what the first left cached; give it '{study_dir}/page-cache' in a space file "
        "(default: every load is a first, cold one)",
    )
    sim.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="multiply every simulated engine duration by F (default 1.0)",
    )
    sim.add_argument(
        "--nccl-version",
        default=DEFAULT_NCCL_VERSION,
        help=f"NCCL version to act as (default {DEFAULT_NCCL_VERSION}; a bare "
        "NCCL_ALGO fails at warmup from 2.31 on)",
    )
    sim.add_argument(
        "--fail-at-start",
        nargs="?",
        const="simulated failure at start",
        default=None,
        metavar="MESSAGE",
        help="exit 1 before loading",
    )
    sim.add_argument(
        "--fail-after-load",
        nargs="?",
        const="simulated failure after load",
        default=None,
        metavar="MESSAGE",
        help="exit 1 after loading, before /health answers",
    )
    sim.add_argument(
        "--leave-orphan",
        action="store_true",
        help="spawn a worker in its own session that ignores SIGTERM (a leak)",
    )
    sim.add_argument(
        "--flood-log", action="store_true", help="write log lines continuously (~60 KB/s)"
    )
    sim.add_argument(
        "--no-metrics",
        action="store_true",
        help="answer 404 at /metrics, as a server without Prometheus metrics",
    )
    sim.add_argument(
        "--shm-prefix",
        default=None,
        help="create /dev/shm/<prefix>_sim_<pid>, removed on clean shutdown",
    )
