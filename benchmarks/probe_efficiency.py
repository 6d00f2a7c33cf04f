"""What the all-reduce probe saves, measured: seeded studies against `tuner sim`, with and
without the probe (issue 12, point 5; docs/probe.md "Measured").

Every launch is a real ``python -m tuner.sim`` subprocess and every probe a real ``python
-m tuner.sim.probe`` one, with the same profile and time scale. The sweep is
``tuner.study.run.sweep.run_sweep``, and the answer is `tuner best`'s, scored against the
simulator's noise-free truth.

Cases (the benchmark is benchmarks/search_efficiency.py's, about 0.3% noise between
launches):

- ``kimi-nccl``: the NCCL params of search_spaces/nccl.yaml against the kimi profile,
  where NCCL moves throughput by less than the noise. Target: the verdict ("keep the
  defaults") within the baseline launches plus at most 2.
- ``nccl-gain``: all of nccl.yaml's params against the nccl-gain profile, where
  NCCL_PROTO=LL gives a real 5%. Target: the same recommendation as without the probe, in
  fewer launches.

    python benchmarks/probe_efficiency.py                 # 6 seeds per case
    python benchmarks/probe_efficiency.py --seeds 2 --cases kimi-nccl
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

NCCL_YAML = ROOT / "search_spaces" / "nccl.yaml"
KIMI_SIZE = 7168 * 2  # Kimi K2.5's all-reduce message at one stream, bf16
NCCL_PARAMS = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_BUFFSIZE",
    "NCCL_NTHREADS",
    "CUDA_DEVICE_MAX_CONNECTIONS",
)
CASES = {
    "kimi-nccl": ("kimi-k2.5-int4-tp8", False, {}),
    "nccl-gain": ("nccl-gain", True, {"NCCL_PROTO": "LL"}),
}


@dataclass
class Row:
    case: str
    seed: int
    probe: bool
    launched: int
    stop: str
    recommended: dict[str, Any]
    right: bool
    seconds: float


def space(case: str, seed: int, probe: bool, time_scale: float) -> dict[str, Any]:
    profile, vllm_params, _ = CASES[case]
    shipped = yaml.safe_load(NCCL_YAML.read_text())
    params = {k: v for k, v in shipped["params"].items() if vllm_params or k in NCCL_PARAMS}
    out: dict[str, Any] = {
        "study": f"{case}-s{seed}-{'probe' if probe else 'plain'}",
        "server": {
            "command": ["{python}", "-m", "tuner.sim", "--profile", profile,
                        "--load-seconds", "0.2", "--time-scale", f"{time_scale:g}",
                        "--host", "127.0.0.1", "--port", "{port}"],
            "startup_timeout_s": 60,
            "stop_timeout_s": 10,
        },
        "params": params,
        "constraints": shipped["constraints"],
        "benchmark": {"prompt_tokens": 16, "max_tokens": 128, "concurrency": [1],
                      "requests": 3, "warmup": 0, "rounds": 3},
        "objective": {"metric": "output_throughput", "concurrency": 1},
        "stop": shipped["stop"],
    }  # fmt: skip
    if probe:
        out["probe"] = {
            "command": ["{python}", "-m", "tuner.sim.probe", "--profile", profile,
                        "--time-scale", f"{time_scale:g}", "--sizes", "{sizes}",
                        "--repeats", "{repeats}"],
            "sizes": [KIMI_SIZE],
            "layers": 61,
        }  # fmt: skip
    return out


@contextlib.contextmanager
def inside(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run(case: str, seed: int, probe: bool, time_scale: float, budget: int) -> Row:
    from tuner.space.spec import load_space
    from tuner.study.run.request import RunRequest
    from tuner.study.run.sweep import run_sweep
    from tuner.views.best import best_report

    root = Path(tempfile.mkdtemp(prefix=f"probe-eff-{case}-"))
    path = root / "space.yaml"
    path.write_text(yaml.safe_dump(space(case, seed, probe, time_scale), sort_keys=False))
    loaded = load_space(path)
    storage = f"sqlite:///{root / 'experiments.db'}"
    start = time.monotonic()
    with inside(root):
        result = run_sweep(loaded, RunRequest(storage, budget, seed=seed, preflight=False))
    report = best_report(storage, loaded.study_name)
    changed = dict(report.recommended.changed) if report.recommended else {}
    expected = CASES[case][2]
    right = {k: v for k, v in changed.items() if k in expected} == expected
    return Row(case, seed, probe, result.launched, result.stop_reason, changed, right,
               time.monotonic() - start)  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--cases", default="kimi-nccl,nccl-gain")
    p.add_argument("--time-scale", type=float, default=0.1)
    p.add_argument("--budget", type=int, default=30)
    args = p.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    rows: list[Row] = []
    for case in args.cases.split(","):
        for seed in range(args.seeds):
            for probe in (True, False):
                row = run(case, seed, probe, args.time_scale, args.budget)
                rows.append(row)
                print(
                    f"{case:10} seed {seed} {'probe' if probe else 'plain'}: "
                    f"{row.launched:2d} launches, {row.stop:9} right={row.right} "
                    f"{row.recommended} ({row.seconds:.0f} s)",
                    flush=True,
                )
    print()
    print("| case | probe | launches: median (min-max) | recommendation right | stop reasons |")
    print("|---|---|---|---|---|")
    for case in args.cases.split(","):
        for probe in (True, False):
            sel = [r for r in rows if r.case == case and r.probe == probe]
            launches = [r.launched for r in sel]
            stops = statistics.multimode([r.stop for r in sel])
            print(
                f"| {case} | {'yes' if probe else 'no'} | {statistics.median(launches):g} "
                f"({min(launches)}-{max(launches)}) | {sum(r.right for r in sel)}/{len(sel)} "
                f"| {', '.join(sorted(set(r.stop for r in sel)))} (mostly {stops[0]}) |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
