"""The nccl-tests adapter: all_reduce_perf's table read by its column names, sizes interpolated."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tuner.probe.nccl_tests import interpolate, parse_table, probe_json
from tuner.probe.run import ProbeError, parse_probe_output

SAMPLE = (Path(__file__).parent / "data" / "all_reduce_perf_pcie8.txt").read_text()


def test_every_row_of_the_table_is_read_and_log_lines_between_rows_are_skipped() -> None:
    rows = parse_table(SAMPLE)
    assert [r.size for r in rows] == [8 * 2**i for i in range(25)]
    first, last = rows[0], rows[-1]
    assert (first.out_of_place_us, first.in_place_us, first.busbw_gbps) == (38.41, 37.96, 0.0)
    assert last.out_of_place_us == 54790.0  # large times are printed without decimals


def test_columns_are_found_by_name_in_an_older_release_without_root() -> None:
    text = (
        "#       size         count      type   redop     time   algbw   busbw  error"
        "     time   algbw   busbw  error\n"
        "        1024           256     float     sum    12.50    0.08    0.14  0e+00"
        "    12.25    0.08    0.15  0e+00\n"
    )
    (row,) = parse_table(text)
    assert (row.size, row.out_of_place_us, row.in_place_us) == (1024, 12.5, 12.25)


def test_output_without_a_table_says_what_command_is_expected() -> None:
    with pytest.raises(ProbeError, match="no all_reduce_perf table"):
        parse_table("all_reduce_perf: command not found\n")


def test_a_size_between_two_measured_ones_is_interpolated_in_log_log() -> None:
    measured = {8192: 50.66, 16384: 58.37}
    value = interpolate(measured, 14336)  # Kimi's message at batch 1: 7168 x 2 bytes
    f = math.log(14336 / 8192) / math.log(2)
    assert value == pytest.approx(math.exp((1 - f) * math.log(50.66) + f * math.log(58.37)))
    assert 50.66 < value < 58.37
    assert interpolate(measured, 8192) == 50.66
    with pytest.raises(ProbeError, match="widen its -b/-e"):
        interpolate(measured, 1 << 20)


def test_the_json_follows_the_probe_contract_with_one_sample_per_run() -> None:
    rows = parse_table(SAMPLE)
    slower = [type(r)(r.size, r.out_of_place_us * 1.1, r.in_place_us, r.busbw_gbps) for r in rows]
    doc = probe_json([rows, slower], [14336, 114688])
    sizes, samples, extra = parse_probe_output(__import__("json").dumps(doc))
    assert set(sizes) == {14336, 114688}
    assert len(samples[14336]) == 2
    assert samples[14336][1] == pytest.approx(samples[14336][0] * 1.1)
    assert extra["backend"] == "nccl-tests" and extra["placement"] == "out-of-place"


def test_several_cycles_of_one_run_are_several_samples() -> None:
    body = SAMPLE.split("# Out of bounds")[0]
    rows = parse_table(body + body)  # -N 2: the table twice
    doc = probe_json([rows], None)
    assert len(doc["samples"]["8"]) == 2
    assert set(doc["sizes"]) == {str(8 * 2**i) for i in range(25)}
