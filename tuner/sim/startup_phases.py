"""The load and warmup phases of a simulated startup, each logged as vLLM logs it.

``load`` streams the weights with tqdm-shaped shard lines (or fills in random ones with
``--load-format dummy``) and builds the model; ``warmup`` runs torch.compile, sizes the KV
cache and captures CUDA graphs. Each takes its share of ``--load-seconds``
(:mod:`tuner.sim.phases`), stops early on SIGTERM, and fails at its own moment when
:mod:`tuner.sim.checks` says the configuration breaks there (an OOM part-way through the
weights, a bad NCCL choice at the first collectives, a KV cache too small, CUDA graphs that
do not fit). :class:`~tuner.sim.startup.SimServer`
is built on these.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from tuner.sim import model, page_cache
from tuner.sim.checks import Failure
from tuner.sim.log import Log, progress_line
from tuner.sim.phases import StartupPlan
from tuner.sim.profiles import Profile
from tuner.sim.settings import SimSettings

DYNAMO_SHARE = 0.55  # of torch.compile with a warm cache: Dynamo, then the cache load
# (vllm-project/vllm#16848: "Dynamo bytecode transform time: 5.03 s", then "Directly load the
# compiled graph(s) ... from the cache, took 4.190 s")
GRAPH_CAPTURE_GIB = 0.52  # "Graph capturing finished in N secs, took 0.52 GiB"
# vLLM's tqdm bar over the capture sizes (v1/worker/gpu_model_runner.py _capture_cudagraphs)
CAPTURE_BAR = "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          |"
CAPTURE_SIZES = 67


class StartupPhases:
    """The phases of a startup that take its time, and what every phase shares: the
    stop event, the log, the way a refusal is printed."""

    settings: SimSettings
    profile: Profile
    log: Log
    plan: StartupPlan
    stop: asyncio.Event
    host: str
    pid: int

    async def _sleep(self, seconds: float) -> bool:
        """Sleep, or return True early when asked to stop."""
        if self.stop.is_set():
            return True
        if seconds <= 0:
            await asyncio.sleep(0)
            return self.stop.is_set()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.stop.wait(), seconds)
        return self.stop.is_set()

    def _fail(self, failure: Failure) -> int:
        self.log.lines(failure.warn_lines(self.host, self.pid), err=True)
        self.log.error("core.py:708", "EngineCore failed to start.")
        self.log.lines(failure.traceback_lines(), err=True)
        return 1

    def served_names(self) -> list[str]:
        st = self.settings
        if st.served_model_names:
            return list(st.served_model_names)
        return [st.model or self.profile.served_name]

    async def _load(self, failure: Failure | None) -> int | None:
        """The load phase: an exit code when startup ends here, else None."""
        st, prof, log, plan = self.settings, self.profile, self.log, self.plan
        name = self.served_names()[0]
        tp = model.effective_tp(prof, st)
        oom = failure if failure is not None and failure.phase == "load" else None
        log.info("gpu_model_runner.py:2338", f"Starting to load model {name}...")
        t0 = time.monotonic()
        if plan.dummy:
            # vLLM's dummy loader reads no checkpoint: no shard progress, no "Loading weights
            # took"; without safetensors metadata to check the layers against it says so.
            log.info(
                "dummy_loader.py:153",
                f"Skipping validation when loading dummy weights for {name}. "
                "Reason: Missing safetensors metadata",
            )
            if await self._sleep(plan.model_init_s * (oom.load_fraction if oom else 1.0)):
                return self._stopped_early()
            if oom:
                return self._fail(oom)  # the same parameters do not fit, random or not
        else:
            if st.host_ram_gib is not None:  # vLLM 0.32 says what it reads from, and the RAM
                size = prof.weights_gib * page_cache.GIB
                log.info("weight_utils.py:1102", page_cache.checkpoint_line(size, st.host_ram_gib))
            shards = prof.load_shards
            stop_at = max(1, int(shards * oom.load_fraction)) if oom else shards + 1
            log.line(progress_line(0, shards, 0.0), err=True)
            for i in range(1, shards + 1):
                if await self._sleep(t0 + plan.weights_s * i / shards - time.monotonic()):
                    return self._stopped_early()
                if oom and i == stop_at:
                    return self._fail(oom)
                log.line(progress_line(i, shards, time.monotonic() - t0), err=True)
            log.info(
                "default_loader.py:267",
                f"Loading weights took {time.monotonic() - t0:.2f} seconds",
            )
            if await self._sleep(t0 + plan.load_s - time.monotonic()):
                return self._stopped_early()
        log.info(
            "gpu_model_runner.py:2370",
            f"Model loading took {prof.weights_gib / tp:.4f} GiB and "
            f"{time.monotonic() - t0:.6f} seconds",
        )
        return None

    async def _warmup(self, failure: Failure | None) -> int | None:
        """torch.compile, the KV cache, the first collectives and graph capture: an exit code
        when startup ends here, else None."""
        st, prof, log, plan = self.settings, self.profile, self.log, self.plan
        t1 = time.monotonic()
        if plan.compile_s > 0:
            # the profile run's first forward pass compiles the model (a warm compile cache)
            dynamo_s = plan.compile_s * DYNAMO_SHARE
            if await self._sleep(dynamo_s):
                return self._stopped_early()
            if plan.compile_logged:
                log.info(
                    "backends.py:548",
                    "Using cache directory: /root/.cache/vllm/torch_compile_cache/"
                    f"{prof.name.encode().hex()[:10]}/rank_0_0/backbone for vLLM's torch.compile",
                )
                log.info("backends.py:559", f"Dynamo bytecode transform time: {dynamo_s:.2f} s")
            if await self._sleep(t1 + plan.compile_s - time.monotonic()):
                return self._stopped_early()
            if plan.compile_logged:
                log.info(
                    "backends.py:161",
                    "Directly load the compiled graph(s) for dynamic shape from the cache, took "
                    f"{plan.compile_s - dynamo_s:.3f} s",
                )
                log.info(
                    "monitor.py:34",
                    f"torch.compile takes {time.monotonic() - t1:.2f} s in total",
                )
        cap = model.kv_capacity_tokens(prof, st)
        max_len = model.effective_max_model_len(prof, st)
        log.info(
            "gpu_worker.py:298",
            f"Available KV cache memory: {max(0.0, model.free_memory_gib(prof, st)):.2f} GiB",
        )
        log.info("kv_cache_utils.py:1087", f"GPU KV cache size: {cap:,} tokens")
        log.info(
            "kv_cache_utils.py:1091",
            f"Maximum concurrency for {max_len:,} tokens per request: {cap / max_len:.2f}x",
        )
        if await self._sleep(plan.engine_s / 2):
            return self._stopped_early()
        if failure and failure.phase == "warmup":
            return self._fail(failure)
        if plan.graphs_s > 0:
            t2 = time.monotonic()
            if failure and failure.phase == "capture":
                # vLLM captures the largest batch first: out of memory at its first graph
                log.line(f"{CAPTURE_BAR} 0/{CAPTURE_SIZES} [00:00<?, ?it/s]", err=True)
                if await self._sleep(plan.graphs_s / CAPTURE_SIZES):
                    return self._stopped_early()
                return self._fail(failure)
            if await self._sleep(plan.graphs_s):
                return self._stopped_early()
            log.info(
                "gpu_model_runner.py:3480",
                f"Graph capturing finished in {time.monotonic() - t2:.0f} secs, took "
                f"{GRAPH_CAPTURE_GIB:.2f} GiB",
            )
        if await self._sleep(t1 + plan.init_engine_s - time.monotonic()):
            return self._stopped_early()
        log.info(
            "core.py:210",
            "init engine (profile, create kv cache, warmup model) took "
            f"{time.monotonic() - t1:.2f} seconds",
        )
        return None

    def _stopped_early(self) -> int:
        self.log.info("launcher.py:80", "Shutting down before the server started.")
        return 0
