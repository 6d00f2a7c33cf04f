"""Search efficiency, measured: many seeded studies against `tuner sim`, and what they found.

Issue 3, item 7 ("measured, not asserted"). Each study is a real sweep
(``tuner.study.run.sweep.run_sweep``) in its own temporary directory and SQLite database; every
launch is a real ``python -m tuner.sim`` subprocess, benchmarked over HTTP, stopped by
the launcher. Afterwards the recommendation (``tuner.views.best.best_report``, what `tuner
best` says) is scored against the simulator's noise-free truth
(``tuner.sim.relative_speed``), which the sweep never sees.

Cases (the space: the NCCL, compilation and custom all-reduce knobs of
search_spaces/sim.yaml, its constraint and its stop rule; only the server and the
benchmark are made small and fast):

- ``flat``: no setting has any effect. Targets: the recommendation is the defaults in
  >= 95% of studies, and the sweep stops (plateau) before its 20-launch budget in >= 90%.
- ``hidden-gain``: NCCL_ALGO=allreduce:tree, NCCL_PROTO=LL128, NCCL_MAX_NCHANNELS=16
  each give 2.5%, all three 8%. Target: with a 30-launch budget, the recommendation's
  true speed is within 2% of the optimum (>= 0.98 x 1.08) in >= 90% of studies.
- ``needle``: the same three together give 8%, anything less nothing: a pure
  interaction no sampler can climb towards. Same target; it is expected to fail and is
  reported as the limit of what a 30-launch search can do.
- ``interaction`` (not run by default): one interaction on top of additive effects.
  NCCL_PROTO=LL128 and NCCL_MAX_NCHANNELS=16 each give 2% and 7% together;
  NCCL_BUFFSIZE=16777216 adds 2.5% (optimum 1.07 x 1.025). Same target as hidden-gain.

For every case the table also gives the launches used (median, p90) against the size
of the full grid (every combination of choices that satisfies the constraints).

The simulator is started without ``--seed``: each launch draws its own speed offset and
step noise, as a real restart would. The study's seed seeds optuna's sampler only.
``--noise LAUNCH_SD[,ROUND_SD]`` starts it with ``--launch-noise LAUNCH_SD`` (the relative
sd of a launch's mean between launches) and ``--round-noise ROUND_SD`` (of one round's
mean within a launch; omitted: the profile's own), for rounds of requests x max_tokens
steps; without it the profiles' own noise applies (about 0.3% of each kind, measured).

    python benchmarks/search_efficiency.py                       # 20 studies per case
    python benchmarks/search_efficiency.py --quick               # 3 per case, a smoke run
    python benchmarks/search_efficiency.py --cases flat --studies 40 --jobs 2
    python benchmarks/search_efficiency.py --json /tmp/se.json   # per-study records too
    python benchmarks/search_efficiency.py --cases hidden-gain --patience 24  # diagnostic
    python benchmarks/search_efficiency.py --method tpe          # optuna's TPE throughout
    python benchmarks/search_efficiency.py --cases flat,hidden-gain,interaction --noise 0.01,0.01
    python benchmarks/search_efficiency.py --probe --noise 0.01,0.01  # with the sim's probe

Each study runs in its own Python process, in a private /dev/shm where the machine
allows it (see _enter_private_shm). Every study is bounded by its launch budget and a
wall-clock limit, and each server it starts is stopped by the sweep's launcher before
the study returns. Keep ``--jobs 1`` on a small machine: on 2 cores two studies at once
gave 2-3 times the round-to-round noise (0.9-1.5% sd against 0.5%) and nearly doubled
each launch's time, so they finished hardly sooner. docs/measurements/search-targets.md
holds the runs and their reading.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Run as a script from anywhere: the repository root holds the tuner package.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

SIM_SPACE = ROOT / "search_spaces" / "sim.yaml"
WITHIN = 0.98  # "within 2% of the true optimum"


@dataclass(frozen=True)
class Case:
    name: str
    profile: str
    budget: int
    optimum: float  # true relative speed of the best configuration in the space
    expect_fail: bool = False  # reported honestly, not a target we claim to meet


CASES: dict[str, Case] = {
    "flat": Case("flat", "flat", budget=20, optimum=1.0),
    "hidden-gain": Case("hidden-gain", "hidden-gain", budget=30, optimum=1.08),
    "needle": Case("needle", "needle", budget=30, optimum=1.08, expect_fail=True),
    "interaction": Case("interaction", "interaction", budget=30, optimum=1.07 * 1.025),
}
DEFAULT_CASES = "flat,hidden-gain,needle"


@dataclass
class Options:
    time_scale: float
    load_seconds: float
    prompt_tokens: int
    max_tokens: int
    requests: int
    rounds: int
    keep: bool
    workdir: str | None
    private_shm: bool = True
    patience: int | None = None  # a diagnostic override of the space's stop.patience
    method: str = "local"  # search.method: local (tuner's default) or tpe
    launch_noise: float | None = None  # the sim's --launch-noise (None: the profile's)
    round_noise: float | None = None  # the sim's --round-noise (None: the profile's)
    futility: float | None = None  # a diagnostic override of stop.futility (0: off)
    probe: bool = False  # sim.yaml's probe, timing the case's own all-reduce model


@dataclass
class StudyResult:
    case: str
    seed: int
    ok: bool
    error: str = ""
    stop_reason: str = ""
    launched: int = 0  # server starts, as the sweep counts them against the budget
    pruned: int = 0  # launches stopped early by the prune check
    failed: int = 0
    proposals: int = 0  # optuna trials, launched or not (duplicates, constraint breaks)
    keep_defaults: bool = False
    recommended: dict[str, Any] = field(default_factory=dict)  # the changed params
    true_recommended: float = math.nan
    true_best: float = math.nan  # the measured best (before the simplicity rule)
    true_best_launched: float = math.nan  # the truly best configuration it ever launched
    noise_between: float | None = None  # rel sd the study estimated (after shrinkage)
    noise_between_observed: float | None = None
    noise_within: float | None = None  # rel sd of one round
    seconds: float = 0.0
    seconds_per_launch: float = 0.0
    workdir: str = ""

    @property
    def within_optimum(self) -> bool:
        return self.true_recommended >= WITHIN * CASES[self.case].optimum - 1e-12

    @property
    def stopped_early(self) -> bool:
        return self.stop_reason != "budget" and self.launched < CASES[self.case].budget


# --------------------------------------------------------------------------- the space


def space_dict(case: Case, seed: int, opts: Options) -> dict[str, Any]:
    """sim.yaml's params, constraints and stop rule; a small, fast server and benchmark."""
    base = yaml.safe_load(SIM_SPACE.read_text())
    command = [
        "{python}", "-m", "tuner.sim",
        "--profile", case.profile,
        "--load-seconds", f"{opts.load_seconds:g}",
        "--time-scale", f"{opts.time_scale:g}",
        "--host", "127.0.0.1", "--port", "{port}",
        *noise_args(opts),
    ]  # fmt: skip
    return {
        "study": f"{case.name}-s{seed}",
        "server": {"command": command, "port": "auto", "startup_timeout_s": 60,
                   "stop_timeout_s": 10},
        "params": base["params"],
        "constraints": base.get("constraints", []),
        "benchmark": {
            "api": "completions",
            "prompt_tokens": opts.prompt_tokens,
            "max_tokens": opts.max_tokens,
            "concurrency": [1],
            "requests": opts.requests,
            "warmup": 0,
            "rounds": opts.rounds,
        },
        "objective": {"metric": "output_throughput", "concurrency": 1},
        "stop": {**base["stop"], **({"patience": opts.patience} if opts.patience else {}),
                 **({"futility": opts.futility} if opts.futility is not None else {})},
        "search": {"method": opts.method},
        **({"probe": probe_dict(case, base, opts)} if opts.probe else {}),
    }  # fmt: skip


