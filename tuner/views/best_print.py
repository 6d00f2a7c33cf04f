"""`tuner best`'s rendering: the answer as a table, JSON, or deployment text.

The data is tuner/views/best.py's ``BestReport``; this module only prints it.
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tuner.errors import ConfigError, NoAnswerError
from tuner.views.best import BestReport, ConfigEntry, no_answer_sentence
from tuner.views.best_headline import deploy_notice, headline
from tuner.views.deploy import (
    DEPLOY_FORMATS,
    LINE_FORMATS,
    WHICH,
    deployment,
    deployment_text,
    line_notes,
)
from tuner.views.nccl_tuner import require_table
from tuner.views.probe_summary import ProbeSummary

NCCL_TUNER = "nccl-tuner"
"""The per-size table of NCCL's example tuner plugin, from the probes (views/nccl_tuner.py)."""
FORMATS = ("table", "json", *DEPLOY_FORMATS, NCCL_TUNER)
"""`tuner best --format`: the table, JSON, one of the deployment formats (views/deploy.py),
or the NCCL tuner plugin's table."""


def print_best(
    report: BestReport,
    fmt: str,
    console: Console,
    notes: Console | None = None,
    which: str = "recommended",
) -> None:
    """Render ``report`` as one of FORMATS: a table, JSON, or a deployment of ``which``.

    ``which`` (one of WHICH) picks the configuration a deployment format prints: the
    recommended one or the best. ``notes`` (stderr) gets what must not be pasted with a
    one-line format (args, docker): which of its values are secrets to fill in. A study
    without an answer yet raises NoAnswerError (exit 3), in JSON after the document: its
    null entries and trial counts are part of the contract.
    """
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    if which not in WHICH:
        raise ConfigError(f"--which {which!r}: use one of {', '.join(WHICH)}")
    if fmt == NCCL_TUNER:  # from the probes alone: no launch needs to have finished
        table = require_table(report.nccl_tuner, report.study)
        console.print(table.csv_text(), end="", highlight=False, markup=False, soft_wrap=True)
        if notes is not None:
            notes.print(
                "note: save this as the CSV file, build the plugin (docs/deploy.md) and set: "
                + " ".join(table.env_lines()),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        return
    rec = report.recommended
    chosen = report.best if which == "best" else rec
    if fmt == "json":
        document = report.to_json()
        if chosen is not None:
            document["deploy"] = deployment(chosen, which).to_json()
        console.print_json(json.dumps(document, default=str))
    if report.best is None or rec is None or chosen is None:
        raise NoAnswerError(no_answer_sentence(report))
    if fmt == "json":
        return
    if fmt in DEPLOY_FORMATS:
        # not a confirmed change: said in a comment, or on stderr by the one-line formats
        notice = deploy_notice(report, which)
        text = deployment_text(chosen, fmt, which, notice=notice)
        console.print(text, highlight=False, markup=False, soft_wrap=True)
        if fmt in LINE_FORMATS and notes is not None:
            for line in notice:
                notes.print(line, highlight=False, markup=False, soft_wrap=True)
            for note in line_notes(chosen, fmt):
                notes.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
        return
    if report.pareto is not None:
        console.print(report.pareto.table(report.study, report.confidence))
    else:
        console.print(_best_table(report))
    if report.noise is not None:
        console.print(f"Noise between launches: {noise_text(report)}", highlight=False)
    if rec is not None:
        # one sentence: confirmed, no gain (with what could still hide) or not settled
        head, _, sentence = headline(report).partition(" ")
        console.print(Text.assemble((head, "bold"), " ", sentence), highlight=False)
        if report.final is not None:
            for line in report.final.lines():
                console.print(line, highlight=False, markup=False)
        if not report.keep_defaults:
            console.print(
                "Deploy with:  tuner best --format env | systemd | args | docker | vllm-config"
            )
    if report.load is not None:  # each restart's cost, why, and what would cut it
        sentence = report.load.sentence()
        console.print(f"Load: {sentence[:1].upper()}{sentence[1:]}.", highlight=False, markup=False)
    for line in report.screening.lines() if report.screening is not None else ():
        console.print(line, highlight=False, markup=False)
    if report.probe is not None:
        for line in probe_lines(report.probe, report.concurrency):
            console.print(line, highlight=False, markup=False)
    if report.ceiling is not None:
        console.print(f"Ceiling: {report.ceiling.sentence}.", highlight=False, markup=False)
    for line in report.capacity.lines() if report.capacity is not None else ():
        console.print(line, highlight=False, markup=False)
    if report.limits is not None:
        for line in report.limits.lines(report.metric):
            console.print(line, highlight=False, markup=False)
    # every line wrapped at the console's width alike (none left to the terminal's cut)
    for line in report.topology.lines() if report.topology is not None else ():
        console.print(line, highlight=False, markup=False)
    if report.hardware is not None:
        for line in report.hardware.lines():
            console.print(line, highlight=False, markup=False)
    t = report.trials
    console.print(
        f"Trials: {t.complete} complete, {t.failed} failed, {t.pruned} pruned. "
        f"Stopped: {report.stop_reason or 'not yet'}"
        + (f" — {report.stop_detail}" if report.stop_detail else "")
    )
    for line in report.failures.lines() if report.failures is not None else ():
        console.print(line, highlight=False, markup=False)


def noise_text(report: BestReport) -> str:
    """The between-launch noise: the search's (shrunk towards a prior) and, where the
    answer rests on a final comparison, the one that comparison used."""
    assert report.noise is not None
    text = f"±{report.noise.rel_sd:.2%} (1 s.d.)"
    final = report.final
    if final is not None:
        text += (
            f" in the search; ±{final.noise_rel_sd:.2%} in the final comparison (over every "
            "launch, the final ones included: the larger of the measured and the "
            "prior-shrunk figure, never less than the launches show)"
        )
    return text


def probe_lines(probe: ProbeSummary, concurrency: int) -> list[str]:
    """What the probe says, in sentences: the floor, the share, the verdict."""
    stream = "single-stream" if concurrency == 1 else f"per stream at concurrency {concurrency}"
    fastest = " ".join(f"{k}={v}" for k, v in probe.best_env.items()) or "the defaults"
    lines = [
        f"Probe: {probe.allreduces_per_token} all-reduces of {probe.size} bytes per token; "
        f"{probe.default_us:.4g} us each with the defaults, {probe.best_us:.4g} us at best "
        f"({fastest})."
    ]
    floor = f"Communication floor: at most {probe.floor_tokens_per_s:.4g} tok/s {stream}"
    if probe.measured_tokens_per_s is not None:
        floor += f"; measured {probe.measured_tokens_per_s:.4g} tok/s"
    if probe.comm_share is not None:
        floor += f", {probe.comm_share:.0%} of decode time in communication"
    lines.append(floor + ".")
    if probe.disabled:
        lines.append(f"Probe off: {probe.disabled}.")
    elif probe.finding:
        lines.append(f"Probe finding: {probe.finding}.")
    if probe.pruned:
        lines.append(f"Not launched because of the probe: {probe.pruned} trial(s).")
    return lines


def _value_text(entry: ConfigEntry) -> str:
    """The entry's value; per GPU, with the whole server's figure beside it."""
    if entry.gpus is None or entry.total is None:
        return f"{entry.value:.4g}"
    return f"{entry.value:.4g} per GPU ({entry.total:.4g} on {entry.gpus} GPUs)"


def merged_rows(report: BestReport) -> list[tuple[str, ConfigEntry]]:
    """best, recommended and baseline, one row per configuration: 'best, recommended' when
    they are the same, 'best, recommended, baseline' when nothing beat the defaults."""
    rows: list[tuple[list[str], ConfigEntry]] = []
    for label, entry in (
        ("best", report.best),
        ("recommended", report.recommended),
        ("baseline", report.baseline),
    ):
        if entry is None:
            continue
        same = next((row for row in rows if row[1].config == entry.config), None)
        if same is not None:
            same[0].append(label)
        else:
            rows.append(([label], entry))
    return [(", ".join(labels), entry) for labels, entry in rows]


def _best_table(report: BestReport) -> Table:
    at = "" if report.metric == "capacity" else f" at concurrency {report.concurrency}"
    per_gpu = " per GPU" if report.best is not None and report.best.gpus is not None else ""
    title = f"{report.study}: {report.metric}{per_gpu}{at} ({report.direction})"
    table = Table(title=title)
    for col in ("", "trial", "value", f"{report.confidence:.0%} interval", "launches", "settings"):
        table.add_column(col)
    for label, entry in merged_rows(report):
        table.add_row(
            label,
            str(entry.trial),
            _value_text(entry),
            "[{:.4g}, {:.4g}]".format(*entry.interval) if entry.interval else "-",
            str(entry.launches),
            " ".join(f"{k}={v}" for k, v in entry.changed.items()) or "(defaults)",
        )
    return table
