"""The simulated continuous-batching engine: one asyncio task that paces decode steps.

Every step, each running request gets one token; waiting requests join as slots
(``--max-num-seqs``), the per-step token budget (``--max-num-batched-tokens``, chunked prefill)
and the KV cache allow; when the cache overflows the newest request is preempted and later
recomputed. A step lasts ``model.step_time(batch) + prefill`` times the per-launch speed
factor, per-step noise and ``--time-scale``. Steps follow an absolute schedule
(``next_at += dt``) so event-loop overhead does not slow the simulated GPU down.

Handlers wait on :meth:`Seq.wait_for_tokens`, which resolves once per step at most, so a slow
reader catches up in one write (as vLLM merges outputs for a lagging consumer).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from tuner.sim import model
from tuner.sim.prefix_cache import BLOCK_TOKENS, PrefixCache
from tuner.sim.profiles import Profile
from tuner.sim.settings import SimSettings

# A late step (the event loop was busy or the CPU starved) is made up by running the next
# steps back to back, so the average rate stays right; after a stall longer than this the
# schedule restarts from now instead, since a burst that long would not look like a GPU.
MAX_LAG_S = 0.5


class Seq:
    """One request inside the engine."""

    __slots__ = (
        "id",
        "prompt_tokens",
        "prompt_key",
        "target",
        "stop_is_eos",
        "generated",
        "prefill_left",
        "kv",
        "state",
        "finish_reason",
        "waiter",
        "prompt_counted",
        "first_schedule",
        "wake_at",
        "hold",
    )

    def __init__(
        self,
        seq_id: int,
        prompt_tokens: int,
        prompt_key: Sequence[Hashable] | None,
        target: int,
        stop_is_eos: bool,
    ) -> None:
        self.id = seq_id
        self.prompt_tokens = prompt_tokens
        self.prompt_key = prompt_key
        self.target = target  # tokens to generate before finishing
        self.stop_is_eos = stop_is_eos  # finish_reason "stop" rather than "length"
        self.generated = 0
        self.prefill_left = prompt_tokens
        self.kv = 0  # KV-cache tokens held
        self.state = "waiting"  # waiting | running | finished | aborted
        self.finish_reason: str | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.prompt_counted = False
        self.first_schedule = True
        self.wake_at = 1  # the waiter wants to wake once this many tokens exist
        self.hold = 0  # steps its prefill still waits (a profile's scheduler trade)

    @property
    def finished(self) -> bool:
        return self.state in ("finished", "aborted")

    def notify(self) -> None:
        waiter = self.waiter
        if (
            waiter is not None
            and not waiter.done()
            and (self.generated >= self.wake_at or self.finished)
        ):
            waiter.set_result(None)

    async def wait_for_tokens(self, have: int) -> None:
        """Return once more than ``have`` tokens exist or the request has ended."""
        if self.generated > have or self.finished:
            return
        waiter = asyncio.get_running_loop().create_future()
        self.wake_at = have + 1
        self.waiter = waiter
        try:
            await waiter
        finally:
            self.waiter = None


@dataclass
class EngineStats:
    """Counters and gauges behind ``/metrics`` and the periodic stats log line."""

    prompt_tokens_total: int = 0
    generation_tokens_total: int = 0
    preemptions_total: int = 0
    prefix_cache_queries_total: int = 0
    prefix_cache_hits_total: int = 0
    requests_finished: dict[str, int] = field(default_factory=dict)
    steps_total: int = 0
    lag_resets_total: int = 0


@dataclass
class StepPlan:
    decode: list[Seq]
    prefill: list[tuple[Seq, int]]
    duration: float  # wall seconds, noise and time scale included


class Engine:
    """Continuous batching over :class:`Seq` objects; drive it with :meth:`run`."""

    def __init__(
        self,
        profile: Profile,
        settings: SimSettings,
        *,
        rng: random.Random,
        speed_factor: float = 1.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.profile = profile
        self.settings = settings
        self.rng = rng
        self.speed_factor = speed_factor
        self.time_scale = settings.time_scale
        self.clock = clock
        self.max_num_seqs = model.effective_max_num_seqs(profile, settings)
        self.max_batched_tokens = model.effective_max_num_batched_tokens(profile, settings)
        self.hold_steps = model.hold_steps(profile, settings)  # a profile's scheduler trade
        self.kv_capacity = max(1, model.kv_capacity_tokens(profile, settings))
        self.prefix_cache = PrefixCache(
            self.kv_capacity // BLOCK_TOKENS if settings.prefix_caching else 0
        )
        self.running: dict[int, Seq] = {}  # admission order; the last one is preempted first
        self.waiting: deque[Seq] = deque()
        self.kv_used = 0
        self.stats = EngineStats()
        self._next_id = 0
        self._drift = 0.0
        self._step_cache: dict[int, float] = {}
        self._wake = asyncio.Event()
        self._stopped = False

    # -- requests ---------------------------------------------------------------------------
    def add(
        self,
        prompt_tokens: int,
        max_tokens: int,
        *,
        prompt_key: Sequence[Hashable] | None = None,
        stop_at: int | None = None,
    ) -> Seq:
        """Queue a request that generates ``min(max_tokens, stop_at)`` tokens."""
        target = max_tokens if stop_at is None else max(1, min(max_tokens, stop_at))
        seq = Seq(self._next_id, max(1, prompt_tokens), prompt_key, target, target < max_tokens)
        self._next_id += 1
        self.waiting.append(seq)
        self._wake.set()
        return seq

    def abort(self, seq: Seq) -> None:
        """Drop a request (client went away); frees its slot and KV cache."""
        if seq.finished:
            return
        if seq.state == "running":
            self.running.pop(seq.id, None)
            self.kv_used -= seq.kv
            seq.kv = 0
        seq.state = "aborted"  # a waiting one is skipped lazily by the scheduler
        seq.finish_reason = "abort"
        finished = self.stats.requests_finished
        finished["abort"] = finished.get("abort", 0) + 1
        seq.notify()

    def stop(self) -> None:
        """End :meth:`run` and release every waiting handler."""
        self._stopped = True
        self._wake.set()
        for seq in [*self.running.values(), *self.waiting]:
            self.abort(seq)

    # -- gauges -----------------------------------------------------------------------------
    @property
    def num_running(self) -> int:
        return len(self.running)

    @property
    def num_waiting(self) -> int:
        return sum(1 for s in self.waiting if s.state == "waiting")

    @property
    def kv_usage(self) -> float:
        return min(1.0, self.kv_used / self.kv_capacity)

    # -- one step ---------------------------------------------------------------------------
    def _step_time(self, batch: int) -> float:
        t = self._step_cache.get(batch)
        if t is None:
            t = model.step_time(self.profile, self.settings, batch)
            self._step_cache[batch] = t
        return t

    def _preempt(self, seq: Seq) -> None:
        self.running.pop(seq.id, None)
        self.kv_used -= seq.kv
        seq.kv = 0
        seq.state = "waiting"
        seq.prefill_left = seq.prompt_tokens + seq.generated  # vLLM V1 recomputes
        self.waiting.appendleft(seq)
        self.stats.preemptions_total += 1

    def _admit(self, seq: Seq) -> None:
        if seq.first_schedule and seq.prompt_key is not None:
            cached = self.prefix_cache.lookup_and_insert(seq.prompt_key)
            self.stats.prefix_cache_queries_total += seq.prompt_tokens
            self.stats.prefix_cache_hits_total += cached
            seq.prefill_left = max(1, seq.prompt_tokens - cached)
        elif seq.first_schedule:
            self.stats.prefix_cache_queries_total += seq.prompt_tokens
        if seq.first_schedule and self.running:
            seq.hold = self.hold_steps  # joins a busy batch: its first token comes later
        seq.first_schedule = False
        seq.state = "running"
        seq.kv = seq.prompt_tokens + seq.generated
        self.kv_used += seq.kv
        self.running[seq.id] = seq

    def schedule(self) -> StepPlan | None:
        """Pick the next step's work; None when there is nothing to run."""
        decoding = sum(1 for s in self.running.values() if s.prefill_left == 0)
        # Each decoding request needs one more KV slot; preempt the newest until they fit
        # (never the last one: alone it always fits, since max_model_len <= KV capacity).
        while len(self.running) > 1 and self.kv_used + decoding > self.kv_capacity:
            victim = next(reversed(self.running.values()))
            if victim.prefill_left == 0:
                decoding -= 1
            self._preempt(victim)
        budget = self.max_batched_tokens
        decode: list[Seq] = []
        prefill: list[tuple[Seq, int]] = []
        for seq in self.running.values():
            if seq.prefill_left == 0:
                decode.append(seq)
        budget -= len(decode)
        for seq in self.running.values():
            if seq.hold > 0:  # a scheduler trade holds its prefill back this step
                seq.hold -= 1
                continue
            if seq.prefill_left > 0 and budget > 0:
                chunk = min(seq.prefill_left, budget)
                prefill.append((seq, chunk))
                budget -= chunk
        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
            seq = self.waiting[0]
            if seq.state != "waiting":
                self.waiting.popleft()
                continue
            need = seq.prompt_tokens + seq.generated
            if self.running and self.kv_used + need > self.kv_capacity:
                break
            self.waiting.popleft()
            self._admit(seq)
            if seq.hold > 0:  # held from this step on
                seq.hold -= 1
                continue
            chunk = min(seq.prefill_left, budget)
            prefill.append((seq, chunk))
            budget -= chunk
        batch = len(decode) + len(prefill)
        if batch == 0 and not self.running:
            return None  # (held requests alone still take steps: the schedule runs on)
        dt = self._step_time(batch) + model.prefill_time(
            self.profile, self.settings, sum(c for _, c in prefill)
        )
        return StepPlan(decode, prefill, dt * self._noise())

    def _noise(self) -> float:
        """Per-step multiplier: launch factor x (1 + slow drift + i.i.d. jitter) x time scale."""
        p = self.profile
        phi = p.drift_phi
        self._drift = phi * self._drift + math.sqrt(1 - phi**2) * self.rng.gauss(0.0, p.drift_sd)
        jitter = self.rng.gauss(0.0, p.step_noise_sd)
        return self.speed_factor * max(0.5, 1.0 + self._drift + jitter) * self.time_scale

    def finish_step(self, plan: StepPlan) -> None:
        """Apply a step: emit tokens, finish requests, wake their handlers."""
        stats = self.stats
        emitted: list[Seq] = []
        for seq in plan.decode:
            if seq.state == "running":
                emitted.append(seq)
        for seq, chunk in plan.prefill:
            if seq.state != "running":
                continue
            seq.prefill_left = max(0, seq.prefill_left - chunk)
            if seq.prefill_left == 0:
                if not seq.prompt_counted:
                    stats.prompt_tokens_total += seq.prompt_tokens
                    seq.prompt_counted = True
                emitted.append(seq)
        for seq in emitted:
            seq.generated += 1
            if seq.generated >= seq.target:
                self.running.pop(seq.id, None)
                self.kv_used -= seq.kv
                seq.kv = 0
                seq.state = "finished"
                seq.finish_reason = "stop" if seq.stop_is_eos else "length"
                stats.requests_finished[seq.finish_reason] = (
                    stats.requests_finished.get(seq.finish_reason, 0) + 1
                )
            else:
                seq.kv += 1
                self.kv_used += 1
            seq.notify()
        stats.generation_tokens_total += len(emitted)
        stats.steps_total += 1

    # -- the loop ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Step forever (until :meth:`stop`), sleeping to an absolute schedule."""
        next_at = self.clock()
        while not self._stopped:
            plan = self.schedule()
            if plan is None:
                self._wake.clear()
                if self.running or any(s.state == "waiting" for s in self.waiting):
                    await asyncio.sleep(0)  # cannot happen in practice; never spin hot
                else:
                    await self._wake.wait()
                next_at = self.clock()
                continue
            next_at += plan.duration
            now = self.clock()
            if next_at < now - MAX_LAG_S:
                next_at = now
                self.stats.lag_resets_total += 1
            delay = next_at - now
            await asyncio.sleep(delay if delay > 0 else 0)
            if self._stopped:
                break
            self.finish_step(plan)


def launch_speed_factor(profile: Profile, rng: random.Random) -> float:
    """This launch's speed offset: log-normal around 1 with the profile's ``launch_sd``.

    Real servers differ a little from start to start (clocks, placement, memory layout), so
    two launches of the same configuration never measure exactly the same.
    """
    return math.exp(rng.gauss(0.0, profile.launch_sd))
