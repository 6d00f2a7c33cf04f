"""Parsing vLLM's /metrics and comparing two scrapes; preemptions are flagged."""

from __future__ import annotations

import json

import pytest

from tests.fakes import vllm_metrics_text
from tuner.telemetry import MetricsDelta, metrics_delta, parse_metrics
from tuner.telemetry.prom import lookup

WARNING = "level had 3 preemptions: its numbers measure memory pressure, not the settings"


def test_parse_keeps_wire_names_and_sums_engines() -> None:
    text = vllm_metrics_text(preemptions=4, generation_tokens=1000, kv_usage=0.5, engines=2)
    m = parse_metrics(text)
    assert m["vllm:num_preemptions_total"] == 4.0  # the parser's family name drops _total
    assert m["vllm:generation_tokens_total"] == 1000.0
    assert m["vllm:kv_cache_usage_perc"] == 0.5  # a fraction is averaged, not summed
    assert m["vllm:request_success_total"] == 3.0
    assert m["vllm:time_to_first_token_seconds_count"] == 1.0
    assert not any(k.endswith(("_bucket", "_created")) for k in m)


def test_parse_by_series_keeps_labels() -> None:
    m = parse_metrics(vllm_metrics_text(preemptions=4, engines=2), by_series=True)
    key = 'vllm:num_preemptions_total{engine="1",model_name="fake-model"}'
    assert m[key] == 2.0


def test_parse_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_metrics("this is { not prometheus\n")


def test_lookup_tries_with_and_without_total() -> None:
    assert lookup({"vllm:num_preemptions": 2.0}, ["vllm:num_preemptions_total"]) == 2.0
    assert lookup({"vllm:num_preemptions_total": 5.0}, ["vllm:num_preemptions"]) == 5.0
    assert lookup({}, ["x"]) is None
    assert lookup(None, ["x"]) is None


def test_delta_of_a_clean_level() -> None:
    before = parse_metrics(
        vllm_metrics_text(prompt_tokens=100, generation_tokens=50, prefix_queries=10)
    )
    after = parse_metrics(
        vllm_metrics_text(
            prompt_tokens=4196,
            generation_tokens=4146,
            prefix_queries=4106,
            prefix_hits=1024,
            kv_usage=0.0,
        )
    )
    during = [parse_metrics(vllm_metrics_text(kv_usage=0.42, running=16, waiting=2))]
    d = metrics_delta(before, after, during=during)
    assert d.preemptions == 0
    assert d.prompt_tokens == 4096
    assert d.generation_tokens == 4096
    assert d.prefix_cache_queries == 4096
    assert d.prefix_cache_hits == 1024
    assert d.prefix_cache_hit_rate == pytest.approx(0.25)
    assert d.kv_cache_usage_max == pytest.approx(0.42)
    assert d.running_max == 16
    assert d.waiting_max == 2
    assert d.flag is False
    assert d.warning is None


def test_preemptions_are_flagged() -> None:
    before = parse_metrics(vllm_metrics_text(preemptions=7))
    after = parse_metrics(vllm_metrics_text(preemptions=10, kv_usage=0.99))
    d = metrics_delta(before, after)
    assert d.preemptions == 3
    assert d.flag is True
    assert d.warning == WARNING
    assert d.kv_cache_usage_max == pytest.approx(0.99)
    data = d.to_dict()
    assert data["flag"] is True and data["warning"] == WARNING
    json.dumps(data)


def test_one_preemption_is_singular() -> None:
    d = MetricsDelta(preemptions=1)
    assert d.warning == (
        "level had 1 preemption: its numbers measure memory pressure, not the settings"
    )


def test_legacy_names() -> None:
    before = parse_metrics(vllm_metrics_text(legacy=True, prefix_queries=0))
    after = parse_metrics(
        vllm_metrics_text(legacy=True, prefix_queries=100, prefix_hits=40, kv_usage=0.3)
    )
    d = metrics_delta(before, after)
    assert d.kv_cache_usage_max == pytest.approx(0.3)
    assert d.prefix_cache_hit_rate == pytest.approx(0.4)


def test_legacy_preemptions_without_total() -> None:
    d = metrics_delta({"vllm:num_preemptions": 1.0}, {"vllm:num_preemptions": 3.0})
    assert d.preemptions == 2.0 and d.flag


def test_a_restarted_server_is_a_reset_not_a_negative_count() -> None:
    before = parse_metrics(vllm_metrics_text(generation_tokens=5000, preemptions=2))
    after = parse_metrics(vllm_metrics_text(generation_tokens=100))
    d = metrics_delta(before, after)
    assert d.generation_tokens is None and d.preemptions is None
    assert d.counter_reset is True
    assert d.flag is True
    assert "restarted" in (d.warning or "")


def test_missing_scrapes_give_nones() -> None:
    d = metrics_delta(None, None)
    assert d == MetricsDelta()
    assert d.flag is False and d.prefix_cache_hit_rate is None
    after_only = metrics_delta(None, parse_metrics(vllm_metrics_text(running=3)))
    assert after_only.generation_tokens is None
    assert after_only.running_max == 3


def test_a_server_without_vllm_metrics() -> None:
    d = metrics_delta({"process_cpu_seconds_total": 1.0}, {"process_cpu_seconds_total": 2.0})
    assert d == MetricsDelta()
