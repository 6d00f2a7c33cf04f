"""The simulated weight load follows the page cache and the load strategy (sim/page_cache.py),
and a smaller CUDA-graph capture list captures faster and runs larger batches eager."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.sim import page_cache
from tuner.sim.graphs import capture_share, capture_sizes, loses_graph
from tuner.sim.model import compilation_factor
from tuner.sim.phases import startup_plan
from tuner.sim.profiles import get_profile
from tuner.sim.settings import ArgError, parse_settings
from tuner.sim.startup import SimServer

KIMI = 547e9
SEEDS_RAM_GIB = 512e9 / 2**30  # the seeds' box: 512 GB


def test_calibrated_to_the_seeds_loads() -> None:
    room = page_cache.room(SEEDS_RAM_GIB)
    first = page_cache.weights_read_s(KIMI, 0.0, room, None)
    assert first == pytest.approx(36 * 60)  # a first load, 36 minutes
    kept = page_cache.cached_after(KIMI, room)
    assert kept < room < KIMI  # larger than the cache: only a part stays
    assert page_cache.weights_read_s(KIMI, kept, room, None) == pytest.approx(20 * 60)
    minimax = 230e9
    assert page_cache.cached_after(minimax, room) == minimax  # it fits: all of it stays
    assert page_cache.weights_read_s(minimax, minimax, room, None) == pytest.approx(75.0)


def test_prefetch_reads_what_the_cache_holds_faster_and_the_rest_as_lazily() -> None:
    big_room = page_cache.room(2048)
    lazy = page_cache.weights_read_s(KIMI, 0.0, big_room, "lazy")
    prefetched = page_cache.weights_read_s(KIMI, 0.0, big_room, "prefetch")
    assert lazy / prefetched == pytest.approx(1500 / 435)  # vLLM PR #36012
    for strategy in ("eager", "torchao", None):  # no public figure: read as the default
        assert page_cache.weights_read_s(KIMI, 0.0, big_room, strategy) == lazy
    room = page_cache.room(SEEDS_RAM_GIB)
    short = page_cache.weights_read_s(KIMI, 0.0, room, "prefetch")
    assert prefetched < short < lazy  # beyond the cache, the prefetch is evicted unread
    warm = page_cache.weights_read_s(KIMI, KIMI, big_room, "prefetch")
    assert warm == page_cache.weights_read_s(KIMI, KIMI, big_room, None)  # nothing to fetch


def test_the_cache_file_remembers_one_models_weights(tmp_path: Path) -> None:
    path = tmp_path / "study" / "page-cache"
    assert page_cache.read_cached(path, "kimi") == 0.0  # no file: a cold cache
    page_cache.remember(path, "kimi", 2.5e11)
    assert page_cache.read_cached(path, "kimi") == 2.5e11
    assert page_cache.read_cached(path, "minimax") == 0.0
    page_cache.remember(path, "minimax", 2.3e11)  # another model's weights evict them
    assert page_cache.read_cached(path, "kimi") == 0.0
    path.write_text("not a count\n")
    with pytest.raises(page_cache.PageCacheFileError, match="delete it"):
        page_cache.read_cached(path, "kimi")


def _server(tmp_path: Path, *extra: str) -> SimServer:
    argv = ["--port", "1", "--load-seconds", "2", "--host-ram-gib", "477", *extra]
    argv += ["--page-cache-file", str(tmp_path / "page-cache")]
    return SimServer(parse_settings(argv, {}), argv, {})


def test_a_second_launch_reads_what_the_first_left_cached(tmp_path: Path) -> None:
    first = _server(tmp_path)
    assert first._read_page_cache(477.0)
    cold = first.plan.weights_s
    assert cold == pytest.approx(startup_plan(first.profile, first.settings).weights_s, rel=0.01)
    assert first._remember_weights()
    second = _server(tmp_path)
    assert second._read_page_cache(477.0)
    assert second.plan.weights_s == pytest.approx(cold * 20 / 36, rel=0.01)
    third = _server(tmp_path, "--safetensors-load-strategy", "prefetch")
    assert third._read_page_cache(477.0)
    assert third.plan.weights_s < second.plan.weights_s / 1.5
    line = page_cache.checkpoint_line(get_profile("kimi-k2.5-int4-tp8").weights_gib * 2**30, 477)
    assert line.startswith("Filesystem type for checkpoints: EXT4. Checkpoint size: 510.00 GiB")


def test_a_smaller_capture_list_captures_faster_and_runs_larger_batches_eager() -> None:
    assert len(capture_sizes(512)) == 51 and capture_sizes(8) == [1, 2, 4, 8]
    plain = parse_settings([], {})
    small = parse_settings(["--max-cudagraph-capture-size", "8"], {})
    profile = get_profile("kimi-k2.5-int4-tp8")
    assert capture_share(plain) == 1.0
    assert startup_plan(profile, small).graphs_s == pytest.approx(
        startup_plan(profile, plain).graphs_s * 4 / 51
    )
    assert loses_graph(small, 16) and not loses_graph(small, 8)
    assert not loses_graph(plain, 1024)  # above 512 the profiles' tables already say it
    assert compilation_factor(small, 16) > compilation_factor(plain, 16) == 1.0


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--host-ram-gib", "0"], "--host-ram-gib must be positive"),
        (["--max-cudagraph-capture-size", "0"], "must be 1 or more"),
        (["--safetensors-load-strategy", "fast"], "invalid choice"),
    ],
)
def test_bad_values_are_refused(argv: list[str], says: str) -> None:
    with pytest.raises(ArgError, match=says):
        parse_settings(argv, {})


def test_without_host_ram_the_profile_figure_stands() -> None:
    plain = parse_settings(["--safetensors-load-strategy", "prefetch"], {})
    profile = get_profile("kimi-k2.5-int4-tp8")
    assert (
        startup_plan(profile, plain).weights_s
        == startup_plan(profile, parse_settings([], {})).weights_s
    )
