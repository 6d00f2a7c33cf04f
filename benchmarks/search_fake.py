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
    python benchmarks/search_fake.py --cases flat --patience 16 --budget 30 --jobs 2
    python benchmarks/search_fake.py --cases flat --cold-first 0.05 --drift -0.03   # a warming box

``--trace`` prints each study's launches by role (b baseline, s search, c confirm, x
simplify; in capitals when the configuration is within 2% of the optimum). Cases: flat,
hidden-gain and interaction, as in search_efficiency.py. ``--probe`` adds sim.yaml's
all-reduce probe on the case's profile, with a comm share of 0.67 given (the fake
runner's tok/s are not the profile's, so the share cannot be measured).

``--cold-first`` and ``--drift`` over ``--drift-launches`` are the faults across launches of
tuner/sim/faults.py, applied by the fake runner by its own count of launches (a negative
drift is a machine that warms up: later launches are faster, which makes false gains).
``--patience`` and ``--budget`` override sim.yaml's stop.patience and the case's launch
budget; ``--jobs`` runs a case's seeds in that many processes (each study has its own
folder and SQLite file, so they are independent and the results the same as with one).
benchmarks/false_gains.py calls :func:`run_case` / :func:`run_seeds` with :class:`Options`.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from tuner.sim.faults import DEFAULT_DRIFT_LAUNCHES  # noqa: E402

CASES = {
    "flat": (20, 1.0),
    "hidden-gain": (30, 1.08),
    "interaction": (30, 1.07 * 1.025),
    # Issue 24's cases: nccl.yaml's params plus max-num-seqs and max-num-batched-tokens
    # (VLLM_PARAMS), on the kimi profile and with the hidden gains in vLLM flags.
    "kimi": (30, 0.0),  # optimum: computed (kimi_optimum), about 1.009
    "hidden-vllm": (30, 1.08),
    "interaction-vllm": (30, 1.07 * 1.025),
}  # budget, optimum
VLLM_PARAMS = {
    "max_num_seqs": {"args": ["--max-num-seqs", "{value}"], "choices": ["default", 64, 128, 256]},
    "max_num_batched_tokens": {
        "args": ["--max-num-batched-tokens", "{value}"],
        "choices": ["default", 2048, 16384],
    },
}
_VLLM_HIDDEN = (
    ("max_num_seqs", "128"),  # --max-num-seqs 128
    ("max_num_batched_tokens", "16384"),  # --max-num-batched-tokens 16384
    ("custom_all_reduce", "off"),  # --disable-custom-all-reduce
)


@cache
def _profiles() -> dict[str, Any]:
    """The cases' sim profiles: the shipped ones, and the hidden gains moved to vLLM flags
    (the same shapes as hidden-gain and interaction: 2.5% each, 8% all three; a pair at 2%
    each and 7% together, plus 2.5% that adds)."""
    from dataclasses import replace

    from tuner.sim.profiles import FLAT, Bonus

    single = 1.025
    hidden = replace(
        FLAT,
        name="hidden-vllm",
        bonuses=tuple(Bonus((c,), single) for c in _VLLM_HIDDEN)
        + (Bonus(_VLLM_HIDDEN, 1.08 / single**3),),
    )
    pair = _VLLM_HIDDEN[:2]
    interaction = replace(
        FLAT,
        name="interaction-vllm",
        bonuses=tuple(Bonus((c,), 1.02) for c in pair)
        + (Bonus(pair, 1.07 / 1.02**2), Bonus((_VLLM_HIDDEN[2],), 1.025)),
    )
    return {"hidden-vllm": hidden, "interaction-vllm": interaction, "kimi": "kimi-k2.5-int4-tp8"}


def _space_params(case: str) -> dict[str, Any]:
    """sim.yaml's params, or, for issue 24's cases, nccl.yaml's plus VLLM_PARAMS."""
    if case in _profiles():
        nccl = yaml.safe_load((ROOT / "search_spaces" / "nccl.yaml").read_text())
        return {**nccl["params"], **VLLM_PARAMS}
    return yaml.safe_load((ROOT / "search_spaces" / "sim.yaml").read_text())["params"]


def probe_profile(case: str) -> str:
    """The sim profile whose all-reduce the probe times for ``case``: the case's own, or for
    issue 24's hidden-gain cases (FLAT with bonuses on vLLM flags only), flat's, their NCCL
    behaviour; kimi's is the kimi profile."""
    profile = _profiles().get(case, case)
    if isinstance(profile, str):
        return profile
    return "flat"


