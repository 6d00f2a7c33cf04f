"""How often a study on a flat surface keeps the defaults: search_fake's flat case over a grid.

On the ``flat`` profile no setting changes the throughput, so the only right answer is "keep
the defaults", and every recommended change is a false gain. Each study is a real
``run_sweep`` with ``tests.fakes.FakeRunner`` (benchmarks/search_fake.py's
:func:`run_case`), over the grid

- noise 0.01, 0.02, 0.04: the relative sd of each kind (between and within launches), as
  search_fake's ``--noise``;
- patience 8, 16 (stop.patience);
- faults ``none``, or ``cold-drift``: a cold first launch 5% slower and a drift of -3%
  over the study's budget of launches (a machine that warms up: later launches are faster,
  so anything launched late looks like a gain),

``--studies`` seeded studies per cell (seeds ``--first-seed`` on). The table gives the
defaults kept k/n with its exact one-sided 95% lower bound (Clopper-Pearson,
tuner.stats.binomial), the launches' median and p90 (nearest rank), the stop reasons, the
seeds that recommended a change, and the cell's wall seconds.

The budget (``--budget``, printed): 20 launches at patience 8, search_fake's flat budget,
so those cells are its flat case; patience + 14 above (30 at patience 16): 2 baseline
launches + 16 search trials + 3 confirmations (the cap, confirmations + 2) + 2
simplification launches and a tiebreak is 24, and 6 more let a study that confirmed one
candidate still reach its plateau rather than the budget. A study that ends on
``budget`` in the stop reasons was cut short.

``--hidden`` runs instead the hidden-gain case with sim.yaml's probe (search_fake's
``--probe``) at 1% noise and its own budget (30): within 2% of the optimum k/n with its
lower bound, and the launches' median and p90 (reference: 30/30 at a median of 10);
``--noise`` gives it a row per noise.

    python benchmarks/false_gains.py                                  # 12 cells x 40 studies
    python benchmarks/false_gains.py --noise 0.04 --patience 8 --faults none --studies 10
    python benchmarks/false_gains.py --cells 0.01/16/cold-drift,0.04/8/none --jobs 1
    python benchmarks/false_gains.py --hidden                          # 30 studies
    python benchmarks/false_gains.py --hidden --noise 0.01,0.02,0.04   # 30 studies a row
    python benchmarks/false_gains.py --studies 2 --noise 0.04 --patience 8   # a smoke run

A study takes about 8 s of one core at patience 8 and 15 s at patience 16 (measured on a
busy 2-core box, one study per cell: 9 s of CPU on average), so the full grid (480
studies) takes about 40 to 60 minutes at ``--jobs 2``; the machine's free cores bound
``--jobs`` (default 2).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from search_fake import Options, percentile, run_seeds  # noqa: E402

from tuner.stats import clopper_pearson_lower  # noqa: E402

NOISES = (0.01, 0.02, 0.04)
PATIENCES = (8, 16)
FAULTS = {"none": (0.0, 0.0), "cold-drift": (0.05, -0.03)}  # cold first, drift
CONFIDENCE = 0.95
HIDDEN_NOISE = 0.01
LETTER = {"confirmed": "c", "no_gain": "n", "not_settled": "s", "none": "?"}


def default_budget(patience: int) -> int:
    """20 launches up to patience 8 (search_fake's flat budget), patience + 14 above."""
    return 20 if patience <= 8 else patience + 14


@dataclass(frozen=True)
class Cell:
    noise: float
    patience: int
    faults: str

    def options(self, budget: int | None, drift_launches: int | None) -> Options:
        cold_first, drift = FAULTS[self.faults]
        spent = budget if budget is not None else default_budget(self.patience)
        return Options(
            noise=self.noise,
            patience=self.patience,
            budget=spent,
            cold_first=cold_first,
            drift=drift,
            drift_launches=drift_launches if drift_launches is not None else spent,
        )


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _faults(text: str) -> list[str]:
    names = [x for x in text.split(",") if x]
    for name in names:
        if name not in FAULTS:
            raise argparse.ArgumentTypeError(f"faults {name!r}: one of {', '.join(FAULTS)}")
    return names


def _cells(text: str) -> list[Cell]:
    """``NOISE/PATIENCE/FAULTS`` items, comma-separated: ``0.04/8/none,0.01/16/cold-drift``."""
    cells = []
    for item in text.split(","):
        try:
            noise, patience, faults = item.split("/")
            cell = Cell(float(noise), int(patience), faults)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{item!r}: NOISE/PATIENCE/FAULTS") from exc
        _faults(faults)
        cells.append(cell)
    return cells


def _stops(rows: list[dict[str, Any]]) -> str:
    reasons: dict[str, int] = {}
    for r in rows:
        reasons[r["stop"]] = reasons.get(r["stop"], 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))


def _launches(rows: list[dict[str, Any]]) -> str:
    used = [r["launched"] for r in rows]
    return f"{statistics.median(used):g} / {percentile(used, 0.9):g}"


def _verdicts(rows: list[dict[str, Any]]) -> str:
    """'31 / 9': the studies that answered no gain, and not settled."""
    verdicts = [r["verdict"] for r in rows]
    return f"{verdicts.count('no_gain')} / {verdicts.count('not_settled')}"


