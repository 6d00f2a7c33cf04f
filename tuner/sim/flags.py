"""The simulator's command line: the parser behind ``python -m tuner.sim --help``.

It holds the server's flags and the vLLM engine flags the simulator models; the
simulator's own flags (profile, noise, faults, failures) are added by
:mod:`tuner.sim.own_flags`. Parsing never exits: a bad command line raises
:class:`ArgError`, so parsing stays a pure function.
"""

from __future__ import annotations

import argparse

from tuner.sim.own_flags import add_own_flags

LOAD_FORMATS = ("auto", "dummy")  # vLLM's --load-format values the simulator models


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
        "--safetensors-load-strategy",
        choices=("lazy", "eager", "prefetch", "torchao"),
        default=None,
        help="how the weights are read (vLLM 0.32's values; default: lazy on a local disk): "
        "with --host-ram-gib, prefetch reads what the page cache can hold 3.4x faster on a "
        "cold load (vLLM PR #36012); the others read as the default does",
    )
    vllm.add_argument(
        "--max-cudagraph-capture-size",
        type=int,
        default=None,
        metavar="N",
        help="the largest batch captured as a CUDA graph (default 512: 51 sizes); fewer "
        "sizes capture faster, and a decode batch above the largest runs without graphs",
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
    add_own_flags(p)
    return p
