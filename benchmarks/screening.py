"""Screening launches measured (issue 24): the same studies with and without screening.

Each study is benchmarks/search_fake.py's: a real ``run_sweep`` with tests.fakes.FakeRunner
drawing each launch from the simulator's noise-free truth. With ``--screening`` the space
gets ``screening: {args: [--load-format, dummy]}`` and the fake runner draws a screening
launch at the sim's dummy-weights bias (+0.5%) with its own per-launch noise (0.5% sd,
``tuner sim --dummy-bias/--dummy-noise``'s defaults) on top of the between-launch noise.

Costs, the seeds' and the simulator's (docs/simulator.md): a full launch of the kimi
profile is 2230.7 s to healthy (36 minutes of weights, the compile, the graphs, the rest),
a screening launch 70.7 s (the sim's dummy launch of the same profile); both then spend
240 s benchmarking and stopping (nccl.yaml's benchmark: 3 rounds of 8 requests of 512
tokens at concurrency 1 and 8, at the seeds' 81.4 tok/s single stream, and the stop).
``--screen-rounds R`` gives screening launches ``screening.benchmark: {rounds: R}``: the
fake runner draws R rounds, and each round cut saves ROUND_S of the 240 s.

Cases (search_fake.CASES): kimi (nccl.yaml's params plus --max-num-seqs and
--max-num-batched-tokens on the kimi profile: its effects are small, the defaults within
1% of its optimum), hidden-vllm and interaction-vllm (hidden-gain's and interaction's
shapes with the gains in vLLM flags: --max-num-seqs 128, --max-num-batched-tokens 16384,
--disable-custom-all-reduce), each at 1% and 2% noise, without and with screening; flat
(nothing matters) with screening at 1%, 2% and 4%. No probe by default: the issue's
cases are gains the probe cannot see (``--probe`` adds nccl.yaml's, timing each case's
NCCL behaviour: flat's for the hidden gains).

For each cell: the hit rate (the answer within 2% of the optimum; flat: the defaults kept)
as k/n with its one-sided 95% Clopper-Pearson lower bound, full loads per study (median,
max) and hours to a verdict (median), and the seeds that missed.

    python benchmarks/screening.py --studies 30 --jobs 2
    python benchmarks/screening.py --studies 8 --cases hidden-vllm --noise 0.01
    python benchmarks/screening.py --modes yes --screen-rounds 1   # screening.benchmark
    python benchmarks/screening.py --modes yes --screen-max 20     # screening.max_launches
    python benchmarks/screening.py --modes yes --screen-patience 8 # screening.patience
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_fake import Options, run_seeds  # noqa: E402

from tuner.space.screening import ScreeningSpec  # noqa: E402
from tuner.stats import clopper_pearson_lower  # noqa: E402

SCREEN_MAX_DEFAULT = ScreeningSpec.model_fields["max_launches"].default

FULL_S = (2230.7, 240.0)  # to healthy, benchmark and stop
SCREEN_S = (70.7, 240.0)
# One of nccl.yaml's 3 rounds: 8 requests of 512 tokens at one stream (50.3 s at 81.4
# tok/s) and one burst of 8 at concurrency 8 (about 8.5 s); the first round's 2 warm-up
# requests (12.6 s) and the stop (about 50 s) make the rest of the 240 s.
ROUND_S = 59.0


def screen_seconds(rounds: int | None) -> tuple[float, float]:
    """A screening launch's (to healthy, benchmark and stop) with ``rounds`` rounds
    (screening.benchmark.rounds; None: the full benchmark's 3)."""
    if rounds is None:
        return SCREEN_S
    return SCREEN_S[0], SCREEN_S[1] - (3 - rounds) * ROUND_S


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=30)
    p.add_argument("--cases", default="kimi,hidden-vllm,interaction-vllm")
    p.add_argument("--noise", default="0.01,0.02", help="between- and within-launch rel sd")
    p.add_argument("--flat-noise", default="0.01,0.02,0.04", help="flat's cells (screening)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--modes", default="no,yes", help="without (no) and with (yes) screening")
    p.add_argument(
        "--screen-rounds",
        type=int,
        choices=(1, 2, 3),
        help="screening.benchmark.rounds: a screening launch's rounds (default: the full 3)",
    )
    p.add_argument(
        "--screen-max",
        type=int,
        help=f"screening.max_launches (default: the space file's, {SCREEN_MAX_DEFAULT})",
    )
    p.add_argument(
        "--screen-patience",
        type=int,
        help="screening.patience (default: twice stop.patience, 16)",
    )
    p.add_argument(
        "--probe",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="nccl.yaml's probe (as shipped) settles the NCCL params in the baseline launches; "
        "off by default: the issue's cases are the gains the probe cannot see",
    )
    args = p.parse_args()
    cells: list[tuple[str, float, bool]] = []
    modes = [mode == "yes" for mode in args.modes.split(",")]
    for case in filter(None, args.cases.split(",")):
        for noise in map(float, args.noise.split(",")):
            cells += [(case, noise, screening) for screening in modes]
    for noise in map(float, filter(None, args.flat_noise.split(","))):
        cells.append(("flat", noise, True))
    print(
        f"screening: {args.studies} studies per cell; full launch {sum(FULL_S):.0f} s, "
        f"screening launch {sum(screen_seconds(args.screen_rounds)):.0f} s "
        f"({args.screen_rounds or 3} round{'' if args.screen_rounds == 1 else 's'}); "
        f"patience 8 (screening: {args.screen_patience or 16}); "
        f"screening.max_launches {args.screen_max or SCREEN_MAX_DEFAULT}; "
        f"probe {'on' if args.probe else 'off'}"
    )
    print(
        f"{'case':<17} {'noise':>5} {'screening':>9}  {'hit':>7} {'lower':>6}  "
        f"{'full med/max':>12} {'launches':>8} {'hours':>6}  missed"
    )
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for case, noise, screening in cells:
            t0 = time.monotonic()
            options = Options(
                noise=noise,
                screening=screening,
                probe=args.probe,
                full_s=FULL_S,
                screen_s=screen_seconds(args.screen_rounds),
                screen_rounds=args.screen_rounds,
                screen_max=args.screen_max,
                screen_patience=args.screen_patience,
            )
            rows = run_seeds(case, range(args.studies), options, pool=pool)
            ok = [r["keep_defaults"] if case == "flat" else r["within"] for r in rows]
            n, k = len(rows), sum(ok)
            full = [r["full"] for r in rows]
            print(
                f"{case:<17} {noise:>5.2f} {'yes' if screening else 'no':>9}  "
                f"{f'{k}/{n}':>7} {clopper_pearson_lower(k, n):>6.3f}  "
                f"{f'{statistics.median(full):g}/{max(full)}':>12} "
                f"{statistics.median(r['launched'] for r in rows):>8g} "
                f"{statistics.median(r['hours'] for r in rows):>6.1f}  "
                f"{[r['seed'] for r, good in zip(rows, ok, strict=True) if not good]} "
                f"({time.monotonic() - t0:.0f} s)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
