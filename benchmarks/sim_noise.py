"""The noise `tuner sim` shows through tuner's own benchmark client, launch after launch.

Calibrates ``--launch-noise`` / ``--round-noise`` (docs/simulator.md, "Noise"): starts the
simulator ``--launches`` times with one configuration, runs ``--rounds`` benchmark rounds of
the search benchmark's shape on each (concurrency 1, ``--requests`` requests of
``--max-tokens`` tokens, no warmup: benchmarks/search_efficiency.py's defaults), and estimates
the two noise figures as a study does (``tuner.stats.between_launch_variance`` without a
prior): the relative sd of one round within a launch, and the between-launch relative sd
beyond what round noise explains. Each setting is one line.

    python benchmarks/sim_noise.py                                  # the profile's own noise
    python benchmarks/sim_noise.py --noise 0.01,0.01 --noise 0.02,0.02 --launches 30

Every server it starts is stopped before the next starts (SIGTERM, then SIGKILL after 10 s).
"""

from __future__ import annotations

import argparse
import math
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tuner.bench import LoadSpec, PromptCursor, measure_level  # noqa: E402
from tuner.bench.summary import summarize  # noqa: E402
from tuner.launcher.spec import free_port  # noqa: E402
from tuner.stats import between_launch_variance, launch_estimate  # noqa: E402


def wait_healthy(base_url: str, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the simulator exited {proc.returncode} before /health answered")
        try:
            if httpx.get(f"{base_url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{base_url}/health did not answer within {timeout_s:g} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def one_launch(sim_args: list[str], load: LoadSpec, rounds: int) -> list[float]:
    """Start the simulator, benchmark ``rounds`` rounds, stop it; output tok/s per round."""
    port = free_port("127.0.0.1")
    base_url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "tuner.sim", *sim_args, "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(base_url, proc)
        values = []
        prompts = PromptCursor()  # each round its own prompts, as a study's
        for index in range(rounds):
            window = prompts.take(load)
            summary = summarize(measure_level(base_url, window, round_index=index))
            values.append(summary.output_throughput)
        return values
    finally:
        stop(proc)


def band(sd: float, dof: float) -> str:
    """sd with a rough 90% interval (normal approximation to the sd's sampling error)."""
    if dof <= 0:
        return "-"
    half = 1.645 / math.sqrt(2 * dof)
    return f"{100 * sd:.2f}% [{100 * sd * (1 - half):.2f}, {100 * sd * (1 + half):.2f}]"


def measure(args: argparse.Namespace, noise: str | None) -> str:
    sim_args = [
        "--profile", args.profile,
        "--time-scale", f"{args.time_scale:g}", "--load-seconds", f"{args.load_seconds:g}",
    ]  # fmt: skip
    if noise:
        launch, _, within = noise.partition(",")
        sim_args += ["--launch-noise", launch]
        if within:
            steps = args.requests * args.max_tokens
            sim_args += ["--round-noise", within, "--round-steps", str(steps)]
    load = LoadSpec(
        model=f"sim/{args.profile}",
        prompt_tokens=args.prompt_tokens,
        max_tokens=args.max_tokens,
        concurrency=1,
        requests=args.requests,
        warmup=0,
    )
    launches = [
        launch_estimate(one_launch(sim_args, load, args.rounds)) for _ in range(args.launches)
    ]
    noise_est = between_launch_variance([launches], prior_dof=0.0, prior_from_within=False)
    assert noise_est is not None
    means = [launch.mean for launch in launches]
    raw = statistics.stdev(means) / statistics.fmean(means)
    between = math.sqrt(noise_est.observed_var or 0.0)
    within = noise_est.within_rel_sd or 0.0
    return (
        f"{noise or '(profile)':<12} between {band(between, noise_est.observed_dof):<24} "
        f"round {band(within, noise_est.within_dof):<24} launch means {100 * raw:.2f}% "
        f"({args.launches} launches x {args.rounds} rounds)"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--noise",
        action="append",
        default=None,
        metavar="LAUNCH_SD[,ROUND_SD]",
        help="--launch-noise [and --round-noise] to measure (repeatable; default: none)",
    )
    p.add_argument("--profile", default="flat")
    p.add_argument("--launches", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--prompt-tokens", type=int, default=16)
    p.add_argument("--time-scale", type=float, default=0.1)
    p.add_argument("--load-seconds", type=float, default=0.1)
    args = p.parse_args(argv)
    print(
        f"sim noise through tuner's client: profile {args.profile}, --time-scale "
        f"{args.time_scale:g}, concurrency 1, {args.requests} x {args.max_tokens} tokens a round "
        "(sd with a rough 90% interval)",
        flush=True,
    )
    for noise in args.noise or [None]:
        print(measure(args, noise), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
