"""False gains on a flat surface: `tuner sim` at 3% between-launch noise (issue 23, point 6).

On the sim's ``flat`` profile no setting changes the throughput, so the only right answer of
a study is "keep the defaults"; every recommended change is a false gain. Each study here is
a real sweep (``run_sweep``: launcher, SQLite, HTTP benchmark) of four NCCL params (the
NCCL_ALGO / NCCL_PROTO / NCCL_MAX_NCHANNELS / NCCL_BUFFSIZE values of
search_spaces/sim.yaml, 180 configurations) with sim.yaml's stop rule but patience 8, no
probe, a budget of 20 launches, and its answer read as `tuner best` reads it
(``best_report(...).keep_defaults``). The test passes when at most ALLOWED of the N studies
recommend a change; its message gives k of N and each false recommendation's sentence.

The noise. ``--launch-noise 0.03`` moves a launch's mean throughput by 3% (relative sd)
from one launch to the next. The sim's ``--seed`` fixes that draw, and the same seed draws
the same offset at every launch (docs/simulator.md), so a study-wide ``--seed`` would leave
no between-launch noise at all. Each launch therefore starts through ``SEEDED_SIM``, which
takes the study's next launch index from a counter file (the sim's own
``next_launch_index``, under flock, as ``--launch-index-file`` does) and starts the sim with
``--seed STUDY_SEED * 1000 + INDEX``: every launch its own draw, the same draws on every run
(seed 1's draws gave the same false gain, all four settings changed, in all 3 runs of this
benchmark). What is not fixed is the machine's timing: a round is timed in wall clock on 2
shared cores.

The benchmark: one request of 16 tokens per round at ``--time-scale 0.5`` (a round of about
0.12 s), 3 rounds, no warmup. Shorter rounds time the machine more than the server: at
``--time-scale 0.1`` with 2 requests (45 ms rounds) a neighbour's load gave 2-5% sd per
round, tuner then assumes restarts move the mean at least that much (docs/statistics.md,
"Prior and shrinkage"), and today's false gains mostly disappeared (one run 0 of 20, another
2 of 20). Here a round's sd stayed at 1.2-1.4% (median) with the load average at 4-5.5.

The figures the threshold rests on (binomial over the studies):

- N = 12 studies (seeds 1..12), ALLOWED = 0.
- Today's sweep (before the final comparison), measured with this benchmark over 20 seeds:
  2 of 20 (seeds 1, 11) and 2 of 20 (seeds 1, 19), so about 10% (issue 23 says about 20%
  for its setup); seed 1's fixed draws gave a false gain in every run, so these 12 seeds
  fail today nearly surely (1 or 2 of 12 in the message).
- The final comparison (docs/statistics.md) recommends a change only when its interval on
  fresh launches clears min_gain, at ``stop.final_confidence`` (0.99: at most 0.5% of the
  studies whose search has a candidate at all, and only some do). At 95% that was 2.5%,
  and CI saw it happen: seed 11 claimed +10.5% (interval +1.3% to +19.7%) on one launch a
  side, the budget's last two (the final comparison is no longer squeezed so). P(pass)
  >= 0.995^12 = 0.94 if every study had a candidate; about 0.98 at a third of them.
- 12 and not 20: the alone tier runs one test at a time, and 20 studies took 460-472 s on
  the loaded 2-core VM, too much of CI's 25 minutes; seed 1 carries today's failure.

Time: a launch costs about 1.3 s on an idle machine (0.55-0.8 s to healthy, mostly the
sim's imports; 0.4 s of benchmark; tuner's own work between launches), a study 10 to 20
launches. Measured: 460 s and 472 s for the 20 studies with the load average at 4-5.5
(other jobs on the 2 cores; about 2 s a launch). Marked ``alone``: a neighbour's load slows
the rounds unevenly and adds within-launch noise.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep
from tuner.views.best import best_report

pytestmark = [pytest.mark.integration, pytest.mark.alone, pytest.mark.timeout(1200)]

SEEDS = range(1, 13)  # N = 12 studies
ALLOWED = 0  # studies that may recommend a change (see the module's docstring)
BUDGET = 20  # launches per study
LAUNCH_NOISE = 0.03
PATIENCE = 8

SEEDED_SIM = (
    "import sys; from tuner.sim import main; from tuner.sim.faults import next_launch_index; "
    "k = next_launch_index(sys.argv[1]); "
    "sys.exit(main([*sys.argv[3:], '--seed', str(int(sys.argv[2]) * 1000 + k)]))"
)
"""``python -c SEEDED_SIM COUNTER STUDY_SEED SIM_ARGS...``: the sim, seeded per launch."""

LAUNCHES_FILE = "sim-seed-launches"  # in {study_dir}


def flat_space(seed: int) -> dict[str, Any]:
    command = [
        "{python}", "-c", SEEDED_SIM, f"{{study_dir}}/{LAUNCHES_FILE}", str(seed),
        "--profile", "flat", "--launch-noise", f"{LAUNCH_NOISE:g}",
        "--load-seconds", "0.02", "--time-scale", "0.5",
        "--host", "127.0.0.1", "--port", "{port}",
    ]  # fmt: skip
    return {
        "study": f"flat-s{seed}",
        "server": {
            "command": command,
            "port": "auto",
            "startup_timeout_s": 30,
            "stop_timeout_s": 5,
        },
        "params": {
            "NCCL_ALGO": {
                "env": "NCCL_ALGO",
                "choices": ["default", "allreduce:ring", "allreduce:tree"],
            },
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "LL128", "Simple"]},
            "NCCL_MAX_NCHANNELS": {
                "env": "NCCL_MAX_NCHANNELS",
                "choices": ["default", 4, 8, 16, 32],
            },
            "NCCL_BUFFSIZE": {"env": "NCCL_BUFFSIZE", "choices": ["default", 2097152, 16777216]},
        },
        "benchmark": {
            "api": "completions",
            "prompt_tokens": 16,
            "max_tokens": 16,
            "concurrency": [1],
            "requests": 1,
            "warmup": 0,
            "rounds": 3,
        },
        "objective": {"metric": "output_throughput", "concurrency": 1},
        "stop": {
            "patience": PATIENCE,
            "min_gain": 0.01,
            "confidence": 0.95,
            "baseline_launches": 2,
            "confirmations": 1,
        },
    }


@dataclass(frozen=True)
class Outcome:
    seed: int
    keep_defaults: bool
    reason: str
    changed: dict[str, Any]
    launched: int
    stop_reason: str
    seconds: float
    between_sd: float  # the study's between-launch noise estimate (after shrinkage)
    round_sd: float  # the pooled relative sd of one round, within a launch


def run_flat_study(root: Path, seed: int) -> Outcome:
    root.mkdir()
    path = root / "space.yaml"
    path.write_text(yaml.safe_dump(flat_space(seed), sort_keys=False))
    space = load_space(path)
    storage = f"sqlite:///{root / 'experiments.db'}"
    runs = root / "runs"
    started = time.monotonic()
    # No pre-flight `tuner check`: it reads the command's --help, and `python -c` has
    # python's own; the sim's flags are not what this test is about.
    result = run_sweep(
        space, RunRequest(storage, BUDGET, seed=seed, preflight=False, runs_dir=runs)
    )
    seconds = time.monotonic() - started
    launches = Store(storage).launches(space.study_name)
    counted = int((runs / space.study_name / LAUNCHES_FILE).read_text())
    assert counted == len(launches), "every launch must draw its own seed"
    report = best_report(storage, space.study_name)
    assert report.recommended is not None and report.keep_defaults is not None, seed
    noise = report.noise
    assert noise is not None, seed
    return Outcome(
        seed=seed,
        keep_defaults=report.keep_defaults,
        reason=report.recommended.reason or "",
        changed=report.recommended.changed,
        launched=result.launched,
        stop_reason=result.stop_reason,
        seconds=seconds,
        between_sd=noise.rel_sd,
        round_sd=math.sqrt(noise.within_var or 0.0),
    )


def test_a_flat_surface_at_3pct_launch_noise_keeps_the_defaults(tmp_path: Path) -> None:
    started = time.monotonic()
    outcomes = [run_flat_study(tmp_path / f"s{seed}", seed) for seed in SEEDS]
    wall = time.monotonic() - started
    false = [o for o in outcomes if not o.keep_defaults]
    launches = sorted(o.launched for o in outcomes)
    round_sd = statistics.median(o.round_sd for o in outcomes)
    lines = [
        f"{len(false)} of {len(outcomes)} studies recommended a change on a flat surface "
        f"(at most {ALLOWED} allowed): --launch-noise {LAUNCH_NOISE:g}, patience {PATIENCE}, "
        f"budget {BUDGET}, seeds {SEEDS.start}..{SEEDS.stop - 1}; launches median "
        f"{launches[len(launches) // 2]}, max {launches[-1]}; a round's sd within a launch "
        f"{100 * round_sd:.1f}% (median); {wall:.0f} s",
        *(
            f"  seed {o.seed}: {o.changed} after {o.launched} launches ({o.stop_reason}, "
            f"{o.seconds:.0f} s; between-launch sd {100 * o.between_sd:.1f}%, round sd "
            f"{100 * o.round_sd:.1f}%): {o.reason}"
            for o in false
        ),
    ]
    print("\n".join(lines))
    if len(false) > ALLOWED:
        pytest.fail("\n".join(lines), pytrace=False)
