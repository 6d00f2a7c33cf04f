"""Test doubles for tuner's seams (GPU backend, runner, observer), shared by every test tier."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optuna.trial import FrozenTrial

from tuner.errors import LaunchError
from tuner.events import SweepObserver
from tuner.sim.checks import PHASES
from tuner.sim.faults import DEFAULT_DRIFT_LAUNCHES, throughput_factor
from tuner.telemetry.gpu import GpuInfo, GpuProcess, GpuSample
from tuner.views.trial_line import trial_line


@dataclass
class FakeGpu:
    """The state of one fake GPU; tests mutate it to script a scenario."""

    name: str = "Fake RTX PRO 6000"
    memory_total_mib: float = 98_304.0
    memory_used_mib: float = 0.0
    processes: list[GpuProcess] = field(default_factory=list)
    util_pct: float = 0.0
    power_w: float = 60.0
    energy_mj: float = 0.0
    temperature_c: float = 35.0
    throttle_reasons: tuple[str, ...] = ()
    energy_supported: bool = True  # False: sample() reports no energy counter (older GPUs)
    nvlink_links: int = 0
    memory_bandwidth_gbps: float | None = 1792.0  # NVML's theoretical figure


class FakeGpuBackend:
    """A scriptable GpuBackend: busy GPUs, memory that never comes back, throttling.

    ``memory_script`` maps a GPU index to a list of readings returned one per call
    to ``memory_used_mib`` (the last one repeats), to model memory draining slowly.
    """

    available = True
    reason: str | None = None

    def __init__(self, gpus: list[FakeGpu] | None = None) -> None:
        self.gpus = gpus if gpus is not None else [FakeGpu() for _ in range(2)]
        self.memory_script: dict[int, list[float]] = {}
        self.closed = False

    def device_count(self) -> int:
        return len(self.gpus)

    def info(self, index: int) -> GpuInfo:
        gpu = self.gpus[index]
        return GpuInfo(
            index=index,
            name=gpu.name,
            uuid=f"GPU-fake-{index}",
            memory_total_mib=gpu.memory_total_mib,
            pcie_gen=5,
            pcie_width=16,
            pcie_gen_max=5,
            pcie_width_max=16,
            nvlink_links=gpu.nvlink_links,
            memory_bandwidth_gbps=gpu.memory_bandwidth_gbps,
        )

    def memory_used_mib(self, index: int) -> float:
        script = self.memory_script.get(index)
        if script:
            value = script.pop(0) if len(script) > 1 else script[0]
            self.gpus[index].memory_used_mib = value
        return self.gpus[index].memory_used_mib

    def compute_processes(self, index: int) -> list[GpuProcess]:
        return list(self.gpus[index].processes)

    def sample(self, index: int) -> GpuSample:
        gpu = self.gpus[index]
        gpu.energy_mj += gpu.power_w * 1000.0 * 0.1  # as if 100 ms passed per sample
        return GpuSample(
            index=index,
            time_s=time.time(),
            util_pct=gpu.util_pct,
            memory_used_mib=self.memory_used_mib(index),
            power_w=gpu.power_w,
            energy_mj=gpu.energy_mj if gpu.energy_supported else None,
            temperature_c=gpu.temperature_c,
            sm_clock_mhz=2100.0,
            mem_clock_mhz=12000.0,
            pcie_tx_kbps=1000.0,
            pcie_rx_kbps=1000.0,
            throttle_reasons=gpu.throttle_reasons,
        )

    def driver_version(self) -> str | None:
        return "580.00-fake"

    def cuda_driver_version(self) -> str | None:
        return "13.0"

    def close(self) -> None:
        self.closed = True


def vllm_metrics_text(
    *,
    preemptions: float = 0,
    prompt_tokens: float = 0,
    generation_tokens: float = 0,
    prefix_queries: float = 0,
    prefix_hits: float = 0,
    kv_usage: float = 0.0,
    running: float = 0,
    waiting: float = 0,
    engines: int = 1,
    legacy: bool = False,
) -> str:
    """A vLLM-like /metrics page, written by prometheus_client as vLLM's server writes it.

    Counters are split evenly over ``engines`` (one series per data-parallel engine), so
    their sums are the given totals; gauges read the same on every engine. ``legacy``
    uses the names older vLLM releases exported (gpu_cache_usage_perc, gpu_prefix_cache_*).
    """
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

    registry = CollectorRegistry()
    labels = ["engine", "model_name"]
    prefix = "vllm:gpu_prefix_cache" if legacy else "vllm:prefix_cache"
    kv_name = "vllm:gpu_cache_usage_perc" if legacy else "vllm:kv_cache_usage_perc"
    gauges = {
        "vllm:num_requests_running": running,
        "vllm:num_requests_waiting": waiting,
        kv_name: kv_usage,
    }
    counters = {
        "vllm:num_preemptions": preemptions,
        "vllm:prompt_tokens": prompt_tokens,
        "vllm:generation_tokens": generation_tokens,
        f"{prefix}_queries": prefix_queries,
        f"{prefix}_hits": prefix_hits,
    }
    made_gauges = {name: Gauge(name, name, labels, registry=registry) for name in gauges}
    made_counters = {name: Counter(name, name, labels, registry=registry) for name in counters}
    ttft = Histogram("vllm:time_to_first_token_seconds", "TTFT", ["model_name"], registry=registry)
    success = Counter(
        "vllm:request_success", "finished", ["finished_reason", "model_name"], registry=registry
    )
    for engine in range(engines):
        values = (str(engine), "fake-model")
        for name, value in gauges.items():
            made_gauges[name].labels(*values).set(value)
        for name, value in counters.items():
            made_counters[name].labels(*values).inc(value / engines)
    ttft.labels("fake-model").observe(0.12)
    success.labels("length", "fake-model").inc(3)
    return generate_latest(registry).decode()


class FakeRunner:
    """A Runner that measures nothing: each launch draws its rounds from a noise model.

    ``speed(params)`` gives a configuration's true objective; each launch gets its own
    offset (between-launch noise, ``between`` relative sd) and each round its own
    jitter (``within``). Failures come from ``fail(params)`` returning a reason, or the
    LaunchError the launcher would raise (``sim_startup_error``: its cause and log tail).
    Rows go to the store as the real runner writes them, since the sweep reads them.
    ``seconds`` = (to healthy, benchmark and stop) times every launch as if it took them.

    ``tuner sim``'s faults across launches (tuner/sim/faults.py), by the runner's own count of
    launches (every call of ``run``, a failed one too, as the sim counts every start):
    ``cold_first`` (launch 0's value x (1 - cold_first)), ``drift`` over ``drift_launches``
    (launch k's value x (1 - drift x min(k, N) / N)). They scale ``speed(params)`` before
    the launch's noise, and treat the value as a throughput (higher is faster).
    """

    def __init__(
        self,
        store,
        study,
        *,
        speed,
        between=0.005,
        within=0.005,
        seed=0,
        fail=None,
        rounds=3,
        seconds=None,
        cold_first=0.0,
        drift=0.0,
        drift_launches=DEFAULT_DRIFT_LAUNCHES,
        screen_speed=None,
        screen_between=0.0,
        screen_seconds=None,
        screen_rounds=None,
    ):  # type: ignore[no-untyped-def]
        import random

        self.store, self.study = store, study
        self.speed, self.fail = speed, fail
        self.between, self.within, self.rounds = between, within, rounds
        self.seconds = seconds
        self.cold_first, self.drift, self.drift_launches = cold_first, drift, drift_launches
        # A screening launch (fidelity "screen"): ``screen_speed(params)`` its true value
        # (default: ``speed``), ``screen_between`` the extra between-launch noise of random
        # weights, ``screen_seconds`` its times (default: ``seconds``), ``screen_rounds`` its
        # rounds (default: ``rounds``; the space's screening.benchmark.rounds).
        self.screen_speed, self.screen_between = screen_speed, screen_between
        self.screen_seconds, self.screen_rounds = screen_seconds, screen_rounds
        self.launches = 0  # run calls so far: the next launch's index
        self.rng = random.Random(seed)
        self.launched: list[tuple[str, dict]] = []
        self.fidelities: list[str] = []  # each launch's, in the order of ``launched``

    def run(self, *, trial_id, trial_number, role, settings, prune_check=None, fidelity="full"):  # type: ignore[no-untyped-def]
        from tuner.trial.runner import LaunchOutcome

        index = self.launches  # as the sim's --launch-index-file gives it
        self.launches += 1
        self.launched.append((role, dict(settings.changed)))
        self.fidelities.append(fidelity)
        launch_id = self.store.add_launch(
            study=self.study,
            trial_id=trial_id,
            trial_number=trial_number,
            role=role,
            fidelity=fidelity,
            config_hash=settings.config_hash,
            params=dict(settings.params),
            env=settings.env,
            argv=["fake"],
        )
        reason = self.fail(settings.params) if self.fail else None
        if isinstance(reason, LaunchError):
            self.store.update_launch(launch_id, status="failed", reason=reason.reason)
            raise reason
        if reason:
            self.store.update_launch(launch_id, status="failed", reason=reason)
            raise LaunchError(reason, exit_code=1)
        fault = throughput_factor(index, self.cold_first, self.drift, self.drift_launches)
        screen = fidelity == "screen"
        speed = self.screen_speed if screen and self.screen_speed is not None else self.speed
        mean = speed(settings.params) * fault * (1 + self.rng.gauss(0, self.between))
        if screen and self.screen_between:
            mean *= 1 + self.rng.gauss(0, self.screen_between)
        rounds: list[float] = []
        pruned = None
        count = self.screen_rounds if screen and self.screen_rounds else self.rounds
        for _ in range(count):
            rounds.append(mean * (1 + self.rng.gauss(0, self.within)))
            if prune_check is not None and len(rounds) < count:
                pruned = prune_check(rounds)
                if pruned:
                    break
        timing = {}
        seconds = self.screen_seconds if screen and self.screen_seconds else self.seconds
        if seconds is not None:
            import datetime as dt

            healthy, rest = seconds
            now = dt.datetime.now(dt.timezone.utc)
            timing = dict(
                seconds_to_healthy=healthy,
                started_at=now - dt.timedelta(seconds=healthy + rest),
                finished_at=now,
            )
        self.store.update_launch(
            launch_id,
            status="pruned" if pruned else "complete",
            reason=pruned,
            objective_rounds=rounds,
            objective_mean=sum(rounds) / len(rounds),
            **timing,
        )
        return LaunchOutcome(launch_id=launch_id, round_values=tuple(rounds), pruned_reason=pruned)


def sim_startup_error(
    profile: str, argv: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> LaunchError | None:
    """The LaunchError the launcher raises when ``tuner.sim --profile PROFILE ARGV`` refuses
    to start (None when it starts): the log the simulator writes up to its failure (the
    load's lines as far as it gets, the KV cache's, the capture bar when the graphs run
    out, its traceback), read by the launcher's own path (``exit_reason``), so its reason
    and cause are what a real launch of the simulator records."""
    from tuner.launcher.exit_reason import early_exit_error
    from tuner.sim.checks import first_failure
    from tuner.sim.profiles import PROFILES
    from tuner.sim.settings import parse_settings
    from tuner.sim.startup_phases import CAPTURE_BAR, CAPTURE_SIZES

    settings = parse_settings(["--profile", profile, *argv], dict(env or {}), strict=False)
    failure = first_failure(PROFILES[profile], settings)
    if failure is None:
        return None
    info = "(APIServer pid=7) INFO 12-06 10:00:00"
    lines = [f"{info} [api_server.py:1839] vLLM API server version 0.0.0-sim"]
    moments = PHASES.index(failure.phase)
    if moments >= PHASES.index("load"):
        lines += [
            f"{info} [gpu_model_runner.py:2338] Starting to load model sim/{profile}...",
            "Loading safetensors checkpoint shards:  50% Completed | 32/64 [00:01<00:01, 30it/s]",
        ]
    if moments >= PHASES.index("warmup"):
        lines += [
            "Loading safetensors checkpoint shards: 100% Completed | 64/64 [00:02<00:00, 30it/s]",
            f"{info} [gpu_model_runner.py:2370] Model loading took 63.7500 GiB and 2.1 seconds",
            f"{info} [gpu_worker.py:298] Available KV cache memory: 11.33 GiB",
        ]
    if failure.phase == "capture":
        lines.append(f"{CAPTURE_BAR} 0/{CAPTURE_SIZES} [00:00<?, ?it/s]")
    lines += failure.warn_lines("host", 7)
    lines.append("(APIServer pid=7) ERROR 12-06 10:00:02 [core.py:708] EngineCore failed to start.")
    lines += failure.traceback_lines()
    tail = "\n".join(lines)
    return early_exit_error(1, tail, tail)


class RecordingObserver(SweepObserver):
    """Keeps every event as a tuple, a finished trial as the line the console prints."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def message(self, text: str) -> None:
        self.events.append(("message", text))

    def trial_started(self, number: int, role: str, changed: dict[str, Any]) -> None:
        self.events.append(("trial_started", number, role, changed))

    def load_progress(self, number: int, percent: float | None, line: str) -> None:
        self.events.append(("load_progress", number, percent, line))

    def healthy(self, number: int, seconds: float) -> None:
        self.events.append(("healthy", number, seconds))

    def level_done(self, number: int, round_index: int, summary: Any) -> None:
        self.events.append(("level_done", number, round_index, summary))

    def trial_finished(self, trial: FrozenTrial, metric: str) -> None:
        self.events.append(("trial_finished", trial.number, trial_line(trial, metric)))

    def cost_plan(self, plan: Any) -> None:
        self.events.append(("cost_plan", plan))


class FakeTopologyNvml:
    """A stand-in for ``pynvml`` answering the topology reader's questions (no GPU needed).

    ``nvlink`` holds the pairs (a, b) joined by NVLink; ``p2p_blocked`` the pairs whose P2P
    reads and writes NVML reports unsupported; ``pcie`` the PCIe level (NVML's number,
    default 50: SYS) of each pair. ``missing`` names entry points an older pynvml lacks;
    ``init_error`` is raised by ``nvmlInit`` (a machine without a driver).
    """

    NVML_P2P_CAPS_INDEX_READ = 0
    NVML_P2P_CAPS_INDEX_WRITE = 1
    NVML_P2P_CAPS_INDEX_NVLINK = 2
    NVML_P2P_STATUS_OK = 0
    NVML_P2P_STATUS_NOT_SUPPORTED = 5
    NVML_FEATURE_ENABLED = 1
    NVML_NVLINK_MAX_LINKS = 18

    class NVMLError(Exception):
        pass

    class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801 - pynvml's spelling
        pass

    class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's spelling
        pass

    def __init__(
        self,
        gpus: int,
        *,
        nvlink: set[tuple[int, int]] | None = None,
        links_per_gpu: int = 18,
        p2p_blocked: set[tuple[int, int]] | None = None,
        pcie: dict[tuple[int, int], int] | None = None,
        missing: set[str] | None = None,
        init_error: Exception | None = None,
    ) -> None:
        self.gpus = gpus
        self.nvlink = {tuple(sorted(p)) for p in nvlink or set()}
        self.links_per_gpu = links_per_gpu
        self.p2p_blocked = {tuple(sorted(p)) for p in p2p_blocked or set()}
        self.pcie = pcie or {}
        self.missing = missing or set()
        self.init_error = init_error
        self.shutdowns = 0

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("nvml") and name in object.__getattribute__(self, "missing"):
            raise AttributeError(name)  # an older pynvml without this entry point
        return object.__getattribute__(self, name)

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return self.gpus

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def _pair(self, a: int, b: int) -> tuple[int, int]:
        return (min(a, b), max(a, b))

    def nvmlDeviceGetP2PStatus(self, a: int, b: int, cap: int) -> int:  # noqa: N802
        pair = self._pair(a, b)
        if cap == self.NVML_P2P_CAPS_INDEX_NVLINK:
            ok = pair in self.nvlink
        else:
            ok = pair not in self.p2p_blocked
        return self.NVML_P2P_STATUS_OK if ok else self.NVML_P2P_STATUS_NOT_SUPPORTED

    def nvmlDeviceGetTopologyCommonAncestor(self, a: int, b: int) -> int:  # noqa: N802
        return self.pcie.get(self._pair(a, b), 50)

    def nvmlDeviceGetNvLinkState(self, handle: int, link: int) -> int:  # noqa: N802
        if not any(handle in p for p in self.nvlink) or link >= self.links_per_gpu:
            raise self.NVMLError_NotSupported()
        return self.NVML_FEATURE_ENABLED
