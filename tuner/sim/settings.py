"""Turn the simulated server's argv and environment into one immutable :class:`SimSettings`.

The parser (tuner/sim/flags.py, tuner/sim/own_flags.py; values checked in
tuner/sim/flag_checks.py) knows the vLLM flags the tuner sweeps plus the simulator's own
flags; any other ``--flag [value]`` is accepted and reported in ``unknown_args`` (vLLM has
hundreds of flags and a command line written for the real server must still start the
simulator). Parsing is pure and never exits: errors raise :class:`ArgError` (bad command
line, exit 2 like argparse) or :class:`~tuner.nccl.NcclEnvError` (a value NCCL rejects).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tuner.nccl import NcclEnvError
from tuner.sim.faults import DEFAULT_DRIFT_LAUNCHES
from tuner.sim.flag_checks import (
    MAX_NOISE,
    check_faults,
    check_noise,
    parse_compilation,
    parse_speculative,
    split_unknown,
)
from tuner.sim.flags import ArgError, build_parser
from tuner.sim.nccl import NcclEnv, parse_nccl_env
from tuner.sim.nccl_tuner_plugin import TunerTable, read_table
from tuner.sim.own_flags import (
    DEFAULT_DUMMY_BIAS,
    DEFAULT_DUMMY_NOISE,
    DEFAULT_NCCL_VERSION,
    DEFAULT_PROFILE,
    DEFAULT_ROUND_STEPS,
)
from tuner.sim.routing import STRATEGY_ENV, strategy_from_env

__all__ = [  # the parser's names too: callers import the command line from here
    "DEFAULT_NCCL_VERSION",
    "DEFAULT_PROFILE",
    "DEFAULT_ROUND_STEPS",
    "REDACTED",
    "SIM_VERSION",
    "ArgError",
    "SimSettings",
    "build_parser",
    "non_default_args",
    "parse_settings",
]

REDACTED = "***"  # how the simulator shows its API key, like vLLM
SIM_VERSION = "0.0.0-sim"


@dataclass(frozen=True)
class SimSettings:
    """Everything a launch of the simulator is configured with, after parsing."""

    profile: str = DEFAULT_PROFILE
    host: str = "127.0.0.1"
    port: int | None = None
    model: str | None = None
    served_model_names: tuple[str, ...] = ()
    api_key: str | None = field(default=None, repr=False)  # --api-key, else $VLLM_API_KEY
    compilation_level: int | None = None  # None: vLLM's default (3)
    enforce_eager: bool = False
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None  # None: 1, vLLM's default
    enable_expert_parallel: bool = False
    disable_custom_all_reduce: bool = False
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None
    prefix_caching: bool = True
    load_format: str = "auto"  # "dummy": random weights
    safetensors_load_strategy: str | None = None  # None: vLLM's default (lazy on ext4)
    max_cudagraph_capture_size: int | None = None  # None: 512 (tuner/sim/graphs.py)
    speculative_method: str | None = None  # --speculative-config's method; None: off
    num_speculative_tokens: int = 0  # drafts per step; 0: off
    nccl: NcclEnv = field(default_factory=NcclEnv)
    nccl_tuner: TunerTable | None = None  # NCCL_TUNER_PLUGIN's table (sim/nccl_tuner_plugin)
    moe_routing: str = ""  # VLLM_MOE_ROUTING_SIMULATION_STRATEGY; "": the router's own
    # simulator-only
    load_seconds: float = 2.0
    seed: int | None = None
    launch_noise: float | None = None  # None: the profile's launch_sd
    round_noise: float | None = None  # None: the profile's drift
    round_steps: int = DEFAULT_ROUND_STEPS
    dummy_bias: float = DEFAULT_DUMMY_BIAS
    dummy_noise: float = DEFAULT_DUMMY_NOISE
    launch_index_file: str | None = None
    host_ram_gib: float | None = None  # the page cache under the weights (sim/page_cache)
    page_cache_file: str | None = None
    cold_first_launch: float = 0.0  # throughput x (1 - this) at launch 0
    drift: float = 0.0  # throughput x (1 - this x min(k, N) / N) at launch k
    drift_launches: int = DEFAULT_DRIFT_LAUNCHES  # N
    time_scale: float = 1.0
    nccl_version: str = DEFAULT_NCCL_VERSION
    fail_at_start: str | None = None
    fail_after_load: str | None = None
    leave_orphan: bool = False
    flood_log: bool = False
    shm_prefix: str | None = None
    no_metrics: bool = False
    disable_log_stats: bool = False
    disable_access_log: bool = False
    unknown_args: tuple[str, ...] = ()
    env_warnings: tuple[str, ...] = ()
    nccl_error: str | None = None  # set only by parse_settings(strict=False)

    def as_json(self) -> dict[str, object]:
        """A JSON-ready view (the ``settings`` field of ``GET /sim/config``)."""
        out: dict[str, object] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name == "api_key" and value is not None:
                value = REDACTED  # /sim/config answers without a key
            elif isinstance(value, NcclEnv):
                value = value.as_json()
            elif isinstance(value, tuple):
                value = list(value)
            out[name] = value
        return out


def parse_settings(
    argv: Sequence[str], env: Mapping[str, str], *, strict: bool = True
) -> SimSettings:
    """Parse a simulator command line and environment.

    Raises ArgError for a bad command line. A value NCCL rejects raises NcclEnvError when
    ``strict``; otherwise it is kept in ``nccl_error`` (NCCL defaults apply), so the server can
    fail at the point where the real stack would: communicator init, after the startup lines.
    """
    parser = build_parser()
    ns, extras = parser.parse_known_args(list(argv))
    positional_model, unknown = split_unknown(extras)
    model = ns.model or positional_model
    positive = ("max_num_seqs", "max_num_batched_tokens", "tensor_parallel_size")
    for name in (*positive, "pipeline_parallel_size"):
        value = getattr(ns, name)
        if value is not None and value <= 0:
            raise ArgError(f"--{name.replace('_', '-')} must be positive, got {value}")
    if ns.port is not None and not 0 <= ns.port <= 65535:
        raise ArgError(f"--port must be 0..65535, got {ns.port}")
    if ns.time_scale <= 0:
        raise ArgError(f"--time-scale must be positive, got {ns.time_scale}")
    if ns.load_seconds < 0:
        raise ArgError(f"--load-seconds must be >= 0, got {ns.load_seconds}")
    if not 0 < ns.gpu_memory_utilization <= 1:
        raise ArgError("--gpu-memory-utilization must be in (0, 1]")
    for flag, value in (("--launch-noise", ns.launch_noise), ("--round-noise", ns.round_noise)):
        check_noise(flag, value)
    if ns.round_steps < 1:
        raise ArgError(f"--round-steps must be positive, got {ns.round_steps}")
    check_noise("--dummy-noise", ns.dummy_noise)
    if ns.host_ram_gib is not None and not ns.host_ram_gib > 0:
        raise ArgError(f"--host-ram-gib must be positive, got {ns.host_ram_gib:g}")
    if ns.max_cudagraph_capture_size is not None and ns.max_cudagraph_capture_size < 1:
        raise ArgError(
            f"--max-cudagraph-capture-size must be 1 or more, got {ns.max_cudagraph_capture_size}"
        )
    if not math.isfinite(ns.dummy_bias) or abs(ns.dummy_bias) > MAX_NOISE:
        raise ArgError(
            f"--dummy-bias is a fraction in -{MAX_NOISE:g}..{MAX_NOISE:g} (0.005 is 0.5%), "
            f"got {ns.dummy_bias:g}"
        )
    spec_method, spec_tokens = parse_speculative(ns.speculative_config, ns.num_speculative_tokens)
    check_faults(ns)
    try:
        moe_routing = strategy_from_env(env)
    except ValueError as exc:  # vLLM fails at the first MoE forward; the sim at its start
        raise ArgError(f"{STRATEGY_ENV}: {exc}") from None
    nccl_error: str | None = None
    try:
        nccl, warnings = parse_nccl_env(env)
    except NcclEnvError as exc:
        if strict:
            raise
        nccl, warnings, nccl_error = NcclEnv(), [], exc.warn
    return SimSettings(
        profile=ns.profile,
        host=ns.host,
        port=ns.port,
        model=model,
        served_model_names=tuple(ns.served_model_name or ()),
        api_key=ns.api_key or env.get("VLLM_API_KEY") or None,
        compilation_level=parse_compilation(ns.compilation),
        enforce_eager=ns.enforce_eager,
        max_num_seqs=ns.max_num_seqs,
        max_num_batched_tokens=ns.max_num_batched_tokens,
        tensor_parallel_size=ns.tensor_parallel_size,
        pipeline_parallel_size=ns.pipeline_parallel_size,
        enable_expert_parallel=ns.enable_expert_parallel,
        disable_custom_all_reduce=ns.disable_custom_all_reduce,
        gpu_memory_utilization=ns.gpu_memory_utilization,
        max_model_len=ns.max_model_len,
        prefix_caching=ns.prefix_caching,
        load_format=ns.load_format,
        safetensors_load_strategy=ns.safetensors_load_strategy,
        max_cudagraph_capture_size=ns.max_cudagraph_capture_size,
        speculative_method=spec_method,
        num_speculative_tokens=spec_tokens,
        nccl=nccl,
        nccl_tuner=read_table(env),
        moe_routing=moe_routing,
        load_seconds=ns.load_seconds,
        seed=ns.seed,
        launch_noise=ns.launch_noise,
        round_noise=ns.round_noise,
        round_steps=ns.round_steps,
        dummy_bias=ns.dummy_bias,
        dummy_noise=ns.dummy_noise,
        launch_index_file=ns.launch_index_file,
        host_ram_gib=ns.host_ram_gib,
        page_cache_file=ns.page_cache_file,
        cold_first_launch=ns.cold_first_launch,
        drift=ns.drift,
        drift_launches=ns.drift_launches,
        time_scale=ns.time_scale,
        nccl_version=ns.nccl_version,
        fail_at_start=ns.fail_at_start,
        fail_after_load=ns.fail_after_load,
        leave_orphan=ns.leave_orphan,
        flood_log=ns.flood_log,
        shm_prefix=ns.shm_prefix,
        no_metrics=ns.no_metrics,
        disable_log_stats=ns.disable_log_stats,
        disable_access_log=ns.disable_uvicorn_access_log,
        unknown_args=unknown,
        env_warnings=tuple(warnings),
        nccl_error=nccl_error,
    )


def non_default_args(settings: SimSettings) -> dict[str, object]:
    """What vLLM prints as ``non-default args: {...}`` at startup; the API key as ``***``
    (vLLM redacts it there since 2026; older versions printed it)."""
    default = SimSettings()
    skip = {"nccl", "moe_routing", "unknown_args", "env_warnings", "nccl_error"}
    out: dict[str, object] = {
        name: getattr(settings, name)
        for name in settings.__dataclass_fields__
        if name not in skip and getattr(settings, name) != getattr(default, name)
    }
    if "api_key" in out:
        out["api_key"] = REDACTED
    return out
