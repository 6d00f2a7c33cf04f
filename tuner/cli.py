"""The `tuner` command line: each command parses, calls one library function, renders.

No SQL and no loops over trials here; those live in tuner/study/, tuner/views/ and
friends. Every TunerError becomes ``Error: ...`` on stderr; the exit codes are listed in
tuner/exit_codes.py (and the README).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from tuner import exit_codes
from tuner.errors import ConfigError, NoAnswerError, Terminated, TunerError
from tuner.secrets import safe_url
from tuner.space.limits import MetricLimit, parse_limit
from tuner.storage import DEFAULT_STORAGE

app = typer.Typer(
    name="tuner",
    help=(
        "Find the best launch settings (NCCL variables, vLLM flags) for an LLM inference "
        "server, and tell a real gain from noise.\n\n"
        "Start with:  tuner run --space search_spaces/sim.yaml --trials 20"
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
out = Console()
err = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])

SpaceOpt = Annotated[
    Path, typer.Option("--space", "-s", help="Space file, or the name of a shipped one.")
]
StorageOpt = Annotated[
    str,
    typer.Option("--storage", help="SQLAlchemy URL of the study database.", envvar="TUNER_STORAGE"),
]
StudyOpt = Annotated[
    str | None, typer.Option("--study", help="Study name (default: from the space file).")
]
OptSpaceOpt = Annotated[
    Path | None, typer.Option("--space", "-s", help="Space file whose study to read.")
]
TABLE_OR_JSON = ("table", "json")


def handles_errors(func: F) -> F:
    """Print a TunerError as one `Error:` line and exit 2 (bad input) or 1.

    Ctrl-C exits 130; SIGTERM and SIGHUP (``Terminated``) 128 + the signal's number.
    """

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TunerError as exc:
            # The message is text, not markup: "[dashboard]" or "[1, 8]" must print as is.
            err.print(f"[bold red]Error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(_exit_code(exc)) from None
        except Terminated as stop:
            err.print(
                f"[yellow]Stopped by {stop.signal_name}.[/] Run the same command again to resume."
            )
            raise typer.Exit(exit_codes.for_signal(stop.signum)) from None
        except KeyboardInterrupt:
            err.print("[yellow]Interrupted.[/] Run the same command again to resume.")
            raise typer.Exit(exit_codes.INTERRUPTED) from None

    return wrapper  # type: ignore[return-value]


def _exit_code(exc: TunerError) -> int:
    if isinstance(exc, ConfigError):
        return exit_codes.CONFIG
    if isinstance(exc, NoAnswerError):
        return exit_codes.NO_ANSWER
    return exit_codes.ERROR


def _check_format(fmt: str, choices: Sequence[str], option: str = "--format") -> None:
    """Refuse an unknown --format before any work (a benchmark takes minutes)."""
    if fmt not in choices:
        listed = " or ".join([", ".join(choices[:-1]), choices[-1]])
        raise ConfigError(f"{option} must be {listed}, not {fmt!r}")


@app.command()
@handles_errors
def run(
    space: SpaceOpt,
    trials: Annotated[
        int,
        typer.Option(
            "--trials",
            "-n",
            min=1,
            help="Server launches of the study in all, every worker's together (a resumed "
            "study counts the ones done).",
        ),
    ] = 20,
    worker_trials: Annotated[
        int | None,
        typer.Option(
            "--worker-trials",
            min=1,
            help="At most this many launches by this worker (the study's --trials still holds).",
        ),
    ] = None,
    split_by_host: Annotated[
        bool,
        typer.Option(
            "--split-by-host",
            help="On hardware unlike the study's other workers: run the study NAME@FINGERPRINT "
            "of this host's kind instead of refusing.",
        ),
    ] = False,
    storage: StorageOpt = DEFAULT_STORAGE,
    study: StudyOpt = None,
    seed: Annotated[
        int | None, typer.Option(help="Seed of the sampler, for a repeatable search.")
    ] = None,
    runs_dir: Annotated[Path, typer.Option(help="Where server logs of each trial go.")] = Path(
        "tuner-runs"
    ),
) -> None:
    """Run (or resume) a sweep: launch the server per trial, benchmark, stop early on a plateau."""
    from tuner.views.console import run_with_console

    result = run_with_console(
        space,
        trials=trials,
        storage=storage,
        study=study,
        seed=seed,
        runs_dir=runs_dir,
        console=out,
        worker_trials=worker_trials,
        split_by_host=split_by_host,
    )
    out.print(f"\n[bold]Stopped:[/] {result.stop_reason} — {result.stop_detail}")
    code = exit_codes.for_stop_reason(result.stop_reason)
    if code == exit_codes.OK:
        out.print(
            "See the answer with: [bold]tuner best[/]" + _study_flags(storage, result.study_name)
        )
    else:
        out.print("See why with: [bold]tuner trials[/]" + _study_flags(storage, result.study_name))
    raise typer.Exit(code)


@app.command()
@handles_errors
def check(
    space: SpaceOpt,
    storage: StorageOpt = DEFAULT_STORAGE,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json.")] = "table",
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Then the cost plan: from the study's baseline in --storage, or from one "
            "launch of the defaults (not recorded).",
        ),
    ] = False,
) -> None:
    """Check a space before a sweep: command, flags, NCCL variables, ports, database, model."""
    from tuner.check import check_space
    from tuner.space.spec import load_space

    _check_format(fmt, TABLE_OR_JSON)
    loaded = load_space(space)
    report = check_space(loaded, storage=storage)
    if fmt == "json":
        found = report.to_dict()
        if plan and report.ok:
            from tuner.views.plan import check_plan

            found["plan"] = check_plan(loaded, storage, console=err).to_json()
        out.print_json(json.dumps(found))
    else:
        for line in report.lines():
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        if plan and report.ok:
            from tuner.views.plan import check_plan

            for line in check_plan(loaded, storage, console=out).lines():
                out.print(line, highlight=False, markup=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(exit_codes.CONFIG)


@app.command()
@handles_errors
def best(
    space: OptSpaceOpt = None,
    study: StudyOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", "-f", help="table, json, env, systemd, args, docker or vllm-config."
        ),
    ] = "table",
    which: Annotated[
        str, typer.Option(help="What to deploy: recommended (simplest as good) or best.")
    ] = "recommended",
    fingerprint: Annotated[
        str | None,
        typer.Option(
            "--fingerprint",
            help="Of a study run on several kinds of hardware: the kind to answer for "
            "(default: the one with the most launches).",
        ),
    ] = None,
) -> None:
    """The answer: best, recommended (simplest within noise of the best) and baseline.

    Exits 3 while the study has no answer yet (no completed trial).
    """
    from tuner.views.best import FORMATS, WHICH, best_report, print_best
    from tuner.views.study_access import resolve_study

    _check_format(fmt, FORMATS)
    _check_format(which, WHICH, option="--which")
    result = best_report(storage, resolve_study(storage, study, space), fingerprint=fingerprint)
    print_best(result, fmt, out, notes=err, which=which)


@app.command()
@handles_errors
def report(
    space: OptSpaceOpt = None,
    study: StudyOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
    out_file: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    artifacts: Annotated[
        Path | None,
        typer.Option(
            help="optuna artifact folder for optuna-dashboard (default: beside the database)."
        ),
    ] = None,
    compare: Annotated[
        list[str] | None,
        typer.Option(help="Another study of the storage to show beside it (repeatable)."),
    ] = None,
) -> None:
    """One self-contained HTML report of the study (opens offline), also for optuna-dashboard.

    Exits 3 while the study has no completed trial.
    """
    from tuner.views.report import publish, write_report
    from tuner.views.study_access import resolve_study

    name = resolve_study(storage, study, space)
    written = write_report(storage, name, out_file, compare or ())
    publish(storage, name, written, artifacts)
    out.print(f"Report written to {written}; `tuner dashboard` links to it too.", highlight=False)


@app.command("trials")
@handles_errors
def trials_cmd(
    space: OptSpaceOpt = None,
    study: StudyOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
) -> None:
    """One line per trial: number, status, changed params, objective, reason for failures."""
    from tuner.views.study_access import resolve_study
    from tuner.views.trials import print_trials

    print_trials(storage, resolve_study(storage, study, space), out)


@app.command()
@handles_errors
def show(
    trial: Annotated[int, typer.Argument(help="Trial number.")],
    space: OptSpaceOpt = None,
    study: StudyOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
) -> None:
    """Everything about one trial: settings, levels, telemetry, log tail; and the inventory."""
    from tuner.views.study_access import resolve_study
    from tuner.views.trials import print_trial

    print_trial(storage, resolve_study(storage, study, space), trial, out)


@app.command()
@handles_errors
def compare(
    a: Annotated[int, typer.Argument(help="Trial number A.")],
    b: Annotated[int, typer.Argument(help="Trial number B.")],
    space: OptSpaceOpt = None,
    study: StudyOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
) -> None:
    """Is trial A better than trial B? The difference with its interval, and the verdict."""
    from tuner.views.compare import print_compare
    from tuner.views.study_access import resolve_study

    print_compare(storage, resolve_study(storage, study, space), a, b, out)


@app.command("compare-studies")
@handles_errors
def compare_studies_cmd(
    studies: Annotated[list[str], typer.Argument(help="Study names, in the order to show.")],
    storage: StorageOpt = DEFAULT_STORAGE,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json.")] = "table",
) -> None:
    """Studies side by side: best single-stream and high-concurrency throughput, TTFT, energy."""
    from tuner.views.compare_studies import compare_studies, print_comparison

    _check_format(fmt, TABLE_OR_JSON)
    print_comparison(compare_studies(storage, studies), fmt, out)


@app.command()
@handles_errors
def cleanup(
    study: StudyOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
) -> None:
    """Stop servers a dead tuner left on this host, fail its trials and queue them again.

    Servers of dead workers on other hosts are named, not touched: run cleanup there.
    """
    from tuner.study.recovery import cleanup as run_cleanup
    from tuner.views.console import MessageObserver

    observer = MessageObserver(out)
    seen = run_cleanup(storage, study, observer)
    out.print(
        f"Checked {seen} stud{'y' if seen == 1 else 'ies'}; {observer.count} left-overs handled."
    )


@app.command()
@handles_errors
def dashboard(
    storage: StorageOpt = DEFAULT_STORAGE,
    port: Annotated[int, typer.Option(help="Port of the dashboard on 127.0.0.1.")] = 8080,
    artifacts: Annotated[
        Path | None,
        typer.Option(help="optuna artifact folder (default: beside the database)."),
    ] = None,
) -> None:
    """Open the study in optuna-dashboard (pip install 'tuner\\[dashboard]'), with the
    HTML report of `tuner report` among its artifacts."""
    from tuner.views.dashboard import run_dashboard

    raise typer.Exit(run_dashboard(storage, port, artifacts))


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
    prompt_tokens: Annotated[int, typer.Option(min=1)] = 256,
    max_tokens: Annotated[int, typer.Option(min=1)] = 256,
    warmup: Annotated[int, typer.Option(min=0, help="Unmeasured requests first.")] = 2,
    rounds: Annotated[int, typer.Option(min=1)] = 1,
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
        bool, typer.Option(help="Store the measurement in the study database.")
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

    _check_format(fmt, TABLE_OR_JSON)
    limits = _capacity_limits(capacity or [])
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
    from tuner.sim.__main__ import main as sim_main

    raise typer.Exit(sim_main(list(ctx.args)))


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


def _study_flags(storage: str, study: str) -> str:
    flags = f" --study {study}"
    if storage != DEFAULT_STORAGE:
        flags += f" --storage {safe_url(storage)}"  # a password stays where the user put it
    return flags


def _api(text: str) -> Literal["completions", "chat"]:
    if text == "completions":
        return "completions"
    if text == "chat":
        return "chat"
    raise ConfigError(f"--api must be completions or chat, not {text!r}")


def main() -> None:
    """Console-script entry point."""
    app(prog_name="tuner")


if __name__ == "__main__":  # pragma: no cover
    main()
