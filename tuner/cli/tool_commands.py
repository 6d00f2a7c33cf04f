"""The tools beside a study: `tuner bench` (a running server, no restart), `tuner sim` and
`tuner probe`. Each parses its options, calls one library function, renders."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from tuner import exit_codes
from tuner.cli.common import (
    TABLE_OR_JSON,
    StorageOpt,
    app,
    check_format,
    err,
    handles_errors,
    out,
)
from tuner.errors import ConfigError
from tuner.secrets import safe_url
from tuner.space.limits import MetricLimit, parse_limit
from tuner.storage import DEFAULT_STORAGE


@app.command()
@handles_errors
def bench(
    url: Annotated[str, typer.Option(help="Base URL of a running OpenAI-compatible server.")],
    model: Annotated[str | None, typer.Option(help="Model name (default: /v1/models).")] = None,
    api: Annotated[str, typer.Option(help="completions or chat.")] = "completions",
    concurrency: Annotated[str, typer.Option(help="Levels, e.g. 1,8,64.")] = "1",
    requests: Annotated[int, typer.Option(min=1, help="Requests per level.")] = 16,
    duration: Annotated[
        float | None, typer.Option(help="Seconds per level instead of a count.")
    ] = None,
    rate: Annotated[
        float | None, typer.Option(help="Poisson arrivals, requests/s (capped by --concurrency).")
    ] = None,
    prompt_tokens: Annotated[int, typer.Option(min=1, help="Tokens per prompt.")] = 256,
    max_tokens: Annotated[
        int, typer.Option(min=1, help="Tokens to generate per request (max_tokens).")
    ] = 256,
    warmup: Annotated[int, typer.Option(min=0, help="Unmeasured requests first.")] = 2,
    rounds: Annotated[int, typer.Option(min=1, help="Times each level is measured.")] = 1,
    prompts: Annotated[Path | None, typer.Option(help="JSONL file of prompts.")] = None,
    workers: Annotated[int, typer.Option(min=0, help="Client processes (0: auto).")] = 0,
    goodput: Annotated[
        list[str] | None, typer.Option(help="SLO, e.g. ttft_ms:500 (repeatable).")
    ] = None,
    max_error_rate: Annotated[
        float, typer.Option(help="Flag a level above this error rate.")
    ] = 0.0,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json.")] = "table",
    record: Annotated[
        bool, typer.Option("--record", help="Store the measurement in the study database.")
    ] = False,
    study: Annotated[str, typer.Option(help="Study to record into.")] = "bench",
    storage: StorageOpt = DEFAULT_STORAGE,
    capacity: Annotated[
        list[str] | None,
        typer.Option(
            help="Find the largest concurrency within this limit, e.g. 'ttft_ms.p99 <= 1000' "
            "(repeatable; from the first --concurrency, doubling then bisecting)."
        ),
    ] = None,
    max_concurrency: Annotated[
        int, typer.Option(min=1, help="With --capacity: the largest level to try.")
    ] = 1024,
    max_levels: Annotated[
        int, typer.Option(min=1, help="With --capacity: levels to measure at most.")
    ] = 16,
    budget: Annotated[
        float | None, typer.Option(help="With --capacity: seconds to search at most.")
    ] = None,
) -> None:
    """Benchmark an already running server with the sweep's engine: no restart."""
    from tuner import bench_command
    from tuner.bench.summary import levels_document
    from tuner.views.bench import capacity_lines, levels_table, print_warnings

    check_format(fmt, TABLE_OR_JSON)
    limits = _capacity_limits(capacity or [])
    if record:
        from tuner.storage.driver import require_driver

        require_driver(storage)  # before measuring, not after
    options = bench_command.BenchOptions(
        url=url,
        model=model,
        api=_api(api),
        concurrency=_levels(concurrency),
        requests=requests,
        duration_s=duration,
        rate=rate,
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        warmup=warmup,
        rounds=rounds,
        prompts_file=prompts,
        workers=workers,
        goodput=tuple(goodput or ()),
        max_error_rate=max_error_rate,
    )
    found = None
    if limits:
        search = bench_command.CapacityOptions(limits, max_concurrency, max_levels, budget)
        used_model, found, runs = bench_command.run_capacity(
            options, search, console=err, show=fmt == "table"
        )
    else:
        used_model, runs = bench_command.run_bench(options, console=err, show=fmt == "table")
    summaries = [r.summary for r in runs]
    if record:
        launch = bench_command.record_bench(storage, study, url, used_model, runs)
        err.print(f"recorded as launch {launch} of study {study!r} in {safe_url(storage)}")
    if fmt == "json":
        extra = {} if found is None else {"capacity": found.to_dict()}
        out.print_json(json.dumps(levels_document(summaries, url=url, model=used_model, **extra)))
    else:
        shown = sorted(summaries, key=lambda s: s.concurrency) if found else summaries
        out.print(levels_table(shown, title=f"{used_model} at {url}"))
        print_warnings(out, summaries)
        if found is not None:
            out.print(capacity_lines(found))
    if found is not None and found.capacity is None:
        raise typer.Exit(exit_codes.NO_ANSWER)  # even the first level broke a limit