@cache
def optimum_of(case: str, concurrency: int = 1) -> float:
    """The case's optimum: CASES' where known, else (kimi) the best of two passes of
    coordinate ascent over the case's params from the defaults (the kimi profile's effects
    do not interact, so this is its grid's best), at ``concurrency`` streams."""
    known = CASES[case][1]
    if known:
        return known
    from tuner.sim import parse_settings, relative_speed
    from tuner.space.spec import parse_space

    params = _space_params(case)
    space = parse_space(
        {"server": {"command": ["fake", "--port", "{port}"]}, "params": params}, Path("o.yaml")
    )
    from tuner.space.settings import settings_from_params

    def value(values: dict[str, Any]) -> float:
        settings = settings_from_params(space.spec, values)
        sim = parse_settings(["--profile", "flat", "--port", "1", *settings.args], settings.env)
        return relative_speed(_profiles()[case], sim, concurrency)

    current = {name: "default" for name in params}
    best = value(current)
    for _ in range(2):
        for name, p in params.items():
            for choice in p["choices"]:
                trial = {**current, name: choice}
                got = value(trial)
                if got > best:
                    best, current = got, trial
    return best


WITHIN = 0.98
ROLE_LETTERS = {"baseline": "b", "search": "s", "confirm": "c", "simplify": "x", "final": "f"}
_MIN_TRIALS: list[int] = []  # futility.MIN_TRIALS as imported, before any override


@dataclass(frozen=True)
class Options:
    """One study's knobs; a None keeps sim.yaml's stop value or the case's budget."""

    noise: float = 0.004  # rel sd of each kind of noise (between and within launches)
    futility: float = 0.05  # stop.futility (0: off)
    min_trials: int | None = None  # override of futility.MIN_TRIALS
    max_changes: int = 3  # search.max_changes
    max_confirmations: int | None = None  # stop.max_confirmations
    baseline_launches: int | None = None  # stop.baseline_launches
    patience: int | None = None  # stop.patience
    budget: int | None = None  # launches (CASES' budget)
    probe: bool = False  # sim.yaml's probe, on the case's profile
    cold_first: float = 0.0  # launch 0 runs x (1 - cold_first)
    screening: bool = False  # a screening: section (--load-format dummy): search on it
    screen_bias: float = 0.005  # a screening launch runs x (1 + bias) ...
    screen_noise: float = 0.005  # ... x (1 + N(0, this)) more between launches
    screen_max: int | None = None  # screening.max_launches (default 40)
    screen_patience: int | None = None  # screening.patience (default twice stop.patience)
    screen_rounds: int | None = None  # screening.benchmark.rounds (default: the 3 of full)
    full_s: tuple[float, float] = (36 * 60.0, 300.0)  # a full launch: to healthy, the rest
    screen_s: tuple[float, float] = (120.0, 300.0)  # a screening launch's
    drift: float = 0.0  # launch k runs x (1 - drift x min(k, N) / N); < 0 warms up
    drift_launches: int = DEFAULT_DRIFT_LAUNCHES  # N
    concurrency: int = 1  # the streams the truth is measured at (the objective's level)
    moe_routing: str | None = None  # screening.moe_routing; set: screening's truth is the
    # sim's dummy launch with the env a screening launch gets (launch_spec_for)

    def budget_for(self, case: str) -> int:
        return self.budget if self.budget is not None else CASES[case][0]


