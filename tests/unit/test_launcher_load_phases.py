"""The phases of a load from a server's log: vLLM's real lines, CPU build and GPU threads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.launcher.load_phases import NEEDLES, LoadPhases, load_phases
from tuner.launcher.logfile import matching_lines
from tuner.launcher.progress import split_lines

FIXTURES = Path(__file__).parent / "fixtures" / "vllm_logs"


def phases_of(name: str, healthy_s: float | None = None) -> LoadPhases:
    return load_phases(split_lines((FIXTURES / name).read_text()), healthy_s=healthy_s)


def test_the_cpu_builds_full_load_weights_and_compile_from_its_warm_up() -> None:
    # vLLM 0.32.0's CPU build prints no "Model loading took" and no torch.compile total:
    # the model's initialisation plus the weights' read, and the compile warm-up's span.
    phases = phases_of("cpu_0.32.0_full.txt", healthy_s=58.59)
    assert phases.found == ("weights", "compile")
    assert phases.weights_s == pytest.approx(0.106352 + 0.01)
    assert phases.compile_s == 24.0  # 00:49:40 to 00:50:04
    assert phases.cuda_graphs_s is None
    assert phases.rest_s == pytest.approx(58.59 - 24.116352)
    assert phases.processes == 1 and not phases.compile_cached


def test_the_cpu_builds_dummy_load_reads_no_weights() -> None:
    # --load-format dummy: no "Loading weights took" line, the model only initialised.
    phases = phases_of("cpu_0.32.0_dummy.txt", healthy_s=80.74)
    assert phases.found == ("weights", "compile")
    assert phases.weights_s == pytest.approx(0.114375)
    assert phases.compile_s == 36.0  # 00:51:41 to 00:52:17 on the shared machine


def test_the_cpu_builds_eager_load_has_no_compile() -> None:
    phases = phases_of("cpu_0.32.0_eager.txt", healthy_s=37.37)
    assert phases.found == ("weights",)
    assert phases.rest_s == pytest.approx(37.37 - 0.112158)


def test_a_v1_gpu_log_takes_model_loading_over_the_weights_read() -> None:
    # "Model loading took 12.66 GiB memory and 31.657031 seconds" covers the 24.84 s read.
    phases = phases_of("gpu_v1_tp1_issue38820.txt")
    assert phases.weights_s == pytest.approx(31.657031)
    assert phases.compile_s == pytest.approx(3.54)  # the only part the excerpt shows
    assert phases.rest_s is None  # no time to healthy given


def test_tensor_parallel_ranks_count_a_phase_once() -> None:
    phases = phases_of("gpu_v1_tp4_issue18136.txt", healthy_s=200.0)
    assert phases.cuda_graphs_s == 78.0 and phases.processes == 4
    assert phases.rest_s == 122.0


def test_v0_ranks_weights_take_the_slowest_rank() -> None:
    phases = phases_of("gpu_v0_ranks_issue14095.txt")
    assert phases.found == ("weights",)
    assert phases.weights_s == pytest.approx(81.786858)
    assert phases.processes == 8


def test_v0_graph_capture_without_prefixes() -> None:
    phases = phases_of("gpu_v0_tp1_pr11349.txt", healthy_s=40.0)
    assert phases.found == ("cuda_graphs",) and phases.cuda_graphs_s == 14.0


def test_old_v0_weights_in_gigabytes_only_are_not_a_time() -> None:
    phases = phases_of("gpu_v0_tp8_instructlab2092.txt", healthy_s=90.0)
    assert phases.found == () and phases.processes == 0
    assert phases.rest_s == 90.0


def test_a_warm_compile_cache_is_seen_and_the_total_beats_its_parts() -> None:
    phases = phases_of("gpu_v1_tp2_cached_club3090_142.txt")
    assert phases.compile_s == pytest.approx(9.61)  # not the 5.958 s cache read
    assert phases.compile_cached


def test_a_process_adds_up_its_compiles_and_ranks_run_side_by_side() -> None:
    lines = [
        # rank 0: backbone and drafter compiled one after the other
        "(Worker_TP0 pid=10) INFO 05-15 16:02:37 [monitor.py:53] torch.compile took 9.61 s "
        "in total",
        "(Worker_TP0 pid=10) INFO 05-15 16:04:00 [monitor.py:53] [eagle_head] torch.compile took "
        "2.00 s in total",
        # rank 1: one compile, slower, but less than rank 0's two
        "(Worker_TP1 pid=11) INFO 05-15 16:02:38 [monitor.py:53] torch.compile took 10.50 s "
        "in total",
    ]
    assert load_phases(lines).compile_s == pytest.approx(11.61)


def test_compile_parts_count_when_no_total_is_printed() -> None:
    lines = [
        "(EngineCore_DP0 pid=269) INFO 10-14 22:48:36 [backends.py:559] Dynamo bytecode "
        "transform time: 5.80 s",
        "(EngineCore_DP0 pid=269) INFO 10-14 22:49:05 [backends.py:218] Compiling a graph for "
        "dynamic shape takes 28.96 s",
    ]
    assert load_phases(lines).compile_s == pytest.approx(34.76)
    together = (
        "(EngineCore pid=8) INFO 07-22 04:31:51 [monitor.py:48] torch.compile and initial "
        "profiling/warmup run together took 34.69 s in total"
    )
    assert load_phases([together]).compile_s == pytest.approx(34.69)
    assert load_phases([*lines, together]).compile_s == pytest.approx(34.76)


@pytest.mark.parametrize(
    ("line", "phase", "seconds"),
    [
        # colours, nested Ray prefixes, its dedup suffix, a Slurm label before them
        (
            "\x1b[1;36m(EngineCore_DP0 pid=812)\x1b[0;0m INFO 10-06 12:00:40 "
            "[gpu_model_runner.py:3480] Graph capturing finished in 8 secs, took 0.31 GiB",
            "cuda_graphs",
            8.0,
        ),
        (
            "0: (EngineCore_0 pid=1) (RayWorkerWrapper pid=2, ip=10.0.0.2) INFO 10-08 13:12:26 "
            "[gpu_model_runner.py:2007] Model loading took 7.3272 GiB and 10.485893 seconds "
            "[repeated 4x across cluster]",
            "weights",
            10.485893,
        ),
        (
            "INFO 12-19 22:57:03 model_runner.py:1535] Graph capturing finished in 12 secs.",
            "cuda_graphs",
            12.0,
        ),
        (
            "INFO 04-09 02:06:25 [monitor.py:33] torch.compile takes 16.61 s in total",
            "compile",
            16.61,
        ),
        (
            "(Worker pid=5) [Stage-1] INFO 02-23 03:40:37 [backends.py:368] Compiling a graph for "
            "compile range (1, 32768) takes 2.25 s",
            "compile",
            2.25,
        ),
        (
            "INFO 03-02 17:57:18 [model_runner.py:1117] Loading model weights took 8.4050 GB and "
            "81.775431 seconds",
            "weights",
            81.775431,
        ),
    ],
)
def test_one_line_of_each_kind(line: str, phase: str, seconds: float) -> None:
    phases = load_phases([line])
    assert phases.found == (phase,)
    assert phases.seconds(phase) == pytest.approx(seconds)


def test_a_log_that_says_nothing_gives_nothing() -> None:
    for lines in ([], ["", "garbage took forever", "Graph capturing finished in x secs"]):
        phases = load_phases(lines, healthy_s=12.0)
        assert phases.found == () and phases.processes == 0
        assert phases.rest_s == 12.0
    assert load_phases(["Warming up done."]).found == ()  # an end without a start


def test_the_cpu_warm_up_across_new_year() -> None:
    lines = [
        "(Worker pid=7) INFO 12-31 23:59:50 [cpu_model_runner.py:87] Warming up model for the "
        "compilation...",
        "(Worker pid=7) INFO 01-01 00:00:20 [cpu_model_runner.py:91] Warming up done.",
    ]
    assert load_phases(lines).compile_s == 30.0


def test_json_round_trip_and_bad_values() -> None:
    phases = phases_of("cpu_0.32.0_full.txt", healthy_s=58.59)
    stored = phases.to_json()
    assert stored["found"] == ["weights", "compile"]
    assert stored["rest_s"] == pytest.approx(34.474, abs=1e-3)
    back = LoadPhases.from_json(stored)
    assert back is not None and back.found == phases.found
    assert back.compile_s == phases.compile_s
    assert LoadPhases.from_json(None) is None
    assert LoadPhases.from_json([1, 2]) is None  # type: ignore[arg-type]
    odd = LoadPhases.from_json({"weights_s": "3", "compile_s": True, "healthy_s": float("nan")})
    assert odd is not None and odd.found == () and odd.healthy_s is None


def test_matching_lines_reads_only_the_lines_that_matter(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    noise = "DEBUG 01-01 00:00:00 [x.py:1] nothing here\n" * 5000
    bar = "Loading safetensors checkpoint shards:  50% Completed | 1/2\r" * 50
    log.write_text(
        noise
        + (FIXTURES / "cpu_0.32.0_full.txt").read_text()
        + bar
        + "INFO 12-19 22:58:41 model_runner.py:1535] Graph capturing finished in 14 secs"
    )
    lines = matching_lines(log, NEEDLES, block_bytes=4096)
    assert all(any(n in line for n in NEEDLES) for line in lines)
    assert lines[-1].endswith("finished in 14 secs")  # the last line, without its newline
    phases = load_phases(lines)
    assert phases.found == ("weights", "compile", "cuda_graphs")
    assert matching_lines(log, NEEDLES, max_bytes=1024) == []  # the cap: noise only
    assert matching_lines(tmp_path / "missing.log", NEEDLES) == []


def test_the_kv_cache_size_is_read_beside_the_phases() -> None:
    v1 = (
        "(EngineCore_DP0 pid=26283) INFO 11-06 10:51:48 [kv_cache_utils.py:1229] GPU KV cache "
        "size: 75,840 tokens"
    )
    phases = load_phases([v1, v1.replace("75,840", "80,000")])
    assert phases.kv_cache_tokens == 75840 and phases.found == () and phases.said_anything
    assert phases.processes == 0  # the KV cache is no phase
    v0 = (
        "INFO 08-19 07:51:08 distributed_gpu_executor.py:56] # GPU blocks: 22982, "
        "# CPU blocks: 6241"
    )
    v0_8 = "INFO 03-21 20:15:46 [executor_base.py:111] # cuda blocks: 7191, # CPU blocks: 512"
    assert load_phases([v0]).kv_cache_blocks == 22982
    assert load_phases([v0_8]).kv_cache_blocks == 7191
    stored = load_phases([v1, v0]).to_json()
    assert (stored["kv_cache_tokens"], stored["kv_cache_blocks"]) == (75840, 22982)
    back = LoadPhases.from_json(stored)
    assert back is not None and back.kv_cache_tokens == 75840
    assert LoadPhases.from_json({"kv_cache_tokens": "many"}) == LoadPhases()
    assert not load_phases(["nothing"]).said_anything
