"""The sweep's decisions at scale, without a process: many seeded studies with a fake runner.

Each study is a real ``run_sweep`` of search_spaces/sim.yaml's params, constraint and stop
rule, but every launch is drawn by ``tests.fakes.FakeRunner`` from the simulator's
noise-free truth (``tuner.sim.relative_speed``, the truth benchmarks/search_efficiency.py
scores against) with Gaussian between-launch and within-launch noise. A study takes a
second or two instead of a minute, so a rule of the sweep (the futility stop's threshold
and its floor of search trials) can be measured over a hundred studies before the slow,
real benchmark confirms it. It measures the decisions only: no launcher, no HTTP.

    python benchmarks/search_fake.py                                 # 40 studies per case
    python benchmarks/search_fake.py --futility 0 --studies 60       # the plateau rule alone
    python benchmarks/search_fake.py --min-trials 2 --noise 0.01     # another floor, 1% noise
    python benchmarks/search_fake.py --cases hidden-gain,flat,interaction --noise 0.01 --trace
    python benchmarks/search_fake.py --max-confirmations 1 --baseline-launches 3   # stop rules
    python benchmarks/search_fake.py --cases hidden-gain,flat,interaction --noise 0.01 --probe

``--trace`` prints each study's launches by role (b baseline, s search, c confirm, x
simplify; in capitals when the configuration is within 2% of the optimum). Cases: flat,
hidden-gain and interaction, as in search_efficiency.py. ``--probe`` adds sim.yaml's
all-reduce probe on the case's profile, with a comm share of 0.67 given (the fake
runner's tok/s are not the profile's, so the share cannot be measured).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

CASES = {
    "flat": (20, 1.0),
    "hidden-gain": (30, 1.08),
    "interaction": (30, 1.07 * 1.025),
}  # budget, optimum
WITHIN = 0.98
ROLE_LETTERS = {"baseline": "b", "search": "s", "confirm": "c", "simplify": "x"}


def run_case(case: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    from tests.fakes import FakeRunner
    from tuner.sim import parse_settings, relative_speed
    from tuner.space.settings import settings_from_params
    from tuner.space.spec import load_space
    from tuner.storage import Store
    from tuner.study.policy import futility
    from tuner.study.run.sweep import run_sweep
    from tuner.views.best import best_report

    if args.min_trials is not None:
        futility.MIN_TRIALS = args.min_trials  # a diagnostic override of the floor
    budget, optimum = CASES[case]
    base = yaml.safe_load((ROOT / "search_spaces" / "sim.yaml").read_text())
    stop = {**base["stop"], "futility": args.futility}
    if args.baseline_launches is not None:
        stop["baseline_launches"] = args.baseline_launches
    if args.max_confirmations is not None:
        stop["max_confirmations"] = args.max_confirmations
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "space.yaml"
        space_dict = {
            "study": f"{case}-{seed}",
            "server": {"command": ["fake", "--port", "{port}"]},
            "params": base["params"],
            "constraints": base.get("constraints", []),
            "stop": stop,
            "search": {"max_changes": args.max_changes},
        }
        if args.probe:
            # sim.yaml's probe, timing this case's own all-reduce model (docs/probe.md); the
            # fake runner's tok/s are not the profile's, so its comm share is given.
            space_dict["probe"] = {
                **base["probe"],
                "command": [
                    "{python}", "-m", "tuner.sim.probe", "--profile", case,
                    "--tensor-parallel-size", "8", "--sizes", "{sizes}",
                    "--repeats", "{repeats}",
                ],
                "comm_share": 0.67,
            }  # fmt: skip
        path.write_text(yaml.safe_dump(space_dict))
        space = load_space(path)

        @cache
        def truth(key: tuple[tuple[str, str], ...]) -> float:
            settings = settings_from_params(space.spec, dict(key))
            sim = parse_settings(["--profile", case, "--port", "1", *settings.args], settings.env)
            return relative_speed(case, sim, 1)

        def speed(params: dict[str, Any]) -> float:
            return 100.0 * truth(tuple(sorted((k, str(v)) for k, v in params.items())))

        storage = f"sqlite:///{tmp}/s.db"
        runner = FakeRunner(
            Store(storage),
            space.study_name,
            speed=speed,
            between=args.noise,
            within=args.noise,
            seed=seed,
        )
        result = run_sweep(space, storage=storage, n_trials=budget, seed=seed, runner=runner)
        report = best_report(storage, space.study_name)
        rec = report.recommended
        assert rec is not None
        true = speed(dict(rec.params)) / 100.0
        return {
            "case": case,
            "seed": seed,
            "stop": result.stop_reason,
            "launched": result.launched,
            "keep_defaults": bool(report.keep_defaults),
            "within": true >= WITHIN * optimum - 1e-12,
            # A launch of a configuration within 2% of the optimum is in capitals.
            "roles": "".join(
                letter.upper() if speed(changed) / 100.0 >= WITHIN * optimum - 1e-12 else letter
                for letter, changed in (
                    (ROLE_LETTERS.get(role, "?"), changed) for role, changed in runner.launched
                )
            )
            if optimum > 1.0
            else "".join(ROLE_LETTERS.get(role, "?") for role, _ in runner.launched),
        }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="flat,hidden-gain")
    p.add_argument("--studies", type=int, default=40)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--noise", type=float, default=0.004, help="rel sd of each kind of noise")
    p.add_argument("--futility", type=float, default=0.05, help="stop.futility (0: off)")
    p.add_argument("--min-trials", type=int, default=None, help="override futility.MIN_TRIALS (5)")
    p.add_argument("--max-changes", type=int, default=3, help="search.max_changes")
    p.add_argument("--max-confirmations", type=int, default=None, help="stop.max_confirmations")
    p.add_argument("--baseline-launches", type=int, default=None, help="stop.baseline_launches")
    p.add_argument("--trace", action="store_true", help="print each study's launch roles")
    p.add_argument("--probe", action="store_true", help="sim.yaml's probe, on the case's profile")
    args = p.parse_args()
    print(
        f"search_fake: noise {args.noise:g} each kind, futility {args.futility:g}, "
        f"min trials {args.min_trials or 'default'}, probe {'on' if args.probe else 'off'}, "
        f"seeds {args.first_seed}..{args.first_seed + args.studies - 1}"
    )
    for case in args.cases.split(","):
        t0 = time.monotonic()
        rows = [
            run_case(case, s, args) for s in range(args.first_seed, args.first_seed + args.studies)
        ]
        n = len(rows)
        if args.trace:
            for r in rows:
                ok = r["keep_defaults"] if case == "flat" else r["within"]
                print(
                    f"  seed {r['seed']:>3} {'ok  ' if ok else 'MISS'} {r['stop']:<8} {r['roles']}"
                )
        used = [r["launched"] for r in rows]
        reasons: dict[str, int] = {}
        for r in rows:
            reasons[r["stop"]] = reasons.get(r["stop"], 0) + 1
        score = (
            f"defaults {sum(r['keep_defaults'] for r in rows)}/{n}"
            if case == "flat"
            else f"within 2% {sum(r['within'] for r in rows)}/{n}"
        )
        missed = [
            r["seed"] for r in rows if not (r["keep_defaults"] if case == "flat" else r["within"])
        ]
        print(
            f"{case:<12} {score} (missed: seeds {missed}), "
            f"launches median {statistics.median(used):g} "
            f"mean {statistics.fmean(used):.1f} max {max(used)}; stops {reasons}; "
            f"{time.monotonic() - t0:.0f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