def run_case(
    case: str, seed: int, options: Options | None = None, **overrides: Any
) -> dict[str, Any]:
    """One seeded study of ``case``: its stop, launches, answer and seconds.

    ``options`` (default: Options()) with any field replaced by a keyword, e.g.
    ``run_case("flat", 3, noise=0.04, patience=16, budget=30)``.
    """
    args = Options(**{**asdict(options or Options()), **overrides})
    from tests.fakes import FakeRunner
    from tuner.sim import parse_settings, relative_speed
    from tuner.space.settings import settings_from_params
    from tuner.space.spec import load_space
    from tuner.storage import Store
    from tuner.study.policy import futility
    from tuner.study.run.request import RunRequest, Seams
    from tuner.study.run.sweep import run_sweep
    from tuner.trial.launch_spec import launch_spec_for
    from tuner.views.best import best_report

    t0 = time.monotonic()
    # A diagnostic override of the floor; a worker process that ran one study with an
    # override runs the next one without it at the default again.
    _MIN_TRIALS[:] = _MIN_TRIALS or [futility.MIN_TRIALS]
    futility.MIN_TRIALS = args.min_trials if args.min_trials is not None else _MIN_TRIALS[0]
    budget, optimum = args.budget_for(case), optimum_of(case, args.concurrency)
    profile = _profiles().get(case, case)
    base = yaml.safe_load((ROOT / "search_spaces" / "sim.yaml").read_text())
    stop = {**base["stop"], "futility": args.futility}
    if args.patience is not None:
        stop["patience"] = args.patience
    if args.baseline_launches is not None:
        stop["baseline_launches"] = args.baseline_launches
    if args.max_confirmations is not None:
        stop["max_confirmations"] = args.max_confirmations
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "space.yaml"
        space_dict = {
            "study": f"{case}-{seed}",
            # TP 8, as sim.yaml's and nccl.yaml's servers: at TP 1 the check skips
            # --disable-custom-all-reduce (vLLM builds no custom all-reduce for one GPU),
            # and hidden-vllm's third flag would never be launched.
            "server": {"command": ["fake", "--port", "{port}", "--tensor-parallel-size", "8"]},
            "params": _space_params(case),
            "constraints": base.get("constraints", []),
            "stop": stop,
            "search": {"max_changes": args.max_changes},
        }
        if args.screening:
            space_dict["screening"] = {"args": ["--load-format", "dummy"]}
            if args.screen_max is not None:
                space_dict["screening"]["max_launches"] = args.screen_max
            if args.screen_patience is not None:
                space_dict["screening"]["patience"] = args.screen_patience
            if args.screen_rounds is not None:
                space_dict["screening"]["benchmark"] = {"rounds": args.screen_rounds}
            if args.moe_routing is not None:
                space_dict["screening"]["moe_routing"] = args.moe_routing
        if args.probe:
            # sim.yaml's probe, timing this case's own all-reduce model (docs/probe.md); the
            # fake runner's tok/s are not the profile's, so its comm share is given.
            space_dict["probe"] = {
                **base["probe"],
                "command": [
                    "{python}", "-m", "tuner.sim.probe", "--profile", probe_profile(case),
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
            sim = parse_settings(["--profile", "flat", "--port", "1", *settings.args], settings.env)
            return relative_speed(profile, sim, args.concurrency)

        @cache
        def dummy_truth(key: tuple[tuple[str, str], ...]) -> float:
            # The sim's dummy launch, as tuner launches it: the screening args, its env
            # (the MoE routing simulation where screening.moe_routing says so).
            settings = settings_from_params(space.spec, dict(key))
            launch = launch_spec_for(space, settings, port=1, trial_dir=Path(tmp), screening=True)
            sim = parse_settings(["--profile", "flat", *launch.argv[1:]], launch.env)
            return relative_speed(profile, sim, args.concurrency)

        def key_of(params: dict[str, Any]) -> tuple[tuple[str, str], ...]:
            return tuple(sorted((k, str(v)) for k, v in params.items()))

        def speed(params: dict[str, Any]) -> float:
            return 100.0 * truth(key_of(params))

        def screen_speed(params: dict[str, Any]) -> float:
            if args.moe_routing is not None:
                return 100.0 * dummy_truth(key_of(params)) * (1 + args.screen_bias)
            # Random weights: the same settings act alike, at a small bias.
            return speed(params) * (1 + args.screen_bias)

        storage = f"sqlite:///{tmp}/s.db"
        runner = FakeRunner(
            Store(storage),
            space.study_name,
            speed=speed,
            between=args.noise,
            within=args.noise,
            seed=seed,
            cold_first=args.cold_first,
            drift=args.drift,
            drift_launches=args.drift_launches,
            screen_speed=screen_speed,
            screen_between=args.screen_noise,
            seconds=args.full_s,
            screen_seconds=args.screen_s,
            screen_rounds=args.screen_rounds,
        )
        result = run_sweep(space, RunRequest(storage, budget, seed=seed), Seams(runner=runner))
        report = best_report(storage, space.study_name)
        rec = report.recommended
        assert rec is not None
        verdict = study_verdict(storage, space)
        true = speed(dict(rec.params)) / 100.0
        return {
            "case": case,
            "seed": seed,
            "stop": result.stop_reason,
            "launched": result.launched,
            "keep_defaults": bool(report.keep_defaults),
            "verdict": verdict,  # confirmed, no_gain or not_settled
            "within": true >= WITHIN * optimum - 1e-12,
            "answer": true,  # the recommendation's true speed, over the defaults'
            # The final comparison's candidate (its changed settings), if one ran.
            "final_candidate": next(
                (dict(changed) for role, changed in runner.launched if role == "final" and changed),
                None,
            ),
            # A launch of a configuration within 2% of the optimum is in capitals.
            "roles": "".join(
                letter.upper() if speed(changed) / 100.0 >= WITHIN * optimum - 1e-12 else letter
                for letter, changed in (
                    (ROLE_LETTERS.get(role, "?"), changed) for role, changed in runner.launched
                )
            )
            if optimum > 1.0
            else "".join(ROLE_LETTERS.get(role, "?") for role, _ in runner.launched),
            "seconds": time.monotonic() - t0,
            # Screening's order of the configurations launched both ways (concordant, pairs).
            "ranks": (
                (report.screening.facts.ranks.concordant, report.screening.facts.ranks.pairs)
                if report.screening is not None
                else None
            ),
            "full": sum(1 for f in runner.fidelities if f == "full"),
            "screen": sum(1 for f in runner.fidelities if f == "screen"),
            "hours": sum(
                sum(args.screen_s if f == "screen" else args.full_s) for f in runner.fidelities
            )
            / 3600,
        }


def study_verdict(storage: str, space: Any) -> str:
    """The answer's verdict (confirmed, no_gain, not_settled) as `tuner best` reads it."""
    import optuna

    from tuner.storage import Store
    from tuner.study.facts.analysis import analyze
    from tuner.study.state import StudyState

    study = optuna.load_study(study_name=space.study_name, storage=storage)
    looks = StudyState.from_attrs(study.user_attrs).final.looks
    rec = analyze(Store(storage), space).with_looks(looks).recommendation()
    return rec.outcome if rec is not None else "none"


def _run_one(job: tuple[str, int, Options]) -> dict[str, Any]:
    return run_case(*job)


def run_seeds(
    case: str,
    seeds: Iterable[int],
    options: Options | None = None,
    jobs: int = 1,
    pool: ProcessPoolExecutor | None = None,
) -> list[dict[str, Any]]:
    """:func:`run_case` for each seed, in seed order: in this process (``jobs`` 1), in
    ``pool`` when given, else in a pool of ``jobs`` processes made for the call."""
    work = [(case, seed, options or Options()) for seed in seeds]
    if pool is not None:
        return list(pool.map(_run_one, work))
    if jobs <= 1 or len(work) <= 1:
        return [_run_one(job) for job in work]
    with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as own:
        return list(own.map(_run_one, work))


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank q-quantile (0 < q <= 1) of a non-empty list: one of its values."""
    ranked = sorted(values)
    return ranked[max(0, math.ceil(q * len(ranked) - 1e-9) - 1)]


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
    p.add_argument("--patience", type=int, default=None, help="stop.patience (sim.yaml's: 8)")
    p.add_argument("--budget", type=int, default=None, help="launches (the case's: flat 20)")
    p.add_argument("--cold-first", type=float, default=0.0, help="launch 0 runs x (1 - F)")
    p.add_argument("--drift", type=float, default=0.0, help="drift D (< 0: a warming machine)")
    p.add_argument(
        "--drift-launches", type=int, default=DEFAULT_DRIFT_LAUNCHES, help="drift over N"
    )
    p.add_argument("--jobs", type=int, default=1, help="processes per case (default 1)")
    p.add_argument("--screening", action="store_true", help="search on screening launches")
    p.add_argument("--screen-bias", type=float, default=0.005, help="screening's bias")
    p.add_argument("--screen-noise", type=float, default=0.005, help="screening's extra noise")
    p.add_argument("--screen-max", type=int, default=None, help="screening.max_launches")
    args = p.parse_args()
    options = Options(
        **{f.name: getattr(args, f.name) for f in fields(Options) if hasattr(args, f.name)}
    )
    extra = ""
    if args.patience is not None:
        extra += f", patience {args.patience}"
    if args.budget is not None:
        extra += f", budget {args.budget}"
    if args.cold_first or args.drift:
        extra += (
            f", cold first {args.cold_first:g}, drift {args.drift:g} "
            f"over {args.drift_launches} launches"
        )
    print(
        f"search_fake: noise {args.noise:g} each kind, futility {args.futility:g}, "
        f"min trials {args.min_trials or 'default'}, probe {'on' if args.probe else 'off'}"
        f"{extra}, seeds {args.first_seed}..{args.first_seed + args.studies - 1}"
    )
    for case in args.cases.split(","):
        t0 = time.monotonic()
        seeds = range(args.first_seed, args.first_seed + args.studies)
        rows = run_seeds(case, seeds, options, jobs=args.jobs)
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
            f"mean {statistics.fmean(used):.1f} max {max(used)}; full loads median "
            f"{statistics.median(r['full'] for r in rows):g} max {max(r['full'] for r in rows)}, "
            f"hours median {statistics.median(r['hours'] for r in rows):.1f}; stops {reasons}; "
            f"{time.monotonic() - t0:.0f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
