"""What failed launches teach the search: launches spent on failures, with and without it.

Each study is a real ``run_sweep`` of search_spaces/memory-sim.yaml (its params and stop
rule, 20 launches), every launch drawn by ``tests.fakes.FakeRunner``: a configuration the
simulator's ``memory-tight`` profile refuses fails as the launcher would report it
(``tests.fakes.sim_startup_error``: vLLM's error lines, the log's moment, the cause the
launcher reads), the others measure the profile's noise-free speed at one stream
(``tuner.sim.relative_speed``) with Gaussian noise between and within launches
(``--noise``, the relative sd of each). The failing region (docs/simulator.md,
"memory-tight"): ``max_num_seqs`` 512 and 1024 whatever else is set, and
``max_num_batched_tokens=16384`` with ``gpu_memory_utilization=0.8``; ``NCCL_PROTO=LL`` is
the answer to find (5% faster).

Cells: noise 1% and 2%, the learning on (``search.learn_from_failures: true``, the default)
and off (every proposal launched, as before the learning), ``--studies`` seeded studies each
(30). A row gives the launches spent on failures (median, p90 and max, nearest rank), the
studies that spent at most 3 (the target) with the exact one-sided 95% lower bound
(Clopper-Pearson, tuner.stats), the studies whose search launched a configuration within 2%
of the optimum (the best configuration that starts: found it, whatever the final comparison
then said), the hit rate (the answer within 2% of the optimum) with its lower bound, the
answers (confirmed / no gain / not settled), the stops, and the cell's wall seconds.

    python benchmarks/failure_learning.py                        # 4 cells x 30 studies
    python benchmarks/failure_learning.py --noise 0.01 --learning on --studies 5 --trace
    python benchmarks/failure_learning.py --jobs 1 --studies 2   # a smoke run

``--trace`` prints each study's launches: ``b`` baseline, ``s`` search, ``c`` confirm, ``x``
simplify, ``f`` final, in capitals when the configuration is within 2% of the optimum, ``!``
for a launch that failed. A study takes a few seconds of one core.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import yaml  # noqa: E402
from search_fake import ROLE_LETTERS, WITHIN, percentile, study_verdict  # noqa: E402

from tuner.stats import clopper_pearson_lower  # noqa: E402

PROFILE = "memory-tight"
SPACE = ROOT / "search_spaces" / "memory-sim.yaml"
BUDGET = 20
TARGET = 3  # launches spent on failures a study may spend (issue 41)
NOISES = (0.01, 0.02)
CONFIDENCE = 0.95


@cache
def _space_file() -> dict[str, Any]:
    return yaml.safe_load(SPACE.read_text())


def _sim_args(params: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment memory-sim.yaml gives these params."""
    from tuner.space.settings import settings_from_params

    settings = settings_from_params(_spec(), params)
    return list(settings.args), dict(settings.env)


@cache
def _spec() -> Any:
    from tuner.space.spec import parse_space

    raw = _space_file()
    return parse_space(
        {"server": {"command": ["fake", "--port", "{port}"]}, "params": raw["params"]},
        Path("memory-sim.yaml"),
    ).spec


@cache
def _truth(key: tuple[tuple[str, str], ...]) -> float:
    """The profile's noise-free speed at one stream over the defaults'; 0 where it fails."""
    from tests.fakes import sim_startup_error
    from tuner.sim import parse_settings, relative_speed

    args, env = _sim_args(dict(key))
    if sim_startup_error(PROFILE, args, env) is not None:
        return 0.0
    sim = parse_settings(["--profile", PROFILE, "--port", "1", *args], env)
    return relative_speed(PROFILE, sim, 1)


def _key(params: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in params.items()))


@cache
def optimum() -> float:
    """The best configuration that starts, over the whole grid."""
    params = _space_file()["params"]
    names = list(params)
    return max(
        _truth(_key(dict(zip(names, values, strict=True))))
        for values in itertools.product(*(params[n]["choices"] for n in names))
    )


