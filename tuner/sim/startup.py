"""The simulated server's life: vLLM's startup sequence, serving, and shutdown on SIGTERM.

Startup mirrors vLLM's order: version and args lines, bind the port (not yet listening: a
connect is refused), validate the config (``start``), bring up NCCL (``init``), stream weights
with tqdm-shaped progress lines, or fill in random ones with ``--load-format dummy``
(``load``), then torch.compile, size the KV cache and capture graphs (``warmup``), then the
uvicorn lines and only then listen. Each phase takes its share of ``--load-seconds``
(:mod:`tuner.sim.phases`) and ends with vLLM's own line saying how long it took. A refusal
prints NCCL/Python-shaped text to stderr at its phase and exits 1. SIGTERM or SIGINT at any
point exits 0 within ~0.5 s. The load and warmup phases are :mod:`tuner.sim.startup_phases`'s;
the socket and the server's import, :mod:`tuner.sim.boot`'s.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import time
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from tuner.sim import model, page_cache
from tuner.sim.boot import bind_socket, import_in_thread
from tuner.sim.checks import first_failure
from tuner.sim.engine import Engine, launch_speed_factor
from tuner.sim.faults import LaunchIndexError, next_launch_index, slowdown
from tuner.sim.log import Log
from tuner.sim.misbehave import ShmMarker, create_shm, flood_log, remove_shm, spawn_orphan
from tuner.sim.noise import dummy_throughput_factor, noise_json, with_noise
from tuner.sim.phases import StartupPlan, startup_plan
from tuner.sim.profiles import Profile, get_profile
from tuner.sim.settings import REDACTED, SIM_VERSION, SimSettings, non_default_args
from tuner.sim.startup_phases import StartupPhases
from tuner.sim.transport import channel_line

STATS_INTERVAL_S = 10.0
ENV_PREFIXES = ("NCCL_", "VLLM_")
ENV_NAMES = ("CUDA_DEVICE_MAX_CONNECTIONS",)


def sim_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment variables the simulated stack reads, for ``/sim/config``; the API
    key (``VLLM_API_KEY``) as ``***``, since that route answers without one."""
    return {
        k: REDACTED if k == "VLLM_API_KEY" else v
        for k, v in sorted(env.items())
        if k.startswith(ENV_PREFIXES) or k in ENV_NAMES
    }


def _without_key(argv: Sequence[str], key: str | None) -> list[str]:
    """The command line for ``/sim/config``, which answers without a key: the key as ***."""
    if key is None:
        return list(argv)
    return [a.replace(key, REDACTED) for a in argv]


