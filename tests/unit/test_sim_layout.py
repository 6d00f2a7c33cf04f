"""The sim's MiniMax profile across parallel layouts: the seeds' figures, the refusals, PP.

Figures from calibration.yaml: TP=4 84 tok/s at one stream and 2,586 at 256; TP=8 with
expert parallelism 3,982 at 256 and 3,997 at 1024. TP=8+EP at one stream (80) and every
pipeline-parallel figure are invented (tuner/sim/profiles.py says so beside them).
"""

from __future__ import annotations

import pytest

from tuner.sim.checks import first_failure
from tuner.sim.model import expected_output_throughput, gpus_used, kv_capacity_tokens
from tuner.sim.profiles import MINIMAX
from tuner.sim.settings import ArgError, SimSettings, parse_settings

TP4: list[str] = []
TP8_EP = ["-tp", "8", "--enable-expert-parallel"]
TP4_PP2 = ["-pp", "2"]
TP2_PP2 = ["-tp", "2", "-pp", "2"]
_LAYOUTS = {"tp4": TP4, "tp8-ep": TP8_EP, "tp4-pp2": TP4_PP2, "tp2-pp2": TP2_PP2}


def sim(argv: list[str]) -> SimSettings:
    return parse_settings(["--profile", MINIMAX.name, *argv], {})


def tok_s(argv: list[str], concurrency: int) -> float:
    return expected_output_throughput(MINIMAX, sim(argv), concurrency)


def per_gpu(argv: list[str], concurrency: int) -> float:
    return tok_s(argv, concurrency) / gpus_used(MINIMAX, sim(argv))


@pytest.mark.parametrize(
    ("argv", "concurrency", "seed"),
    [(TP4, 1, 84.0), (TP4, 256, 2586.0), (TP8_EP, 256, 3982.0), (TP8_EP, 1024, 3997.0)],
)
def test_the_seeds_figures(argv: list[str], concurrency: int, seed: float) -> None:
    assert tok_s(argv, concurrency) == pytest.approx(seed, rel=0.01)


def test_tp8_with_ep_wins_the_whole_server_at_256_streams_only() -> None:
    at_256 = {name: tok_s(a, 256) for name, a in _LAYOUTS.items()}
    assert max(at_256, key=at_256.__getitem__) == "tp8-ep"
    at_1 = {name: tok_s(a, 1) for name, a in _LAYOUTS.items()}
    assert max(at_1, key=at_1.__getitem__) == "tp4"
    assert tok_s(TP8_EP, 1) == pytest.approx(80.0, rel=0.01)  # invented: below TP=4's 84


def test_per_gpu_tp4_wins_at_every_concurrency() -> None:
    for concurrency in (1, 8, 256, 1024):
        figures = {name: per_gpu(a, concurrency) for name, a in _LAYOUTS.items()}
        assert max(figures, key=figures.__getitem__) == "tp4", (concurrency, figures)
    assert per_gpu(TP4, 256) == pytest.approx(646.5, rel=0.01)
    assert per_gpu(TP8_EP, 256) == pytest.approx(497.75, rel=0.01)


def test_pipeline_parallelism_pays_hops_at_one_stream_and_overlaps_at_many() -> None:
    # One stream: the full model's step, plus a hand-over per stage, at the efficiency.
    fig = MINIMAX.pipeline
    one = 1 / tok_s(TP4, 1)
    assert 1 / tok_s(TP4_PP2, 1) == pytest.approx((one + 2 * fig.hop_s) / fig.efficiency)
    # 256 streams: two microbatches of 128, so better than TP=4 alone on the same TP ranks,
    # but below TP=8 with EP on the same 8 GPUs.
    assert tok_s(TP4, 256) < tok_s(TP4_PP2, 256) < tok_s(TP8_EP, 256)


def test_pipeline_stages_split_the_weights_and_kv_cache() -> None:
    assert first_failure(MINIMAX, sim(["-tp", "2"])) is not None  # 107 GiB a GPU: OOM
    assert first_failure(MINIMAX, sim(TP2_PP2)) is None  # 53.5 GiB a GPU: it fits
    assert gpus_used(MINIMAX, sim(TP4_PP2)) == 8
    assert kv_capacity_tokens(MINIMAX, sim(TP4_PP2)) > 2 * kv_capacity_tokens(MINIMAX, sim(TP4))


@pytest.mark.parametrize(
    "argv", [["-tp", "8", "-pp", "2", "--enable-expert-parallel"], ["-tp", "6", "-pp", "2"]]
)
def test_more_ranks_than_gpus_are_refused_at_start(argv: list[str]) -> None:
    failure = first_failure(MINIMAX, sim(argv))
    assert failure is not None and failure.phase == "start"
    assert "is larger than the number of available GPUs (8)" in failure.exception


def test_pipeline_parallel_size_is_positive() -> None:
    with pytest.raises(ArgError, match="--pipeline-parallel-size must be positive"):
        sim(["-pp", "0"])