def run_study(noise: float, learning: bool, seed: int) -> dict[str, Any]:
    """One seeded study: launches, failures, the answer's true speed and verdict."""
    from tests.fakes import FakeRunner, sim_startup_error
    from tuner.space.spec import load_space
    from tuner.storage import Store
    from tuner.study.run.request import RunRequest, Seams
    from tuner.study.run.sweep import run_sweep
    from tuner.views.best import best_report

    t0 = time.monotonic()
    raw = _space_file()
    failed: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "space.yaml"
        path.write_text(
            yaml.safe_dump(
                {
                    "study": f"memory-{noise:g}-{'on' if learning else 'off'}-{seed}",
                    "server": {"command": ["fake", "--port", "{port}"]},
                    "params": raw["params"],
                    "stop": raw["stop"],
                    "search": {"learn_from_failures": learning},
                }
            )
        )
        space = load_space(path)
        storage = f"sqlite:///{tmp}/s.db"

        def speed(params: dict[str, Any]) -> float:
            return 100.0 * _truth(_key(params))

        def fail(params: dict[str, Any]) -> Any:
            args, env = _sim_args(params)
            error = sim_startup_error(PROFILE, args, env)
            if error is not None:
                failed.append(runner.launches - 1)  # this launch's index
            return error

        runner = FakeRunner(
            Store(storage),
            space.study_name,
            speed=speed,
            fail=fail,
            between=noise,
            within=noise,
            seed=seed,
        )
        result = run_sweep(space, RunRequest(storage, BUDGET, seed=seed), Seams(runner=runner))
        report = best_report(storage, space.study_name)
        rec = report.recommended
        true = _truth(_key(dict(rec.params))) if rec is not None else 0.0
        best = optimum()
        roles = "".join(
            "!"
            if i in failed
            else (
                ROLE_LETTERS.get(role, "?").upper()
                if _truth(_key(_full(changed))) >= WITHIN * best - 1e-12
                else ROLE_LETTERS.get(role, "?")
            )
            for i, (role, changed) in enumerate(runner.launched)
        )
        return {
            "seed": seed,
            "stop": result.stop_reason,
            "launched": runner.launches,
            "failed": len(failed),
            "within": true >= WITHIN * best - 1e-12,
            # the search launched a configuration within 2% of the optimum (it found it,
            # whatever the final comparison then said)
            "found": any(c.isupper() for c in roles),
            "verdict": study_verdict(storage, space),
            "roles": roles,
            "seconds": time.monotonic() - t0,
        }


def _full(changed: dict[str, Any]) -> dict[str, Any]:
    """Every param, ``default`` where the launch left it."""
    return {name: changed.get(name, "default") for name in _space_file()["params"]}


def _one(job: tuple[float, bool, int]) -> dict[str, Any]:
    return run_study(*job)


def _score(ok: int, n: int) -> str:
    return f"{ok}/{n} | {clopper_pearson_lower(ok, n, CONFIDENCE):.3f}"


def _row(noise: float, learning: bool, rows: list[dict[str, Any]], seconds: float) -> str:
    spent = [r["failed"] for r in rows]
    verdicts = [r["verdict"] for r in rows]
    stops: dict[str, int] = {}
    for r in rows:
        stops[r["stop"]] = stops.get(r["stop"], 0) + 1
    launched = [r["launched"] for r in rows]
    return (
        f"| {noise:g} | {'on' if learning else 'off'} "
        f"| {statistics.median(spent):g} / {percentile(spent, 0.9):g} / {max(spent)} "
        f"| {_score(sum(s <= TARGET for s in spent), len(rows))} "
        f"| {sum(r['found'] for r in rows)}/{len(rows)} "
        f"| {_score(sum(r['within'] for r in rows), len(rows))} "
        f"| {verdicts.count('confirmed')} / {verdicts.count('no_gain')} / "
        f"{verdicts.count('not_settled')} "
        f"| {statistics.median(launched):g} "
        f"| {', '.join(f'{k} {v}' for k, v in sorted(stops.items()))} | {seconds:.0f} |"
    )


def _choices(text: str) -> list[bool]:
    names = {"on": [True], "off": [False], "both": [False, True]}
    if text not in names:
        raise argparse.ArgumentTypeError("--learning: on, off or both")
    return names[text]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=30, help="per cell (30)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--noise", default=",".join(map(str, NOISES)), help="e.g. 0.01,0.02")
    p.add_argument("--learning", type=_choices, default=[False, True], help="on, off, both")
    p.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    p.add_argument("--trace", action="store_true", help="each study's launches")
    args = p.parse_args()
    noises = [float(x) for x in args.noise.split(",") if x]
    seeds = range(args.first_seed, args.first_seed + args.studies)
    print(
        f"failure_learning: {SPACE.relative_to(ROOT)} on the {PROFILE} profile, {BUDGET} "
        f"launches a study, {len(seeds)} studies a cell (seeds {seeds[0]}..{seeds[-1]}), "
        f"optimum {optimum():.4f} x the defaults, jobs {args.jobs}"
    )
    print()
    print(
        f"| noise | learning | failed launches med / p90 / max | at most {TARGET} | 95% lower "
        "| optimum launched | within 2% | 95% lower | confirmed / no gain / not settled "
        "| launches med | stops | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    pool = ProcessPoolExecutor(max_workers=args.jobs) if args.jobs > 1 else None
    traces = []
    try:
        for noise in noises:
            for learning in args.learning:
                jobs = [(noise, learning, seed) for seed in seeds]
                t0 = time.monotonic()
                rows = list(pool.map(_one, jobs)) if pool else [_one(j) for j in jobs]
                print(_row(noise, learning, rows, time.monotonic() - t0), flush=True)
                traces += [(noise, learning, r) for r in rows]
    finally:
        if pool is not None:
            pool.shutdown()
    if args.trace:
        print()
        for noise, learning, r in traces:
            print(
                f"{noise:g} {'on ' if learning else 'off'} seed {r['seed']:>3} "
                f"failed {r['failed']} {r['roles']} {r['verdict']} {r['stop']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