class SimServer(StartupPhases):
    """One run of the simulated server, from argv to exit code."""

    def __init__(self, settings: SimSettings, argv: Sequence[str], env: Mapping[str, str]):
        self.settings = settings
        self.argv = list(argv)
        self.env = dict(env)
        self.profile: Profile = with_noise(get_profile(settings.profile), settings)
        self.log = Log()
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.seed = (
            settings.seed if settings.seed is not None else random.SystemRandom().randrange(2**32)
        )
        self.rng = random.Random(self.seed)
        self.speed_factor = launch_speed_factor(self.profile, self.rng)
        # --load-format dummy: the random weights' bias and its per-launch draw (1.0: real)
        self.dummy_factor = (
            dummy_throughput_factor(self.seed, settings.dummy_bias, settings.dummy_noise)
            if settings.load_format == "dummy"
            else 1.0
        )
        self.plan: StartupPlan = startup_plan(self.profile, settings)
        self.launch_index: int | None = None  # from --launch-index-file, read at startup
        self.fault_slowdown = 1.0  # --cold-first-launch / --drift at this launch index
        self.stop = asyncio.Event()
        self.orphan_pid: int | None = None
        self.shm: ShmMarker | None = None
        self.started_at = time.time()

    # -- /sim/config ---------------------------------------------------------------------------
    def config_json(self, port: int) -> dict[str, Any]:
        st, prof = self.settings, self.profile
        return {
            "argv": _without_key(self.argv, st.api_key),
            "env": sim_env(self.env),
            "settings": st.as_json(),
            "profile": prof.name,
            "model": self.served_names()[0],
            "served_model_names": self.served_names(),
            "launch_speed_factor": self.speed_factor,
            "load_format": st.load_format,
            "dummy_throughput_factor": self.dummy_factor,
            "startup_s": {
                "weights": self.plan.weights_s,
                "model_init": self.plan.model_init_s,
                "compile": self.plan.compile_s,
                "graphs": self.plan.graphs_s,
                "engine": self.plan.engine_s,
                "total": self.plan.total_s,
            },
            "launch_index": self.launch_index,
            "fault_slowdown": self.fault_slowdown,
            "noise": noise_json(prof),
            "seed": self.seed,
            "pid": self.pid,
            "port": port,
            "orphan_pid": self.orphan_pid,
            "shm_path": str(self.shm.path) if self.shm else None,
            "started_at": self.started_at,
            "features": model.features(st),
            "kv_capacity_tokens": model.kv_capacity_tokens(prof, st),
            "expected_output_tok_s": {
                str(c): model.expected_output_throughput(prof, st, c, time_scale=st.time_scale)
                for c in (1, 2, 4, 8, 16, 64, 256)
            },
            "version": SIM_VERSION,
            "nccl_version": st.nccl_version,
        }

    # -- the run ------------------------------------------------------------------------------
    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)
        flood: asyncio.Task[None] | None = None
        if self.settings.flood_log:
            flood = asyncio.create_task(flood_log(self.log))
        try:
            return await self._run()
        finally:
            if flood is not None:
                flood.cancel()
            remove_shm(self.shm)
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    async def _run(self) -> int:
        st, log = self.settings, self.log
        log.info("api_server.py:1885", f"vLLM API server version {SIM_VERSION}")
        log.info("utils.py:326", f"non-default args: {non_default_args(st)}")
        if st.unknown_args:
            log.warning(
                "arg_utils.py:1779",
                "The simulator ignores these arguments: " + " ".join(st.unknown_args),
            )
        for warning in st.env_warnings:
            log.warning("envs.py:94", warning)
        if st.moe_routing and self.profile.routing is not None:  # vLLM's warning_once
            log.warning(
                "routing_simulator_router.py:285",
                f"Simulating MoE routing using a {st.moe_routing} strategy. This should only "
                "be used for performance testing. Model outputs will not be valid.",
            )
        if st.launch_index_file and not self._count_launch(st.launch_index_file):
            return 1
        if st.host_ram_gib is not None and not self._read_page_cache(st.host_ram_gib):
            return 1
        try:
            sock = bind_socket(st.host, st.port or 0)
        except OSError as exc:
            log.lines(
                [
                    "Traceback (most recent call last):",
                    f"OSError: [Errno {exc.errno}] {exc.strerror}",
                ],
                err=True,
            )
            return 1
        try:
            return await self._startup_and_serve(sock)
        finally:
            sock.close()

    @property
    def engine_speed_factor(self) -> float:
        """What the engine multiplies every step by: the launch's noise, its faults, and on
        dummy weights their bias (a throughput factor, so steps divide by it)."""
        return self.speed_factor * self.fault_slowdown / self.dummy_factor

    def _count_launch(self, path: str) -> bool:
        """Take this launch's index from ``--launch-index-file`` and set the faults of that
        index (``fault_slowdown``, on top of the launch's noise); False (an error printed)
        when the file is unusable."""
        st = self.settings
        try:
            self.launch_index = next_launch_index(path)
        except LaunchIndexError as exc:
            self.log.error("faults.py:60", str(exc))
            return False
        self.fault_slowdown = slowdown(
            self.launch_index, st.cold_first_launch, st.drift, st.drift_launches
        )
        self.log.info(
            "faults.py:90",
            f"launch index {self.launch_index} (from {path}); steps take "
            f"x{self.fault_slowdown:.4f} (--cold-first-launch {st.cold_first_launch:g}, "
            f"--drift {st.drift:g} over {st.drift_launches} launches)",
        )
        return True

    def _read_page_cache(self, host_ram_gib: float) -> bool:
        """The weights' read as the page cache and the load strategy make it (the plan's
        weights phase); False (an error printed) when --page-cache-file is unusable."""
        st, size = self.settings, self.profile.weights_gib * page_cache.GIB
        try:
            cached = (
                page_cache.read_cached(st.page_cache_file, st.profile)
                if st.page_cache_file
                else 0.0
            )
        except page_cache.PageCacheFileError as exc:
            self.log.error("page_cache.py:80", str(exc))
            return False
        space = page_cache.room(host_ram_gib)
        read_s = page_cache.weights_read_s(size, cached, space, st.safetensors_load_strategy)
        self.plan = startup_plan(self.profile, st, weights_s=read_s)
        self.log.info(
            "page_cache.py:60",
            f"page cache: {min(cached, size) / 1e9:.0f} of {size / 1e9:.0f} GB of weights "
            f"cached, room for {space / 1e9:.0f} GB; the weights read takes {read_s:.0f} s "
            "on the seeds' box",
        )
        return True

    def _remember_weights(self) -> bool:
        """After a full read of the weights: what the page cache now holds of them."""
        st = self.settings
        if st.host_ram_gib is None or st.page_cache_file is None or st.load_format == "dummy":
            return True
        size = self.profile.weights_gib * page_cache.GIB
        kept = page_cache.cached_after(size, page_cache.room(st.host_ram_gib))
        try:
            page_cache.remember(st.page_cache_file, st.profile, kept)
        except page_cache.PageCacheFileError as exc:
            self.log.error("page_cache.py:100", str(exc))
            return False
        return True

    async def _startup_and_serve(self, sock: socket.socket) -> int:
        st, prof, log = self.settings, self.profile, self.log
        port = sock.getsockname()[1]
        failure = first_failure(prof, st)
        if failure and failure.phase == "start":
            return self._fail(failure)
        server_mod = import_in_thread("tuner.sim.server")
        # init: workers and NCCL communicators
        if st.shm_prefix:
            self.shm = create_shm(st.shm_prefix, self.pid)
        if st.leave_orphan:
            self.orphan_pid = spawn_orphan(self.pid)
            log.info(
                "multiproc_executor.py:480",
                f"(VllmWorker rank=1 pid={self.orphan_pid}) orphan worker pid "
                f"{self.orphan_pid} started in its own session (simulated leak)",
            )
        tp = model.effective_tp(prof, st)
        log.info("pynccl.py:70", f"vLLM is using nccl=={st.nccl_version.split('+')[0]}")
        log.line(
            f"{self.host}:{self.pid}:{self.pid} [0] NCCL INFO NCCL version "
            f"{st.nccl_version.split('+')[0]}+cuda12.9"
        )
        log.info(
            "parallel_state.py:1208",
            f"rank 0 in world size {tp} is assigned as DP rank 0, PP rank 0, TP rank 0",
        )
        if tp > 1:  # which transport the ring uses: P2P, host memory or sockets
            log.line(
                f"{self.host}:{self.pid}:{self.pid} [0] {channel_line(prof.interconnect, st.nccl)}"
            )
        if failure and failure.phase == "init":
            return self._fail(failure)
        # load: weights stream in (or random ones are filled in), then the model is built
        loaded = await self._load(failure)
        if loaded is not None:
            return loaded
        if not self._remember_weights():
            return 1
        # warmup: torch.compile, KV cache sizing, first collectives, graph capture
        warmed = await self._warmup(failure)
        if warmed is not None:
            return warmed
        server = await server_mod
        return await self._serve(server, sock, port)

    async def _serve(self, server: ModuleType, sock: socket.socket, port: int) -> int:
        st, prof, log = self.settings, self.profile, self.log
        engine = Engine(prof, st, rng=self.rng, speed_factor=self.engine_speed_factor)
        app = server.SimApp(
            engine=engine,
            profile=prof,
            served_names=self.served_names(),
            root=st.model or prof.served_name,
            max_model_len=model.effective_max_model_len(prof, st),
            config=self.config_json(port),
            log=log,
            access_log=not st.disable_access_log,
            api_key=st.api_key,
            metrics=not st.no_metrics,
        ).build()
        log.info("api_server.py:1957", f"Starting vLLM API server 0 on http://{st.host}:{port}")
        for route in (
            "/health",
            "/metrics",
            "/version",
            "/v1/models",
            "/v1/completions",
            "/v1/chat/completions",
            "/sim/config",
        ):
            method = "POST" if route.startswith("/v1/c") else "GET"
            log.info("launcher.py:37", f"Route: {route}, Methods: {method}")
        log.line(f"INFO:     Started server process [{self.pid}]")
        log.line("INFO:     Waiting for application startup.")
        log.line("INFO:     Application startup complete.")
        runner = await server.start_http(app, sock)
        engine_task = asyncio.create_task(engine.run())
        stats_task = None if st.disable_log_stats else asyncio.create_task(self._log_stats(engine))
        try:
            await self.stop.wait()
        finally:
            log.line("INFO:     Shutting down")
            engine.stop()
            await server.stop_http(runner)
            for task in (engine_task, stats_task):
                if task is not None:
                    task.cancel()
            log.line("INFO:     Application shutdown complete.")
            log.line(f"INFO:     Finished server process [{self.pid}]")
        return 0

    async def _log_stats(self, engine: Engine) -> None:
        """vLLM's periodic ``Engine 000: Avg prompt throughput ...`` line, when not idle."""
        stats = engine.stats
        last = (stats.prompt_tokens_total, stats.generation_tokens_total)
        last_q = (stats.prefix_cache_queries_total, stats.prefix_cache_hits_total)
        while True:
            await asyncio.sleep(STATS_INTERVAL_S)
            now = (stats.prompt_tokens_total, stats.generation_tokens_total)
            q = (stats.prefix_cache_queries_total, stats.prefix_cache_hits_total)
            if now == last and not engine.num_running and not engine.num_waiting:
                continue
            queries = q[0] - last_q[0]
            hit_rate = 100.0 * (q[1] - last_q[1]) / queries if queries else 0.0
            self.log.info(
                "loggers.py:123",
                f"Engine 000: Avg prompt throughput: {(now[0] - last[0]) / STATS_INTERVAL_S:.1f} "
                f"tokens/s, Avg generation throughput: "
                f"{(now[1] - last[1]) / STATS_INTERVAL_S:.1f} tokens/s, Running: "
                f"{engine.num_running} reqs, Waiting: {engine.num_waiting} reqs, GPU KV cache "
                f"usage: {100 * engine.kv_usage:.1f}%, Prefix cache hit rate: {hit_rate:.1f}%",
            )
            last, last_q = now, q


async def run_server(settings: SimSettings, argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Run the simulated server until SIGTERM/SIGINT (0) or a startup refusal (1)."""
    return await SimServer(settings, argv, env).run()