def _capacity_limits(texts: Sequence[str]) -> tuple[MetricLimit, ...]:
    try:
        return tuple(parse_limit(t, level="forbidden") for t in texts)
    except ValueError as exc:
        raise ConfigError(f"--capacity: {exc}") from None


def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ConfigError(f"--concurrency {text!r}: write levels as 1,8,64") from None
    if not levels or min(levels) < 1:
        raise ConfigError(f"--concurrency {text!r}: levels are positive integers")
    return levels


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def sim(ctx: typer.Context) -> None:
    """Run the simulated vLLM server by hand (flags: tuner sim --help)."""
    args = list(ctx.args)
    if {"-h", "--help"} & set(args):
        from tuner.cli.sim_help import print_sim_help

        # A console of its own: the terminal's width now (the shared one keeps the width
        # it was made with). argparse parses, Typer's style shows (cli/sim_help.py says why).
        print_sim_help(Console())
        raise typer.Exit(0)
    from tuner.sim.__main__ import main as sim_main

    raise typer.Exit(sim_main(args))


probe_app = typer.Typer(
    help="Cheap all-reduce probes, run before any model load (docs/probe.md). Each prints one "
    'JSON object: {"sizes": {"<bytes>": <microseconds per all-reduce>}, ...}.',
    no_args_is_help=True,
)
app.add_typer(probe_app, name="probe")


@probe_app.command("allreduce")
@handles_errors
def probe_allreduce(
    sizes: Annotated[str, typer.Option(help="Message sizes in bytes, e.g. 14336,114688 or 128K.")],
    repeats: Annotated[int, typer.Option(min=1, help="Timed batches per size (samples).")] = 5,
    iters: Annotated[int, typer.Option(min=1, help="All-reduces per timed batch.")] = 20,
    warmup: Annotated[int, typer.Option(min=0, help="Untimed all-reduces per size first.")] = 5,
    backend: Annotated[
        str, typer.Option(help="auto (nccl on GPUs, else gloo), nccl or gloo.")
    ] = "auto",
    world_size: Annotated[
        int | None, typer.Option(min=1, help="Ranks (default: every visible GPU; gloo: 2).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds before giving up.")] = 300.0,
) -> None:
    """Time torch.distributed all-reduces across the local devices (needs torch)."""
    from tuner.probe.allreduce import AllreduceOptions, parse_sizes, run_allreduce

    if backend not in ("auto", "nccl", "gloo"):
        raise ConfigError(f"--backend {backend!r}: use auto, nccl or gloo")
    options = AllreduceOptions(
        sizes=parse_sizes(sizes),
        repeats=repeats,
        iters=iters,
        warmup=warmup,
        backend=backend,  # type: ignore[arg-type]  # checked just above
        world_size=world_size,
        timeout_s=timeout,
    )
    typer.echo(json.dumps(run_allreduce(options)))


@probe_app.command("membw")
@handles_errors
def probe_membw(
    size: Annotated[str, typer.Option(help="Bytes copied per pass, e.g. 1G or 268435456.")] = "1G",
    repeats: Annotated[int, typer.Option(min=1, help="Timed batches (the best counts).")] = 5,
    iters: Annotated[int, typer.Option(min=1, help="Copies per timed batch.")] = 10,
) -> None:
    """Each GPU's memory bandwidth: a timed copy with torch, else NVML's theoretical figure."""
    from tuner.probe.allreduce import parse_sizes
    from tuner.probe.membw import MembwOptions, membw

    sizes = parse_sizes(size)
    if len(sizes) != 1:
        raise ConfigError(f"--size {size!r}: give one byte size, e.g. 1G")
    typer.echo(json.dumps(membw(MembwOptions(size_bytes=sizes[0], repeats=repeats, iters=iters))))


@probe_app.command(
    "nccl-tests", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
@handles_errors
def probe_nccl_tests(
    ctx: typer.Context,
    sizes: Annotated[
        str | None, typer.Option(help="Sizes to report, interpolated (default: those measured).")
    ] = None,
    repeats: Annotated[int, typer.Option(min=1, help="Runs of the command (samples).")] = 1,
    in_place: Annotated[bool, typer.Option(help="Report the in-place times.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds per run before giving up.")] = 600.0,
) -> None:
    """Run nccl-tests' all_reduce_perf (after --) and print its table as the probe's JSON."""
    import os

    from tuner.probe.allreduce import parse_sizes
    from tuner.probe.nccl_tests import run_nccl_tests

    result = run_nccl_tests(
        list(ctx.args),
        env=dict(os.environ),
        sizes=parse_sizes(sizes) if sizes else None,
        repeats=repeats,
        timeout_s=timeout,
        in_place=in_place,
    )
    typer.echo(json.dumps(result))


def _api(text: str) -> Literal["completions", "chat"]:
    if text == "completions":
        return "completions"
    if text == "chat":
        return "chat"
    raise ConfigError(f"--api must be completions or chat, not {text!r}")