def probe_dict(case: Case, base: dict[str, Any], opts: Options) -> dict[str, Any]:
    """sim.yaml's probe (docs/probe.md) on the case's profile at the server's time scale,
    so that its all-reduce times and the measured step give the profile's comm share."""
    command = [
        "{python}", "-m", "tuner.sim.probe", "--profile", case.profile,
        "--time-scale", f"{opts.time_scale:g}", "--sizes", "{sizes}", "--repeats", "{repeats}",
    ]  # fmt: skip
    return {**base["probe"], "command": command}


def noise_args(opts: Options) -> list[str]:
    """The sim's noise flags for --noise; a round is requests x max_tokens steps (concurrency 1)."""
    args: list[str] = []
    if opts.launch_noise is not None:
        args += ["--launch-noise", f"{opts.launch_noise:g}"]
    if opts.round_noise is not None:
        args += ["--round-noise", f"{opts.round_noise:g}"]
        args += ["--round-steps", str(opts.requests * opts.max_tokens)]
    return args


def parse_noise(text: str) -> tuple[float, float | None]:
    """``LAUNCH_SD[,ROUND_SD]`` as fractions (0.01 is 1%)."""
    parts = [x.strip() for x in text.split(",")]
    if len(parts) > 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give LAUNCH_SD or LAUNCH_SD,ROUND_SD")
    try:
        values = [float(x) for x in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number (0.01 is 1%)") from None
    if any(not 0 <= v <= 0.5 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: relative sds are fractions in [0, 0.5]")
    return values[0], (values[1] if len(values) == 2 else None)


def grid_size(spec: Any) -> int:
    """Every combination of choices that satisfies the constraints (the exhaustive search)."""
    from tuner.space.settings import violated_constraints

    names = list(spec.params)
    choices = [list(spec.params[n].choices or []) for n in names]
    if any(not c for c in choices):
        raise SystemExit("grid_size: every param must be categorical (choices)")
    return sum(
        1
        for combo in itertools.product(*choices)
        if not violated_constraints(spec, dict(zip(names, combo, strict=True)))
    )


def true_speed(spec: Any, profile: str, params: dict[str, Any]) -> float:
    """The simulator's noise-free throughput of these params over the defaults'."""
    from tuner.sim import parse_settings, relative_speed
    from tuner.space.settings import settings_from_params

    settings = settings_from_params(spec, params)
    sim = parse_settings(["--profile", profile, "--port", "1", *settings.args], settings.env)
    return relative_speed(profile, sim, 1)


# --------------------------------------------------------------------------- one study


def run_study(case_name: str, seed: int, opts: Options) -> StudyResult:
    """One seeded study in its own directory; never raises (errors become a failed row)."""
    case = CASES[case_name]
    root = Path(tempfile.mkdtemp(prefix=f"search-eff-{case_name}-s{seed}-", dir=opts.workdir))
    out = StudyResult(case=case_name, seed=seed, ok=False, workdir=str(root))
    t0 = time.monotonic()
    try:
        import optuna

        from tuner.space.spec import load_space
        from tuner.storage import LaunchStatus, Store
        from tuner.study.attrs import LAUNCHED as LAUNCHED_ATTR
        from tuner.study.run.request import RunRequest
        from tuner.study.run.sweep import run_sweep
        from tuner.views.best import best_report

        path = root / "space.yaml"
        path.write_text(yaml.safe_dump(space_dict(case, seed, opts), sort_keys=False))
        space = load_space(path)
        storage = f"sqlite:///{root / 'experiments.db'}"
        result = run_sweep(
            space, RunRequest(storage, case.budget, seed=seed, runs_dir=root / "runs")
        )
        out.seconds = time.monotonic() - t0
        out.stop_reason = result.stop_reason
        out.launched = result.launched
        report = best_report(storage, space.study_name)
        rec, best = report.recommended, report.best
        if rec is None:
            raise RuntimeError("no recommendation")
        out.keep_defaults = bool(report.keep_defaults)
        out.recommended = rec.changed
        out.true_recommended = true_speed(space.spec, case.profile, dict(rec.params))
        if best is not None:
            out.true_best = true_speed(space.spec, case.profile, dict(best.params))
        noise = report.noise
        if noise is not None:
            out.noise_between = noise.rel_sd
            if noise.observed_var is not None:
                out.noise_between_observed = math.sqrt(noise.observed_var)
            if noise.within_var is not None:
                out.noise_within = math.sqrt(noise.within_var)
        rows = Store(storage).launches(space.study_name)
        out.pruned = sum(1 for r in rows if r.status == LaunchStatus.PRUNED)
        out.failed = sum(1 for r in rows if r.status == LaunchStatus.FAILED)
        speeds = [true_speed(space.spec, case.profile, r.params) for r in rows]
        out.true_best_launched = max(speeds, default=math.nan)
        trials = optuna.load_study(study_name=space.study_name, storage=storage).get_trials(
            deepcopy=False
        )
        out.proposals = len(trials)
        assert out.launched == sum(1 for t in trials if t.user_attrs.get(LAUNCHED_ATTR))
        out.seconds_per_launch = out.seconds / max(out.launched, 1)
        out.ok = True
    except BaseException as exc:  # a study that breaks is a row, not a crashed benchmark
        out.error = f"{type(exc).__name__}: {exc}"
        out.seconds = time.monotonic() - t0
        traceback.print_exc()
        if isinstance(exc, KeyboardInterrupt):
            raise
    finally:
        if not opts.keep:
            shutil.rmtree(root, ignore_errors=True)
    return out


# --------------------------------------------------------------------------- the table


def pct(k: int, n: int) -> str:
    return f"{k}/{n} = {100 * k / n:.0f}%" if n else "-"


def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile (p90 of 20 values is the 18th smallest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def fmt_pct(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.2f}%"


def summarise(case: Case, rows: list[StudyResult], grid: int) -> tuple[list[str], list[bool]]:
    """Lines of the case's table, and the pass/fail of each target claimed for it."""
    ok = [r for r in rows if r.ok]
    n = len(ok)
    lines = [f"== {case.name} (profile {case.profile}, budget {case.budget} launches, "
             f"{len(rows)} studies, {len(rows) - n} broken)"]  # fmt: skip
    verdicts: list[bool] = []
    if not n:
        return lines + ["   no study completed"], [False]

    def target(label: str, k: int, need: float, claimed: bool = True) -> None:
        held = k >= need * n - 1e-9
        mark = ("PASS" if held else "FAIL") if claimed else ("(met)" if held else "(not met)")
        lines.append(f"   {label:<58} {pct(k, n):>14}  target >= {need:.0%}  {mark}")
        if claimed:
            verdicts.append(held)

    claimed = not case.expect_fail
    if case.optimum == 1.0:
        target("(a) recommendation is the defaults", sum(r.keep_defaults for r in ok), 0.95)
        target(
            f"(a) stopped before the {case.budget}-launch budget",
            sum(r.stopped_early for r in ok),
            0.90,
        )
    else:
        bar = WITHIN * case.optimum
        target(
            f"(b) recommendation within 2% of optimum (true >= {bar:.4f})",
            sum(r.within_optimum for r in ok),
            0.90,
            claimed,
        )
        lines.append(
            f"   {'    the optimum was launched at all (search found it)':<58} "
            f"{pct(sum(r.true_best_launched >= bar - 1e-12 for r in ok), n):>14}"
        )
        lines.append(
            f"   {'    recommendation is the defaults':<58} "
            f"{pct(sum(r.keep_defaults for r in ok), n):>14}"
        )
    changed = [len(r.recommended) for r in ok]
    need = {"flat": 0}.get(case.profile, 3)
    lines.append(
        f"   settings the recommendation changes: median {statistics.median(changed):g}, "
        f"max {max(changed)} (the optimum needs {need})"
    )
    speeds = [r.true_recommended for r in ok]
    lines.append(
        f"   true speed of the recommendation vs defaults: median {statistics.median(speeds):.4f}"
        f", min {min(speeds):.4f}, max {max(speeds):.4f} (optimum {case.optimum:.4f})"
    )
    used = [r.launched for r in ok]
    lines.append(
        f"   (c) launches: median {statistics.median(used):g}, p90 {quantile(used, 0.9):g}, "
        f"max {max(used)} of a full grid of {grid} configurations "
        f"(median {100 * statistics.median(used) / grid:.2f}% of it)"
    )
    reasons: dict[str, int] = {}
    for r in ok:
        reasons[r.stop_reason] = reasons.get(r.stop_reason, 0) + 1
    lines.append(
        "   stop reasons: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
        + f"; pruned launches: median {statistics.median(r.pruned for r in ok):g}"
        + f"; failed launches: {sum(r.failed for r in ok)}"
    )  # fmt: skip
    between = [r.noise_between_observed for r in ok if r.noise_between_observed is not None]
    within = [r.noise_within for r in ok if r.noise_within is not None]
    lines.append(
        "   measured noise (median over studies): between launches "
        f"{fmt_pct(statistics.median(between) if between else None)} sd, "
        f"one round {fmt_pct(statistics.median(within) if within else None)} sd; "
        f"{statistics.median(r.seconds_per_launch for r in ok):.2f} s per launch"
    )
    return lines, verdicts


def study_line(r: StudyResult, done: int, total: int) -> str:
    if not r.ok:
        return f"[{done:>3}/{total}] {r.case:<11} seed {r.seed:>3}  BROKEN {r.error}"
    what = " ".join(f"{k}={v}" for k, v in r.recommended.items()) or "(defaults)"
    return (
        f"[{done:>3}/{total}] {r.case:<11} seed {r.seed:>3}  {r.stop_reason:<8} "
        f"launches {r.launched:>2} (pruned {r.pruned:>2})  true {r.true_recommended:.4f}  "
        f"noise b {fmt_pct(r.noise_between_observed)} w {fmt_pct(r.noise_within)}  "
        f"{r.seconds:5.0f}s  -> {what}"
    )


# --------------------------------------------------------------------------- running them

RESULT = "SEARCH-EFFICIENCY-RESULT "


def study_command(case: str, seed: int, opts: Options) -> list[str]:
    """One study in its own Python process: nothing shared between studies (and no
    multiprocessing semaphores in /dev/shm, which a concurrent launch's cleanup may take)."""
    return [sys.executable, str(Path(__file__).resolve()), "--one", f"{case}:{seed}",
            "--options", json.dumps(asdict(opts))]  # fmt: skip


def study_timeout(case: str) -> float:
    """A wall-clock bound far above what a study needs (the budget bounds its launches)."""
    return 60.0 * CASES[case].budget


def run_all(jobs: list[tuple[str, int]], opts: Options, parallel: int) -> Iterator[StudyResult]:
    """Yield each study's result as it ends, running ``parallel`` study processes at once."""
    pending = list(jobs)
    running: list[tuple[str, int, subprocess.Popen[str], float]] = []
    try:
        while pending or running:
            while pending and len(running) < parallel:
                case, seed = pending.pop(0)
                proc = subprocess.Popen(
                    study_command(case, seed, opts), stdout=subprocess.PIPE, text=True
                )
                running.append((case, seed, proc, time.monotonic()))
            time.sleep(0.2)
            for item in list(running):
                case, seed, proc, started = item
                if proc.poll() is None:
                    if time.monotonic() - started > study_timeout(case):
                        _stop(proc)  # Ctrl-C: run_sweep stops its server, then we reap
                    else:
                        continue
                running.remove(item)
                out, _ = proc.communicate()
                yield _parse_result(case, seed, out, proc.returncode)
    finally:
        for _, _, proc, _ in running:
            _stop(proc)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _parse_result(case: str, seed: int, out: str, rc: int | None) -> StudyResult:
    for line in reversed(out.splitlines()):
        if line.startswith(RESULT):
            return StudyResult(**json.loads(line[len(RESULT) :]))
    return StudyResult(case=case, seed=seed, ok=False, error=f"study process exited {rc}")


PRIVATE_SHM_ENV = "SEARCH_EFFICIENCY_PRIVATE_SHM"


def _enter_private_shm(argv: list[str]) -> None:
    """Re-run this study process in its own mount namespace with a private /dev/shm.

    The launcher removes files matching ``sem.mp-*`` that appear in /dev/shm during a
    launch and that it cannot see in use, and it cannot see a live POSIX semaphore in
    use (its mapping is listed under a deleted temporary name): a benchmark of a
    thousand launches would take other programs' multiprocessing semaphores away. A
    private tmpfs keeps the studies and the rest of the machine out of each other's
    /dev/shm. Needs root (or user namespaces); without it the study runs as it is.
    """
    if os.environ.get(PRIVATE_SHM_ENV) or not shutil.which("unshare"):
        return
    os.environ[PRIVATE_SHM_ENV] = "1"
    script = 'mount -t tmpfs -o size=256m,mode=1777 tmpfs /dev/shm && exec "$@"'
    wrapped = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"]
    probe = subprocess.run([*wrapped[:-1], "sh", "true"], capture_output=True)
    if probe.returncode == 0:
        sys.stdout.flush()
        os.execvp("unshare", [*wrapped, sys.executable, *argv])


def one_study(spec: str, options: str) -> int:
    case, seed = spec.rsplit(":", 1)
    opts = Options(**json.loads(options))
    if opts.private_shm:
        _enter_private_shm([str(Path(__file__).resolve()), "--one", spec, "--options", options])
    result = run_study(case, int(seed), opts)
    print(RESULT + json.dumps(asdict(result), default=str), flush=True)
    return 0


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=20, help="seeded studies per case")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument(
        "--cases",
        default=DEFAULT_CASES,
        help=f"comma-separated, of {', '.join(CASES)} (default {DEFAULT_CASES})",
    )
    p.add_argument("--jobs", type=int, default=1, help="studies run in parallel")
    p.add_argument("--time-scale", type=float, default=0.1, help="the sim's --time-scale")
    p.add_argument("--load-seconds", type=float, default=0.1, help="the sim's --load-seconds")
    p.add_argument("--prompt-tokens", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--requests", type=int, default=3, help="requests per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--patience",
        type=int,
        default=None,
        help="diagnostic: override stop.patience (the targets are for the space's own, 8)",
    )
    p.add_argument(
        "--method",
        choices=["local", "tpe"],
        default="local",
        help="search.method of every study (default local, tuner's default; tpe to compare)",
    )
    p.add_argument(
        "--noise",
        type=parse_noise,
        default=None,
        metavar="LAUNCH_SD[,ROUND_SD]",
        help="the sim's --launch-noise [and --round-noise], fractions: 0.01,0.01 is 1%% "
        "between launches and 1%% between rounds (default: the profiles' own noise)",
    )
    p.add_argument(
        "--futility",
        type=float,
        default=None,
        help="diagnostic: override stop.futility (0 turns the futility stop off)",
    )
    p.add_argument(
        "--probe",
        action="store_true",
        help="add sim.yaml's all-reduce probe, on each case's profile (docs/probe.md)",
    )
    p.add_argument("--quick", action="store_true", help="3 studies per case: a smoke run")
    p.add_argument("--keep", action="store_true", help="keep each study's directory")
    p.add_argument("--workdir", default=None, help="parent of the study directories")
    p.add_argument(
        "--shared-shm",
        action="store_true",
        help="run studies in the machine's /dev/shm (default: a private tmpfs when possible)",
    )
    p.add_argument("--json", type=Path, default=None, help="write every study's record here")
    p.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one study CASE:SEED
    p.add_argument("--options", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        return one_study(args.one, args.options)

    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        p.error(f"unknown case(s) {unknown}; choose from {', '.join(CASES)}")
    studies = 3 if args.quick else args.studies
    opts = Options(
        time_scale=args.time_scale,
        load_seconds=args.load_seconds,
        prompt_tokens=args.prompt_tokens,
        max_tokens=args.max_tokens,
        requests=args.requests,
        rounds=args.rounds,
        keep=args.keep,
        workdir=args.workdir,
        private_shm=not args.shared_shm,
        patience=args.patience,
        method=args.method,
        launch_noise=args.noise[0] if args.noise else None,
        round_noise=args.noise[1] if args.noise else None,
        futility=args.futility,
        probe=args.probe,
    )

    from tuner.space.spec import parse_space

    grids = {
        name: grid_size(
            parse_space(space_dict(CASES[name], 0, opts), Path("search-efficiency.yaml")).spec
        )
        for name in names
    }
    started = dt.datetime.now().astimezone()
    cmd = " ".join(["python", "benchmarks/search_efficiency.py", *sys.argv[1:]])
    print(f"search efficiency: {cmd}")
    print(
        f"  {started:%Y-%m-%d %H:%M %Z}, {os.cpu_count()} CPUs, jobs {args.jobs}; "
        f"{studies} studies per case, seeds {args.first_seed}..{args.first_seed + studies - 1}"
    )
    print(
        f"  sim: --time-scale {opts.time_scale:g} --load-seconds {opts.load_seconds:g}, no "
        f"--seed; bench: prompt {opts.prompt_tokens}, max_tokens {opts.max_tokens}, "
        f"concurrency 1, {opts.requests} requests x {opts.rounds} rounds, no warmup"
    )
    noise = " ".join(noise_args(opts)) or "the profiles' own"
    print(f"  noise: {noise}")
    print(
        f"  space: params, constraints and stop rule of {SIM_SPACE.relative_to(ROOT)}"
        + (f", but patience {opts.patience} (diagnostic)" if opts.patience else "")
        + (f", futility {opts.futility:g} (diagnostic)" if opts.futility is not None else "")
        + f"; search.method {opts.method}"
        + ("; sim.yaml's probe on each case's profile" if opts.probe else "; no probe")
    )
    sys.stdout.flush()

    seeds = range(args.first_seed, args.first_seed + studies)
    jobs = [(name, seed) for name in names for seed in seeds]
    results: list[StudyResult] = []
    t0 = time.monotonic()
    for r in run_all(jobs, opts, max(1, args.jobs)):
        results.append(r)
        print(study_line(r, len(results), len(jobs)), flush=True)
    wall = time.monotonic() - t0

    print()
    print(f"Search efficiency ({started:%Y-%m-%d}; {os.cpu_count()} CPUs, jobs {args.jobs})")
    all_verdicts: list[bool] = []
    for name in names:
        rows = sorted((r for r in results if r.case == name), key=lambda r: r.seed)
        lines, verdicts = summarise(CASES[name], rows, grids[name])
        all_verdicts += verdicts
        print("\n".join(lines))
        if CASES[name].expect_fail:
            print("   (needle is the pure-interaction limit: not a target tuner claims to meet)")
    launches = sum(r.launched for r in results)
    print(f"total wall time {wall / 60:.1f} min for {len(results)} studies, {launches} launches")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"command": cmd, "started": started.isoformat(), "wall_s": wall,
                 "grid": grids, "studies": [asdict(r) for r in results]},
                indent=1, default=str,
            )
        )  # fmt: skip
    return 0 if all(all_verdicts) and all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
