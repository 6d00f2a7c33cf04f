"""tuner.sim.engine: continuous batching, chunked prefill, preemption, prefix caching, pacing.

Most tests drive the scheduler step by step (``schedule`` / ``finish_step``) with no event
loop; one runs the real loop briefly to check the absolute-schedule pacing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import statistics
import time

import pytest

from tuner.sim import model
from tuner.sim.engine import Engine, Seq, launch_speed_factor
from tuner.sim.prefix_cache import PrefixCache
from tuner.sim.profiles import PROFILES, Profile
from tuner.sim.settings import SimSettings, parse_settings

KIMI = PROFILES["kimi-k2.5-int4-tp8"]


def make_engine(*argv: str, profile: Profile = KIMI, seed: int = 1) -> Engine:
    settings = parse_settings(["--profile", profile.name, *argv], {})
    return Engine(profile, settings, rng=random.Random(seed))


def drain(engine: Engine, max_steps: int = 100_000) -> int:
    """Run steps until idle; returns how many."""
    steps = 0
    while (plan := engine.schedule()) is not None:
        engine.finish_step(plan)
        steps += 1
        assert steps < max_steps
    return steps


def test_one_request_takes_one_step_per_token() -> None:
    engine = make_engine()
    seq = engine.add(prompt_tokens=10, max_tokens=5)
    first = engine.schedule()
    assert first is not None and first.prefill == [(seq, 10)] and first.decode == []
    engine.finish_step(first)
    assert seq.generated == 1  # the prefill step yields the first token
    assert drain(engine) == 4
    assert seq.state == "finished" and seq.finish_reason == "length" and seq.generated == 5
    assert engine.kv_used == 0
    assert engine.stats.generation_tokens_total == 5
    assert engine.stats.prompt_tokens_total == 10
    assert engine.stats.requests_finished == {"length": 1}


def test_stop_at_finishes_early_with_stop() -> None:
    engine = make_engine()
    seq = engine.add(prompt_tokens=3, max_tokens=50, stop_at=7)
    drain(engine)
    assert (seq.generated, seq.finish_reason) == (7, "stop")


def test_max_num_seqs_caps_running_and_the_rest_wait() -> None:
    engine = make_engine("--max-num-seqs", "2", "--max-num-batched-tokens", "64")
    seqs = [engine.add(prompt_tokens=4, max_tokens=3) for _ in range(5)]
    engine.finish_step(engine.schedule())  # type: ignore[arg-type]
    assert engine.num_running == 2 and engine.num_waiting == 3
    drain(engine)
    assert all(s.generated == 3 for s in seqs)


def test_chunked_prefill_splits_a_long_prompt() -> None:
    engine = make_engine("--max-num-batched-tokens", "1024", "--max-num-seqs", "8")
    seq = engine.add(prompt_tokens=3000, max_tokens=2)
    chunks = []
    while seq.generated == 0:
        plan = engine.schedule()
        assert plan is not None
        chunks += [c for s, c in plan.prefill if s is seq]
        engine.finish_step(plan)
    assert chunks == [1024, 1024, 952]


def test_prefill_makes_a_step_longer() -> None:
    engine = make_engine("--time-scale", "1")
    engine.rng = random.Random(0)
    engine.speed_factor = 1.0
    engine.profile = dataclasses.replace(KIMI, step_noise_sd=0.0, drift_sd=0.0)
    engine.add(prompt_tokens=1000, max_tokens=3)
    plan = engine.schedule()
    assert plan is not None
    expect = model.step_time(KIMI, engine.settings, 1) + model.prefill_time(
        KIMI, engine.settings, 1000
    )
    assert plan.duration == pytest.approx(expect)


def test_kv_overflow_preempts_and_everything_still_finishes() -> None:
    engine = make_engine()
    engine.kv_capacity = 200  # four requests of 40 + 30 tokens cannot all fit
    seqs = [engine.add(prompt_tokens=40, max_tokens=30) for _ in range(4)]
    drain(engine)
    assert engine.stats.preemptions_total > 0
    assert all(s.generated == 30 and s.finish_reason == "length" for s in seqs)
    assert engine.kv_used == 0


def test_abort_frees_the_slot() -> None:
    engine = make_engine("--max-num-seqs", "1", "--max-num-batched-tokens", "64")
    a = engine.add(prompt_tokens=4, max_tokens=100)
    b = engine.add(prompt_tokens=4, max_tokens=2)
    engine.finish_step(engine.schedule())  # type: ignore[arg-type]
    assert engine.num_running == 1 and a.state == "running"
    engine.abort(a)
    assert a.finish_reason == "abort" and engine.kv_used == 0
    drain(engine)
    assert b.generated == 2
    assert engine.stats.requests_finished == {"abort": 1, "length": 1}


def test_prefix_cache_hits_on_a_repeated_prompt() -> None:
    engine = make_engine()
    prompt = tuple(f"w{i}" for i in range(100))
    engine.add(prompt_tokens=100, max_tokens=1, prompt_key=prompt)
    drain(engine)
    seq = engine.add(prompt_tokens=100, max_tokens=1, prompt_key=prompt)
    plan = engine.schedule()
    assert plan is not None and plan.prefill == [(seq, 4)]  # 96 of 100 tokens cached
    assert engine.stats.prefix_cache_queries_total == 200
    assert engine.stats.prefix_cache_hits_total == 96


def test_prefix_caching_can_be_disabled() -> None:
    engine = make_engine("--no-enable-prefix-caching")
    prompt = tuple(range(64))
    for _ in range(2):
        engine.add(prompt_tokens=64, max_tokens=1, prompt_key=prompt)
        drain(engine)
    assert engine.stats.prefix_cache_hits_total == 0


def test_prefix_cache_is_bounded_and_chained() -> None:
    cache = PrefixCache(capacity_blocks=4)
    assert cache.lookup_and_insert(list(range(64))) == 0
    assert cache.lookup_and_insert(list(range(64))) == 63  # never the last token
    assert cache.lookup_and_insert([999, *range(1, 64)]) == 0  # the first block differs
    assert len(cache) == 4


def test_step_noise_is_small_and_unbiased() -> None:
    engine = make_engine(seed=5)
    engine.speed_factor = 1.0
    base = model.step_time(KIMI, engine.settings, 1)
    samples = []
    for _ in range(3000):
        engine.add(prompt_tokens=1, max_tokens=1)
        plan = engine.schedule()
        assert plan is not None
        samples.append(plan.duration / (base + model.prefill_time(KIMI, engine.settings, 1)))
        engine.finish_step(plan)
    assert statistics.mean(samples) == pytest.approx(1.0, abs=0.003)
    assert 0.01 < statistics.stdev(samples) < 0.02


def test_launch_speed_factor_spread() -> None:
    rng = random.Random(11)
    factors = [launch_speed_factor(KIMI, rng) for _ in range(4000)]
    assert statistics.mean(factors) == pytest.approx(1.0, abs=0.001)
    assert statistics.stdev(factors) == pytest.approx(KIMI.launch_sd, rel=0.1)


def test_time_scale_scales_durations() -> None:
    fast = make_engine("--time-scale", "0.01", seed=3)
    slow = make_engine(seed=3)
    fast.speed_factor = slow.speed_factor = 1.0
    fast.add(prompt_tokens=1, max_tokens=2)
    slow.add(prompt_tokens=1, max_tokens=2)
    fast_plan, slow_plan = fast.schedule(), slow.schedule()
    assert fast_plan is not None and slow_plan is not None
    assert fast_plan.duration == pytest.approx(slow_plan.duration * 0.01)


@pytest.mark.timeout(20)
def test_the_loop_keeps_pace_with_the_model() -> None:
    """200 tokens at time scale 0.05 (~0.6 ms steps) take 200 steps' worth of time."""
    settings = parse_settings(["--time-scale", "0.05"], {})
    flat = dataclasses.replace(KIMI, step_noise_sd=0.0, drift_sd=0.0)
    engine = Engine(flat, settings, rng=random.Random(0), speed_factor=1.0)
    expect = 200 * model.step_time(flat, settings, 1) * 0.05

    async def go() -> float:
        task = asyncio.create_task(engine.run())
        t0 = time.perf_counter()
        seq = engine.add(prompt_tokens=1, max_tokens=200)
        seen = 0
        while not seq.finished:
            await seq.wait_for_tokens(seen)
            seen = seq.generated
        took = time.perf_counter() - t0
        engine.stop()
        await task
        return took

    took = asyncio.run(go())
    assert took == pytest.approx(expect, rel=0.15)