def _score(ok: int, n: int) -> str:
    return f"{ok}/{n} | {clopper_pearson_lower(ok, n, CONFIDENCE):.3f}"


def run_grid(args: argparse.Namespace, pool: ProcessPoolExecutor | None) -> None:
    cells = args.cells or [
        Cell(noise, patience, faults)
        for noise in args.noise
        for patience in args.patience
        for faults in args.faults
    ]
    seeds = range(args.first_seed, args.first_seed + (args.studies or 40))
    budgets = sorted({c.options(args.budget, args.drift_launches).budget or 0 for c in cells})
    print(
        f"false_gains: flat case, {len(seeds)} studies per cell (seeds {seeds[0]}..{seeds[-1]}), "
        f"budget {'/'.join(map(str, budgets))} launches "
        f"({'--budget' if args.budget else 'patience 8: 20, else patience + 14'}), "
        f"faults cold-drift = cold first 5% + drift -3% over "
        f"{args.drift_launches or 'the budget'} launches, jobs {args.jobs}"
    )
    print()
    print(
        "| noise | patience | faults | budget | not confirmed | 95% lower | no gain / not settled "
        "| defaults kept | launches med / p90 | stops | confirmed (seeds) | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    study_seconds: list[float] = []
    for cell in cells:
        options = cell.options(args.budget, args.drift_launches)
        t0 = time.monotonic()
        rows = run_seeds("flat", seeds, options, jobs=args.jobs, pool=pool)
        seconds = time.monotonic() - t0
        study_seconds += [r["seconds"] for r in rows]
        kept = sum(r["keep_defaults"] for r in rows)
        confirmed = [r["seed"] for r in rows if r["verdict"] == "confirmed"]
        print(
            f"| {cell.noise:g} | {cell.patience} | {cell.faults} | {options.budget} "
            f"| {_score(len(rows) - len(confirmed), len(rows))} | {_verdicts(rows)} "
            f"| {kept}/{len(rows)} | {_launches(rows)} | {_stops(rows)} "
            f"| {' '.join(map(str, confirmed)) or '-'} | {seconds:.0f} |",
            flush=True,
        )
    print()
    print(
        f"{len(study_seconds)} studies, {statistics.fmean(study_seconds):.1f} s each on average "
        f"(one process's time, max {max(study_seconds):.1f} s)"
    )


def run_hidden(args: argparse.Namespace, pool: ProcessPoolExecutor | None) -> None:
    """The hidden-gain case with sim.yaml's probe, one row per ``--noise`` given (default
    HIDDEN_NOISE alone)."""
    seeds = range(args.first_seed, args.first_seed + (args.studies or 30))
    noises = args.noise if args.noise_given else [HIDDEN_NOISE]
    budget = Options(probe=True).budget_for("hidden-gain")
    print(
        f"false_gains --hidden: hidden-gain with the probe, noise "
        f"{', '.join(f'{n:g}' for n in noises)} each kind, budget {budget} launches, "
        f"{len(seeds)} studies (seeds {seeds[0]}..{seeds[-1]}), jobs {args.jobs}"
    )
    print()
    print(
        "| case | noise | within 2% | 95% lower | confirmed / no gain / not settled "
        "| missed and no gain | launches med / p90 | stops | missed | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for noise in noises:
        t0 = time.monotonic()
        rows = run_seeds("hidden-gain", seeds, Options(noise=noise, probe=True), pool=pool)
        within = sum(r["within"] for r in rows)
        # A missed seed with its verdict's letter: c(onfirmed), n(o gain), s (not settled).
        missed = [f"{r['seed']}{LETTER[r['verdict']]}" for r in rows if not r["within"]]
        verdicts = [r["verdict"] for r in rows]
        wrong = sum(1 for r in rows if not r["within"] and r["verdict"] == "no_gain")
        print(
            f"| hidden-gain + probe | {noise:g} | {_score(within, len(rows))} "
            f"| {verdicts.count('confirmed')} / {verdicts.count('no_gain')} / "
            f"{verdicts.count('not_settled')} | {wrong} "
            f"| {_launches(rows)} | {_stops(rows)} | {' '.join(map(str, missed)) or '-'} "
            f"| {time.monotonic() - t0:.0f} |",
            flush=True,
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=None, help="per cell (40; --hidden: 30)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    p.add_argument("--noise", type=_floats, default=list(NOISES), help="e.g. 0.01,0.04")
    p.add_argument("--patience", type=_ints, default=list(PATIENCES), help="e.g. 8,16")
    p.add_argument("--faults", type=_faults, default=list(FAULTS), help="none,cold-drift")
    p.add_argument("--cells", type=_cells, default=None, help="NOISE/PATIENCE/FAULTS,...")
    p.add_argument("--budget", type=int, default=None, help="launches, every cell")
    p.add_argument("--drift-launches", type=int, default=None, help="default: the budget")
    p.add_argument("--hidden", action="store_true", help="the hidden-gain check instead")
    args = p.parse_args()
    args.noise_given = "--noise" in sys.argv[1:] or any(
        a.startswith("--noise=") for a in sys.argv[1:]
    )
    pool = ProcessPoolExecutor(max_workers=args.jobs) if args.jobs > 1 else None
    try:
        (run_hidden if args.hidden else run_grid)(args, pool)
    finally:
        if pool is not None:
            pool.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
