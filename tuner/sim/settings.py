"""Turn the simulated server's argv and environment into one immutable :class:`SimSettings`.

The parser knows the vLLM flags the tuner sweeps plus the simulator's own flags; any other
``--flag [value]`` is accepted and reported in ``unknown_args`` (vLLM has hundreds of flags and
a command line written for the real server must still start the simulator). Parsing is pure and
never exits: errors raise :class:`ArgError` (bad command line, exit 2 like argparse) or
:class:`~tuner.nccl.NcclEnvError` (a value NCCL rejects).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tuner.nccl import NcclEnvError
from tuner.sim.faults import DEFAULT_DRIFT_LAUNCHES, MAX_FAULT
from tuner.sim.nccl import NcclEnv, parse_nccl_env
from tuner.sim.nccl_tuner_plugin import TunerTable, read_table
from tuner.sim.profiles import PROFILES

DEFAULT_PROFILE = "kimi-k2.5-int4-tp8"
REDACTED = "***"  # how the simulator shows its API key, like vLLM
DEFAULT_NCCL_VERSION = "2.31.0"
SIM_VERSION = "0.0.0-sim"
DEFAULT_ROUND_STEPS = 384  # benchmarks/search_efficiency.py's round: 3 requests x 128 tokens
MAX_NOISE = 0.5  # a relative sd above 50% is a percentage typed as a fraction
LOAD_FORMATS = ("auto", "dummy")  # vLLM's --load-format values the simulator models
# A dummy launch's throughput against the real weights: x (1 + bias), and a per-launch
# log-normal part of this relative sd. No seed measures them; random weights route a MoE's
# tokens evenly over its experts and sample no stop tokens, so a small gain is plausible.
DEFAULT_DUMMY_BIAS = 0.005
DEFAULT_DUMMY_NOISE = 0.005
DEFAULT_SPECULATIVE_METHOD = "ngram"


class ArgError(ValueError):
    """The command line is malformed (argparse would exit 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so parsing stays a pure function."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ArgError(message)


def build_parser() -> argparse.ArgumentParser:
    """The parser behind ``python -m tuner.sim --help``: every flag the simulator understands."""
    p = _Parser(
        prog="python -m tuner.sim",
        description=(
            "Simulated vLLM OpenAI-compatible server for tuner's demo and tests. Reads NCCL_* "
            "and CUDA_DEVICE_MAX_CONNECTIONS from the environment like a real vLLM + NCCL "
            "stack. A positional MODEL (as in `vllm serve MODEL`) means --model MODEL. Unknown "
            "flags are accepted with a warning."
        ),
        allow_abbrev=False,  # never let an unknown vLLM flag prefix-match one of ours
    )
    srv = p.add_argument_group("server")
    srv.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    srv.add_argument("--port", type=int, default=None, help="TCP port to listen on (required)")
    srv.add_argument("--model", default=None, help="model name (default: sim/<profile>)")
    srv.add_argument(
        "--served-model-name",
        nargs="+",
        default=None,
        help="name(s) the API answers to (default: the model)",
    )
    srv.add_argument(
        "--api-key",
        default=None,
        metavar="KEY",
        help="require 'Authorization: Bearer KEY' on /v1 requests, else 401 "
        "(default: $VLLM_API_KEY, else none)",
    )
    srv.add_argument(
        "--disable-log-stats", action="store_true", help="do not log periodic throughput stats"
    )
    srv.add_argument(
        "--disable-uvicorn-access-log",
        action="store_true",
        help="do not log one line per HTTP request",
    )
    vllm = p.add_argument_group("vLLM engine flags the simulator models")
    vllm.add_argument(
        "-O",
        "--compilation-config",
        dest="compilation",
        default=None,
        metavar="LEVEL|JSON",
        help="compilation level: -O0..-O3, -O 3, or '{\"level\": 3}' / '{\"mode\": 3}' (default 3)",
    )
    vllm.add_argument(
        "--enforce-eager",
        action="store_true",
        help="no CUDA graphs (about 25%% slower at small batch)",
    )
    vllm.add_argument(
        "--max-num-seqs", type=int, default=None, help="max requests in a batch (default 1024)"
    )
    vllm.add_argument(
        "--max-num-batched-tokens",
        type=int,
        default=None,
        help="token budget per engine step (default 8192)",
    )
    vllm.add_argument(
        "-tp",
        "--tensor-parallel-size",
        dest="tensor_parallel_size",
        type=int,
        default=None,
        help="tensor-parallel size (default: the profile's)",
    )
    vllm.add_argument(
        "-pp",
        "--pipeline-parallel-size",
        dest="pipeline_parallel_size",
        type=int,
        default=None,
        help="pipeline-parallel size (default 1): TP x PP GPUs",
    )
    vllm.add_argument(
        "--enable-expert-parallel", action="store_true", help="expert parallelism for MoE layers"
    )
    vllm.add_argument(
        "--disable-custom-all-reduce", action="store_true", help="use NCCL for every all-reduce"
    )
    vllm.add_argument(
        "--gpu-memory-utilization",
        type=float,
        default=0.9,
        help="fraction of GPU memory vLLM may use (default 0.9)",
    )
    vllm.add_argument(
        "--max-model-len", type=int, default=None, help="context length (default: the profile's)"
    )
    vllm.add_argument(
        "--load-format",
        choices=LOAD_FORMATS,
        default="auto",
        help="auto: read the checkpoint (default); dummy: random weights, no read of the "
        "model: the launch skips the weight phase and runs with a small bias "
        "(--dummy-bias, --dummy-noise), and speculative drafts are never accepted",
    )
    vllm.add_argument(
        "--speculative-config",
        dest="speculative_config",
        default=None,
        metavar="JSON",
        help='speculative decoding, e.g. \'{"method": "ngram", "num_speculative_tokens": 3}\': '
        "faster decode at low concurrency on real weights, pure cost on dummy ones",
    )
    vllm.add_argument(
        "--num-speculative-tokens",
        type=int,
        default=None,
        metavar="N",
        help="older vLLM's form: the same as --speculative-config "
        '\'{"method": "ngram", "num_speculative_tokens": N}\'',
    )
    vllm.add_argument(
        "--enable-prefix-caching",
        dest="prefix_caching",
        action="store_true",
        default=True,
        help="reuse KV of repeated prompt prefixes (default on)",
    )
    vllm.add_argument(
        "--no-enable-prefix-caching",
        dest="prefix_caching",
        action="store_false",
        help="disable prefix caching",
    )
    sim = p.add_argument_group("simulator-only flags")
    sim.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        choices=sorted(PROFILES),
        help=f"speed/behaviour profile (default {DEFAULT_PROFILE})",
    )
    sim.add_argument(
        "--load-seconds",
        type=float,
        default=2.0,
        help="wall-clock seconds the model load takes (default 2.0; "
        "not multiplied by --time-scale)",
    )
    sim.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the per-launch speed offset and step noise (default random)",
    )
    sim.add_argument(
        "--launch-noise",
        type=float,
        default=None,
        metavar="SD",
        help="relative sd of a launch's mean throughput between launches, a fraction "
        "(0.01: 1%%; default: the profile's, 0.4%%)",
    )
    sim.add_argument(
        "--round-noise",
        type=float,
        default=None,
        metavar="SD",
        help="relative sd of one benchmark round's mean throughput within a launch, a "
        "fraction, for rounds of --round-steps steps (default: the profile's slow drift)",
    )
    sim.add_argument(
        "--round-steps",
        type=int,
        default=DEFAULT_ROUND_STEPS,
        metavar="N",
        help="engine steps in one benchmark round, for --round-noise (about requests x "
        f"max_tokens / concurrency; default {DEFAULT_ROUND_STEPS}: 3 x 128 at concurrency 1)",
    )
    sim.add_argument(
        "--dummy-bias",
        type=float,
        default=DEFAULT_DUMMY_BIAS,
        metavar="B",
        help="with --load-format dummy: throughput x (1 + B) against the real weights, a "
        f"fraction (default {DEFAULT_DUMMY_BIAS:g}: 0.5%% faster)",
    )
    sim.add_argument(
        "--dummy-noise",
        type=float,
        default=DEFAULT_DUMMY_NOISE,
        metavar="SD",
        help="with --load-format dummy: relative sd of that factor from launch to launch, "
        f"drawn from --seed like --launch-noise (default {DEFAULT_DUMMY_NOISE:g})",
    )
    faults = p.add_argument_group(
        "faults across launches",
        "A slow first launch and a drift over launches; they need --launch-index-file, which "
        "counts the launches. Fractions like --launch-noise (0.05: 5%); all off by default.",
    )
    faults.add_argument(
        "--launch-index-file",
        default=None,
        metavar="PATH",
        help="a counter of launches: each start reads its launch index from PATH (0 when "
        "missing or empty) and writes index + 1 back, under an exclusive flock; give it "
        "'{study_dir}/sim-launches' in a space file",
    )
    faults.add_argument(
        "--cold-first-launch",
        type=float,
        default=0.0,
        metavar="F",
        help="launch 0 runs with throughput x (1 - F): its decode and prefill steps take "
        "1 / (1 - F) as long, as with a cold page or compile cache (0.05: 5%% slower; "
        "default 0)",
    )
    faults.add_argument(
        "--drift",
        type=float,
        default=0.0,
        metavar="D",
        help="launch k runs with throughput x (1 - D x min(k, N) / N), N = --drift-launches: "
        "positive D slows down over launches (a machine that throttles or gets busier), "
        "negative D speeds up (one that warms) (default 0)",
    )
    faults.add_argument(
        "--drift-launches",
        type=int,
        default=DEFAULT_DRIFT_LAUNCHES,
        metavar="N",
        help=f"launches over which --drift builds up, then stays (default "
        f"{DEFAULT_DRIFT_LAUNCHES})",
    )
    sim.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="multiply every simulated engine duration by F (default 1.0)",
    )
    sim.add_argument(
        "--nccl-version",
        default=DEFAULT_NCCL_VERSION,
        help=f"NCCL version to act as (default {DEFAULT_NCCL_VERSION}; a bare "
        "NCCL_ALGO fails at warmup from 2.31 on)",
    )
    sim.add_argument(
        "--fail-at-start",
        nargs="?",
        const="simulated failure at start",
        default=None,
        metavar="MESSAGE",
        help="exit 1 before loading",
    )
    sim.add_argument(
        "--fail-after-load",
        nargs="?",
        const="simulated failure after load",
        default=None,
        metavar="MESSAGE",
        help="exit 1 after loading, before /health answers",
    )
    sim.add_argument(
        "--leave-orphan",
        action="store_true",
        help="spawn a worker in its own session that ignores SIGTERM (a leak)",
    )
    sim.add_argument(
        "--flood-log", action="store_true", help="write log lines continuously (~60 KB/s)"
    )
    sim.add_argument(
        "--no-metrics",
        action="store_true",
        help="answer 404 at /metrics, as a server without Prometheus metrics",
    )
    sim.add_argument(
        "--shm-prefix",
        default=None,
        help="create /dev/shm/<prefix>_sim_<pid>, removed on clean shutdown",
    )
    return p


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
    speculative_method: str | None = None  # --speculative-config's method; None: off
    num_speculative_tokens: int = 0  # drafts per step; 0: off
    nccl: NcclEnv = field(default_factory=NcclEnv)
    nccl_tuner: TunerTable | None = None  # NCCL_TUNER_PLUGIN's table (sim/nccl_tuner_plugin)
    # simulator-only
    load_seconds: float = 2.0
    seed: int | None = None
    launch_noise: float | None = None  # None: the profile's launch_sd
    round_noise: float | None = None  # None: the profile's drift
    round_steps: int = DEFAULT_ROUND_STEPS
    dummy_bias: float = DEFAULT_DUMMY_BIAS
    dummy_noise: float = DEFAULT_DUMMY_NOISE
    launch_index_file: str | None = None
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


