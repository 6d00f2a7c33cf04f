"""`tuner best --format nccl-tuner`: NCCL's choice per message size, read back as NCCL would.

The table is read by tests/unit/nccl_tuner_parser.py, written from the example plugin's
README and sharing no code with the writer. On the sim's kimi profile the probe sees the
sim's per-size crossover (tuner/sim/model.py's protocol deltas: LL fastest at one
stream's 14 KB, LL128 at 56 KB and at a 256-token prefill's 3.5 MB, where LL is 2.7%
slower than NCCL's own choice): the table must set LL at decode and not at prefill.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from tests.fakes import FakeRunner
from tests.probe_helpers import KIMI_SIZE, nccl_space, sim_probe, sim_speed, write
from tests.unit.nccl_tuner_parser import ALGORITHMS, PROTOCOLS, lookup, parse_table
from tuner.errors import ConfigError
from tuner.nccl import ALGORITHMS as TUNER_ALGORITHMS
from tuner.nccl import PROTOCOLS as TUNER_PROTOCOLS
from tuner.probe.per_size import (
    MAX_BYTES,
    PLUGIN_ALGORITHMS,
    PluginChoice,
    per_size_choices,
    plugin_choice,
    size_ranges,
)
from tuner.probe.plugin_table import read_table
from tuner.probe.run import ProbeResult
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep
from tuner.views.best import best_report
from tuner.views.best_print import print_best

DECODE_4 = 4 * KIMI_SIZE  # four streams
PREFILL = 256 * 7168 * 2  # one 256-token prompt of Kimi K2.5 in bf16


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"NCCL_PROTO": "LL"}, PluginChoice("ring", "ll", -1, algorithm_assumed=True)),
        (
            {"NCCL_PROTO": "Simple", "NCCL_ALGO": "allreduce:tree"},
            PluginChoice("tree", "simple", -1),
        ),
        ({"NCCL_PROTO": "allreduce:LL128"}, PluginChoice("ring", "ll128", -1, True)),
        (
            {"NCCL_PROTO": "LL", "NCCL_MIN_NCHANNELS": "4", "NCCL_MAX_NCHANNELS": "4"},
            PluginChoice("ring", "ll", 4, True),
        ),
        ({"NCCL_ALGO": "allreduce:ring"}, None),  # a row names a protocol too
        ({"NCCL_PROTO": "LL,LL128"}, None),  # NCCL picks among them: no one row
        ({"NCCL_PROTO": "^LL"}, None),
        ({"NCCL_PROTO": "LL", "NCCL_MAX_NCHANNELS": "8"}, None),  # a range, not a count
        ({"NCCL_PROTO": "LL", "NCCL_BUFFSIZE": "8388608"}, None),  # no column for it
        ({"NCCL_MAX_NCHANNELS": "8"}, None),
        ({"NCCL_PROTO": "Bogus"}, None),
        ({}, None),  # the default itself is no row
    ],
)
def test_a_setting_is_a_row_only_when_a_row_can_say_all_it_changes(
    env: dict[str, str], expected: PluginChoice | None
) -> None:
    assert plugin_choice(env, {}) == expected


def test_every_algorithm_and_protocol_has_the_plugins_spelling() -> None:
    assert sorted(PLUGIN_ALGORITHMS) == sorted(TUNER_ALGORITHMS)
    assert sorted(PLUGIN_ALGORITHMS.values()) == sorted(ALGORITHMS)
    assert sorted(TUNER_PROTOCOLS) == sorted(PROTOCOLS)  # the same words: ll, ll128, simple


def _result(**by_size: tuple[float, ...]) -> ProbeResult:
    return ProbeResult(samples={int(k[1:]): v for k, v in by_size.items()})


def test_per_size_the_fastest_significant_setting_wins_and_noise_wins_nothing() -> None:
    results = {
        "d": _result(
            s1=(10.0, 10.1, 9.9, 10.0), s100=(50, 50.5, 49.5, 50), s9=(20, 20, 20.1, 19.9)
        ),
        "ll": _result(s1=(9.0, 9.1, 8.9, 9.0), s100=(60, 60, 60, 60), s9=(19, 19, 19.1, 18.9)),
        "ll128": _result(
            s1=(9.5, 9.6, 9.4, 9.5), s100=(49.9, 50.6, 49.4, 50), s9=(18, 18, 18, 18.1)
        ),
        # faster on average at size 100, but too noisy to tell
        "simple": _result(s1=(12, 12, 12, 12), s100=(30, 70, 20, 75), s9=(25, 25, 25, 25)),
    }
    choices = {
        "ll": PluginChoice("ring", "ll", -1),
        "ll128": PluginChoice("ring", "ll128", -1),
        "simple": PluginChoice("ring", "simple", -1),
    }
    decisions = per_size_choices(results, choices, "d", [100, 1, 9], confidence=0.95)
    assert [(d.size, d.key) for d in decisions] == [(1, "ll"), (9, "ll128"), (100, None)]
    assert decisions[0].comparison is not None and decisions[0].comparison.gain == pytest.approx(
        0.1
    )
    ranges = size_ranges(decisions)
    # 1 owns up to the geometric mean of 1 and 9 (3), 9 up to that of 9 and 100 (30):
    # above that NCCL decides (no row).
    assert [(r.min_bytes, r.max_bytes, r.choice.protocol) for r in ranges] == [
        (0, 3, "ll"),
        (4, 30, "ll128"),
    ]


def test_neighbours_with_one_choice_merge_and_the_largest_reaches_the_top() -> None:
    same = PluginChoice("ring", "ll128", -1)
    results = {
        "d": _result(s10=(10, 10.1, 9.9), s1000=(100, 101, 99)),
        "x": _result(s10=(9, 9.1, 8.9), s1000=(90, 91, 89)),
    }
    ranges = size_ranges(per_size_choices(results, {"x": same}, "d", [10, 1000], confidence=0.95))
    assert [(r.min_bytes, r.max_bytes, r.sizes) for r in ranges] == [(0, MAX_BYTES, (10, 1000))]


def test_a_size_the_default_was_not_probed_at_is_left_out() -> None:
    # An older study: its probes predate the prefill sizes.
    results = {"d": _result(s10=(10, 10.1, 9.9)), "x": _result(s10=(9, 9.1, 8.9))}
    decisions = per_size_choices(
        results, {"x": PluginChoice("ring", "ll", -1)}, "d", [10, 5000], confidence=0.95
    )
    assert [d.size for d in decisions] == [10]


def _study(tmp_path: Path, probe_runner, profile: str = "kimi-k2.5-int4-tp8") -> str:  # type: ignore[no-untyped-def]
    space = nccl_space(benchmark={"concurrency": [1, 4]})
    space["probe"] = {
        "command": ["unused"],
        "sizes": [KIMI_SIZE, DECODE_4],
        "prefill_sizes": [PREFILL],
        "layers": 61,
    }
    loaded = load_space(write(tmp_path, space))
    storage = f"sqlite:///{tmp_path}/p.db"
    runner = FakeRunner(Store(storage), "p", speed=sim_speed(loaded.spec, profile), seed=0)
    run_sweep(
        loaded, RunRequest(storage, 4, seed=0), Seams(runner=runner, probe_runner=probe_runner)
    )
    return storage


def _printed(storage: str) -> tuple[str, str]:
    out, notes = Console(record=True, width=300), Console(record=True, width=300)
    print_best(best_report(storage, "p"), "nccl-tuner", out, notes)
    return out.export_text(), notes.export_text()


def test_on_the_sim_the_table_sets_ll_at_decode_and_leaves_prefill_to_ll128(
    tmp_path: Path,
) -> None:
    sizes = (KIMI_SIZE, DECODE_4, PREFILL)
    storage = _study(tmp_path, sim_probe("kimi-k2.5-int4-tp8", noise=0.0005, sizes=sizes))
    text, notes = _printed(storage)
    rows = parse_table(text)
    assert rows and all(r.collective == "allreduce" for r in rows)
    # tuner check's reader (the writer's rules) reads back what the writer wrote.
    read = read_table(text)
    assert read.problems == () and len(read.rows) == len(rows)
    assert [r.line() for r in read.rows] == [
        line for line in text.splitlines() if not line.startswith("#")
    ]
    # Contiguous and non-overlapping, in order.
    for a, b in zip(rows, rows[1:], strict=False):
        assert b.min_bytes == a.max_bytes + 1
    assert all((r.n_nodes, r.n_ranks, r.num_pipe_ops, r.reg_buff) == (1, 8, -1, -1) for r in rows)
    decode = lookup(rows, "allreduce", KIMI_SIZE, 1, 8)
    prefill = lookup(rows, "allreduce", PREFILL, 1, 8)
    assert decode is not None and decode.protocol == "ll"
    # The sim: LL is 2.7% slower than NCCL's own choice at 3.5 MB, LL128 0.3% faster.
    assert prefill is not None and prefill.protocol == "ll128"
    assert lookup(rows, "allreduce", KIMI_SIZE, 1, 4) is None  # another TP: NCCL's choice
    assert "(prefill)" in text and "NCCL_PROTO=LL " in text
    assert text.isascii()
    assert "caps every\n# collective it sees at 1 channel" in text  # the shipped plugin's trap
    assert "NCCL_TUNER_PLUGIN=/path/to/libnccl-tuner-example.so" in text + notes
    assert "NCCL_TUNER_CONFIG_FILE=" in notes
    document = best_report(storage, "p").to_json()["nccl_tuner"]
    assert [r["protocol"] for r in document["rows"]] == [r.protocol for r in rows]
    assert [s["prefill"] for s in document["sizes"]] == [False, False, True]


def test_with_the_default_noise_no_size_has_a_significant_winner_and_the_file_says_so(
    tmp_path: Path,
) -> None:
    # Every NCCL setting probes the same: nothing can be significantly faster anywhere.
    def same(env: object, unset: object) -> ProbeResult:
        times = (10.0, 10.2, 9.8, 10.1, 9.9)
        return ProbeResult({KIMI_SIZE: times, DECODE_4: times, PREFILL: times}, {"world_size": 8})

    text, _ = _printed(_study(tmp_path, same))
    assert parse_table(text) == []
    assert "keep NCCL's own choice" in text
    assert all(line.startswith("#") for line in text.splitlines() if line)


def test_a_long_study_name_is_cut_to_the_plugins_line_buffer(tmp_path: Path) -> None:
    from dataclasses import replace

    storage = _study(
        tmp_path, sim_probe("kimi-k2.5-int4-tp8", sizes=(KIMI_SIZE, DECODE_4, PREFILL))
    )
    table = best_report(storage, "p").nccl_tuner
    assert table is not None
    text = replace(table, study="s" * 400).csv_text()
    assert parse_table(text) == parse_table(table.csv_text())  # the reader takes it whole
    assert max(len(line.encode()) for line in text.splitlines()) == 255
    assert read_table(text).problems == ()


def test_a_study_without_a_probe_has_no_table_and_says_how_to_get_one(tmp_path: Path) -> None:
    space = nccl_space(probe=False)
    loaded = load_space(write(tmp_path, space))
    storage = f"sqlite:///{tmp_path}/p.db"
    runner = FakeRunner(Store(storage), "p", speed=sim_speed(loaded.spec, "kimi-k2.5-int4-tp8"))
    run_sweep(loaded, RunRequest(storage, 2, seed=0), Seams(runner=runner))
    with pytest.raises(ConfigError, match="add a probe: section"):
        _printed(storage)


def test_the_parser_refuses_what_the_format_does_not_allow() -> None:
    from tests.unit.nccl_tuner_parser import TableError

    good = (
        "# c\n\nallreduce,0,65536,tree,simple,2,1,-1,-1,1\nbroadcast,0,32768,tree,simple,-1,1,-1\n"
    )
    assert [r.collective for r in parse_table(good)] == ["allreduce", "broadcast"]
    for bad in (
        "allreduce,0,10,Ring,ll,-1,1,8,-1,-1",  # names are lower case
        "allreduce,0,10,ring,ll,-1,1",  # 7 fields
        "allreduce, 0,10,ring,ll,-1,1,8",  # a space after a comma
        "allreduce,10,0,ring,ll,-1,1,8",
        "allreduce,0,10,ring,ll,-1,1,8,-1,2",
        "# " + "x" * 300,
    ):
        with pytest.raises(TableError):
            parse_table(bad)
    assert lookup(parse_table(good), "allreduce", 65537, 1, 8) is None  # past its rows
