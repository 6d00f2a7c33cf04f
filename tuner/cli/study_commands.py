"""The commands of a study: run, check, best, report, trials, show, compare, compare-studies,
cleanup and dashboard. Each parses its options, calls one library function, renders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tuner import exit_codes
from tuner.cli.common import (
    TABLE_OR_JSON,
    OptSpaceOpt,
    ReadStudyOpt,
    SpaceOpt,
    StorageOpt,
    StudyOpt,
    app,
    check_format,
    err,
    handles_errors,
    out,
)
from tuner.errors import ConfigError
from tuner.secrets import safe_url
from tuner.storage import DEFAULT_STORAGE


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
            "study counts the ones done); with a screening: section, full loads (screening "
            "launches have screening.max_launches).",
        ),
    ] = 20,
    hours: Annotated[
        float | None,
        typer.Option(
            "--hours",
            # at least 0.01, checked below: typer's "[x>=0.01]" would narrow every help line
            help="Stop the search before its measured launch costs would pass this many hours "
            "(the final comparison's full launches kept within them).",
        ),
    ] = None,
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
    from tuner.study.run.request import RunRequest
    from tuner.views.console import run_with_console

    if hours is not None and not hours >= 0.01:
        raise ConfigError(f"--hours {hours:g}: give at least 0.01 (36 seconds)")

    request = RunRequest(
        storage=storage,
        trials=trials,
        seed=seed,
        study=study,
        worker_trials=worker_trials,
        split_by_host=split_by_host,
        hours=hours,
        runs_dir=runs_dir,
    )
    result = run_with_console(space, request, out)
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

    check_format(fmt, TABLE_OR_JSON)
    loaded = load_space(space)
    report = check_space(loaded, storage=storage)
    if fmt == "json":
        found = report.to_dict()
        if plan and report.ok:
            from tuner.views.plan import check_plan
            from tuner.views.plan_text import plan_json

            found["plan"] = plan_json(check_plan(loaded, storage, console=err))
        out.print_json(json.dumps(found))
    else:
        for line in report.lines():
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        if plan and report.ok:
            from tuner.views.plan import check_plan
            from tuner.views.plan_text import plan_lines

            for line in plan_lines(check_plan(loaded, storage, console=out)):
                out.print(line, highlight=False, markup=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(exit_codes.CONFIG)


@app.command()
@handles_errors
def best(
    space: OptSpaceOpt = None,
    study: ReadStudyOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="table, json, env, systemd, args, docker, vllm-config or nccl-tuner.",
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

    Exits 3 while the study has no answer yet (no completed trial), 5 while it is not
    settled (deploy the defaults until then; 0: confirmed, or keep the defaults).
    """
    from tuner.stats import NOT_SETTLED
    from tuner.views.best import best_report
    from tuner.views.best_print import FORMATS, NCCL_TUNER, print_best
    from tuner.views.deploy import WHICH
    from tuner.views.study_access import resolve_study

    check_format(fmt, FORMATS)
    check_format(which, WHICH, option="--which")
    result = best_report(storage, resolve_study(storage, study, space), fingerprint=fingerprint)
    print_best(result, fmt, out, notes=err, which=which)
    if fmt != NCCL_TUNER and result.verdict == NOT_SETTLED:
        raise typer.Exit(exit_codes.NOT_SETTLED)


@app.command()
@handles_errors
def report(
    space: OptSpaceOpt = None,
    study: ReadStudyOpt = None,
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
    from tuner.errors import UnusableDatabaseError
    from tuner.views.report import publish, write_report
    from tuner.views.study_access import resolve_study

    name = resolve_study(storage, study, space)
    written = write_report(storage, name, out_file, compare or ())
    try:
        publish(storage, name, written, artifacts)
    except UnusableDatabaseError as exc:
        if exc.kind != "read_only":
            raise
        # The report is written whole: only optuna-dashboard's link to it is missing.
        out.print(f"Report written to {written}.", highlight=False)
        err.print(f"Note: not linked in `tuner dashboard`: {exc}", highlight=False, soft_wrap=True)
        return
    out.print(f"Report written to {written}; `tuner dashboard` links to it too.", highlight=False)


@app.command("trials")
@handles_errors
def trials_cmd(
    space: OptSpaceOpt = None,
    study: ReadStudyOpt = None,
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
    study: ReadStudyOpt = None,
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
    study: ReadStudyOpt = None,
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

    check_format(fmt, TABLE_OR_JSON)
    print_comparison(compare_studies(storage, studies), fmt, out)


@app.command()
@handles_errors
def cleanup(
    study: Annotated[
        str | None, typer.Option("--study", help="Study name (default: every study stored).")
    ] = None,
    storage: StorageOpt = DEFAULT_STORAGE,
) -> None:
    """Stop servers a dead tuner left on this host, fail its trials and queue them again.

    Servers of dead workers on other hosts are named, not touched: run cleanup there.
    """
    from tuner.storage.driver import require_driver
    from tuner.storage.health import require_file
    from tuner.study.run.recovery import cleanup as run_cleanup
    from tuner.views.console import MessageObserver

    require_driver(storage)  # optuna lists the studies first, and would fail with a traceback
    require_file(storage)  # a missing SQLite file: said, not created empty
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
    """Open the study in optuna-dashboard, the report of `tuner report` among its artifacts.

    Needs optuna-dashboard: pip install 'tuner\\[dashboard]'.
    """
    from tuner.views.dashboard import run_dashboard

    raise typer.Exit(run_dashboard(storage, port, artifacts))


def _study_flags(storage: str, study: str) -> str:
    flags = f" --study {study}"
    if storage != DEFAULT_STORAGE:
        flags += f" --storage {safe_url(storage)}"  # a password stays where the user put it
    return flags