def parse_compilation(raw: str | None) -> int | None:
    """``"3"`` / ``'{"level": 3}'`` / ``'{"mode": 3}'`` -> 3; None stays None."""
    if raw is None:
        return None
    text = raw.strip()
    if text.lstrip("-").isdigit():
        level = int(text)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ArgError(f"-O/--compilation-config: invalid value {raw!r}") from None
        value = data.get("level", data.get("mode")) if isinstance(data, dict) else data
        if isinstance(data, dict) and value is None:
            return None  # a config without a level keeps the default level
        if not isinstance(value, int) or isinstance(value, bool):
            raise ArgError(f"-O/--compilation-config: invalid value {raw!r}")
        level = value
    if not 0 <= level <= 3:
        raise ArgError(f"-O/--compilation-config: level must be 0..3, got {level}")
    return level


def parse_speculative(raw: str | None, num_tokens: int | None) -> tuple[str | None, int]:
    """(method, drafts per step) from ``--speculative-config`` and ``--num-speculative-tokens``;
    (None, 0) when neither is given."""
    method: str | None = None
    tokens = num_tokens
    if raw is not None:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            raise ArgError(f"--speculative-config: invalid JSON {raw!r}") from None
        if not isinstance(data, dict):
            raise ArgError(f"--speculative-config: expected a JSON object, got {raw!r}")
        value = data.get("method", DEFAULT_SPECULATIVE_METHOD)
        if not isinstance(value, str) or not value:
            raise ArgError(f"--speculative-config: method must be a name, got {value!r}")
        method = value
        given = data.get("num_speculative_tokens")
        if given is None:
            raise ArgError("--speculative-config: num_speculative_tokens is required")
        if not isinstance(given, int) or isinstance(given, bool):
            raise ArgError(
                f"--speculative-config: num_speculative_tokens must be an integer, got {given!r}"
            )
        if tokens is not None and tokens != given:
            raise ArgError(
                f"--num-speculative-tokens {tokens} disagrees with --speculative-config's "
                f"num_speculative_tokens {given}"
            )
        tokens = given
    if tokens is None:
        return None, 0
    if tokens < 1:
        raise ArgError(f"num_speculative_tokens must be positive, got {tokens}")
    return method or DEFAULT_SPECULATIVE_METHOD, tokens