def test_stop_releases_waiters() -> None:
    engine = make_engine()

    async def go() -> str | None:
        task = asyncio.create_task(engine.run())
        seq = engine.add(prompt_tokens=1, max_tokens=10_000)
        waiter = asyncio.create_task(seq.wait_for_tokens(10_000))
        await asyncio.sleep(0.05)
        engine.stop()
        await asyncio.wait_for(waiter, 1)
        await task
        return seq.finish_reason

    assert asyncio.run(go()) == "abort"


def test_default_settings_object_works() -> None:
    engine = Engine(KIMI, SimSettings(), rng=random.Random(0))
    assert engine.max_num_seqs == 1024 and engine.max_batched_tokens == 8192


def _steps_to_first_token(engine: Engine, seq: Seq) -> int:
    steps = 0
    while seq.generated == 0:
        plan = engine.schedule()
        assert plan is not None
        engine.finish_step(plan)
        steps += 1
    return steps


def test_the_slo_trade_holds_a_request_that_joins_a_busy_batch_back() -> None:
    slo = PROFILES["slo-trade"]
    for argv, hold in ((["--max-num-batched-tokens", "16384"], 24), ([], 0)):
        engine = make_engine(*argv, profile=slo)
        alone = engine.add(prompt_tokens=8, max_tokens=100)
        assert _steps_to_first_token(engine, alone) == 1  # a single stream never waits
        joining = engine.add(prompt_tokens=8, max_tokens=4)
        assert _steps_to_first_token(engine, joining) == 1 + hold
        drain(engine)
        assert joining.generated == 4 and alone.generated == 100
