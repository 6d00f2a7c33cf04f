"""Screening a MoE model with and without vLLM's routing simulation (issue 41, point 5).

On random weights the simulator's Kimi profile routes every token to the same experts
(tuner/sim/routing.py): above one stream a screening launch reads fewer experts, spends a
larger share of its step in all-reduce, and NCCL settings move it more than a full
launch. ``VLLM_MOE_ROUTING_SIMULATION_STRATEGY=uniform_random`` (``screening.moe_routing``)
gives the dummy step the trained router's spread. Two measurements:

1. The truth: over the kimi case's configurations (every single change from the defaults
   and 300 random ones of nccl.yaml's params plus --max-num-seqs and
   --max-num-batched-tokens, tests of the sim's noise-free model), the share of pairs a
   dummy launch orders as a full one does, with and without the simulation, and how much
   larger NCCL_PROTO=Simple's effect looks on a dummy launch.
2. Studies: benchmarks/search_fake.py's kimi case, screened, its truth at ``--concurrency``
   streams, each screening launch drawn from the sim's dummy launch with the env tuner
   gives it (``launch_spec_for``: ``screening.moe_routing`` uniform_random or off), plus
   the fake runner's noise. For each cell, the rank agreement `tuner best` prints (pairs
   screening ordered as full launches did, summed over the studies), the hit rate (the
   answer within 2% of the optimum) and the full loads.

    python benchmarks/moe_routing.py --studies 30 --jobs 2
    python benchmarks/moe_routing.py --studies 10 --concurrency 64 --noise 0.01
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_fake import Options, _space_params, run_seeds  # noqa: E402

from tuner.stats import clopper_pearson_lower  # noqa: E402

VAR = "VLLM_MOE_ROUTING_SIMULATION_STRATEGY"
PROFILE = "kimi-k2.5-int4-tp8"


def configurations(randoms: int, seed: int = 0) -> list[dict[str, Any]]:
    """The defaults, every single change, and ``randoms`` random valid configurations."""
    params = _space_params("kimi")
    base = {name: "default" for name in params}
    found = [base] + [
        {**base, name: choice} for name, p in params.items() for choice in p["choices"][1:]
    ]
    rng = random.Random(seed)
    while len(found) < randoms + 1 + sum(len(p["choices"]) - 1 for p in params.values()):
        config = {name: rng.choice(p["choices"]) for name, p in params.items()}
        low, high = config["NCCL_MIN_NCHANNELS"], config["NCCL_MAX_NCHANNELS"]
        if "default" in (low, high) or int(low) <= int(high):  # the space's constraint
            found.append(config)
    return found


def truth(concurrency: int) -> dict[str, float]:
    """Noise-free: dummy launches' agreement with full ones, and an NCCL effect's scale."""
    from tuner.sim import parse_settings
    from tuner.sim.model import expected_output_throughput
    from tuner.space.settings import settings_from_params
    from tuner.space.spec import parse_space

    params = _space_params("kimi")
    command = ["fake", "--port", "{port}", "--tensor-parallel-size", "8"]
    spec = parse_space({"server": {"command": command}, "params": params}, Path("t.yaml")).spec

    def speed(config: dict[str, Any], extra: list[str], env: dict[str, str]) -> float:
        settings = settings_from_params(spec, config)
        argv = ["--profile", PROFILE, *settings.args, *extra]
        sim = parse_settings(argv, {**settings.env, **env})
        return expected_output_throughput(PROFILE, sim, concurrency)

    configs = configurations(300)
    dummy = ["--load-format", "dummy"]
    full = [speed(c, [], {}) for c in configs]
    out: dict[str, float] = {}
    for name, env in (("off", {}), ("uniform_random", {VAR: "uniform_random"})):
        screen = [speed(c, dummy, env) for c in configs]
        pairs = concordant = 0
        for i, j in itertools.combinations(range(len(configs)), 2):
            df, ds = full[i] - full[j], screen[i] - screen[j]
            if df == 0 and ds == 0:
                continue
            pairs += 1
            concordant += df * ds > 0
        out[f"agree_{name}"] = concordant / pairs
        simple = {**configs[0], "NCCL_PROTO": "Simple"}
        out[f"simple_{name}"] = speed(simple, dummy, env) / speed(configs[0], dummy, env) - 1
    out["simple_full"] = speed(simple, [], {}) / full[0] - 1
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=30)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--noise", default="0.01", help="between- and within-launch rel sd")
    p.add_argument("--concurrency", default="8", help="the truth's streams, comma-separated")
    p.add_argument("--modes", default="off,uniform_random", help="screening.moe_routing")
    args = p.parse_args()
    print(
        "| streams | noise | moe_routing | truth: pairs agreeing | NCCL_PROTO=Simple "
        "(full) | rank agreement (pairs) | studies with a pair | hit rate | lower bound "
        "| full loads median/max | s |"
    )
    print("|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for concurrency in (int(c) for c in args.concurrency.split(",")):
        facts = truth(concurrency)
        for noise in (float(n) for n in args.noise.split(",")):
            for mode in args.modes.split(","):
                t0 = time.monotonic()
                options = Options(
                    noise=noise, screening=True, concurrency=concurrency, moe_routing=mode
                )
                rows = run_seeds("kimi", range(args.studies), options, jobs=args.jobs)
                ranks = [r["ranks"] for r in rows if r["ranks"] is not None]
                concordant = sum(c for c, _ in ranks)
                pairs = sum(n for _, n in ranks)
                hits = sum(r["within"] for r in rows)
                fulls = [r["full"] for r in rows]
                agree = f"{concordant}/{pairs} ({concordant / pairs:.2f})" if pairs else "0/0"
                print(
                    f"| {concurrency} | {noise:.0%} | {mode} | "
                    f"{facts[f'agree_{mode}']:.3f} | "
                    f"{facts[f'simple_{mode}']:+.2%} ({facts['simple_full']:+.2%}) | {agree} | "
                    f"{sum(1 for _, n in ranks if n)}/{len(rows)} | {hits}/{len(rows)} | "
                    f"{clopper_pearson_lower(hits, len(rows)):.3f} | "
                    f"{statistics.median(fulls):g}/{max(fulls)} | "
                    f"{time.monotonic() - t0:.0f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