def _split_unknown(extras: Sequence[str]) -> tuple[str | None, tuple[str, ...]]:
    """Pick a positional model out of argparse's leftovers; the rest are unknown flags.

    An unknown ``--flag`` followed by a token that is not a flag takes it as its value (the
    common ``--gpu-memory-utilization 0.9`` shape); a bare token with no flag before it is the
    model.
    """
    model: str | None = None
    unknown: list[str] = []
    i = 0
    while i < len(extras):
        tok = extras[i]
        if tok.startswith("-") and len(tok) > 1:
            unknown.append(tok)
            nxt = extras[i + 1] if i + 1 < len(extras) else None
            if "=" not in tok and nxt is not None and not _looks_like_flag(nxt):
                unknown.append(nxt)
                i += 1
        elif model is None:
            model = tok
        else:
            unknown.append(tok)
        i += 1
    return model, tuple(unknown)


def _looks_like_flag(tok: str) -> bool:
    if not tok.startswith("-") or tok == "-":
        return False
    try:
        float(tok)  # "-1" is a value, not a flag
    except ValueError:
        return True
    return False


def _check_noise(flag: str, value: float | None) -> None:
    """A noise level is a relative sd: a fraction from 0 up to MAX_NOISE."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0:
        raise ArgError(f"{flag} is a relative sd and must be >= 0 (0.01 is 1%), got {value:g}")
    if value > MAX_NOISE:
        raise ArgError(
            f"{flag} is a fraction, not a percentage: 0.02 is 2%; got {value:g} "
            f"(at most {MAX_NOISE:g})"
        )


def _check_faults(ns: argparse.Namespace) -> None:
    """--cold-first-launch in [0, MAX_FAULT], --drift in [-MAX_FAULT, MAX_FAULT], and a
    counter file whenever either is on (a fault by launch index needs the index)."""
    lowest = {"--cold-first-launch": 0.0, "--drift": -MAX_FAULT}
    for flag, value in (("--cold-first-launch", ns.cold_first_launch), ("--drift", ns.drift)):
        if not math.isfinite(value) or not lowest[flag] <= value <= MAX_FAULT:
            raise ArgError(
                f"{flag} is a fraction in {lowest[flag]:g}..{MAX_FAULT:g} (0.05 is 5%), "
                f"got {value:g}"
            )
    if ns.drift_launches < 1:
        raise ArgError(f"--drift-launches must be positive, got {ns.drift_launches}")
    if (ns.cold_first_launch or ns.drift) and not ns.launch_index_file:
        raise ArgError(
            "--cold-first-launch and --drift need --launch-index-file PATH, which counts "
            "the launches"
        )


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
    positional_model, unknown = _split_unknown(extras)
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
        _check_noise(flag, value)
    if ns.round_steps < 1:
        raise ArgError(f"--round-steps must be positive, got {ns.round_steps}")
    _check_noise("--dummy-noise", ns.dummy_noise)
    if not math.isfinite(ns.dummy_bias) or abs(ns.dummy_bias) > MAX_NOISE:
        raise ArgError(
            f"--dummy-bias is a fraction in -{MAX_NOISE:g}..{MAX_NOISE:g} (0.005 is 0.5%), "
            f"got {ns.dummy_bias:g}"
        )
    spec_method, spec_tokens = parse_speculative(ns.speculative_config, ns.num_speculative_tokens)
    _check_faults(ns)
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
        speculative_method=spec_method,
        num_speculative_tokens=spec_tokens,
        nccl=nccl,
        nccl_tuner=read_table(env),
        load_seconds=ns.load_seconds,
        seed=ns.seed,
        launch_noise=ns.launch_noise,
        round_noise=ns.round_noise,
        round_steps=ns.round_steps,
        dummy_bias=ns.dummy_bias,
        dummy_noise=ns.dummy_noise,
        launch_index_file=ns.launch_index_file,
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
    skip = {"nccl", "unknown_args", "env_warnings", "nccl_error"}
    out: dict[str, object] = {
        name: getattr(settings, name)
        for name in settings.__dataclass_fields__
        if name not in skip and getattr(settings, name) != getattr(default, name)
    }
    if "api_key" in out:
        out["api_key"] = REDACTED
    return out
