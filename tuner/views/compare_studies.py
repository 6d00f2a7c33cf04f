"""`tuner compare-studies A B ...`: several studies side by side, one row each.

Per study: the best trusted configuration's output throughput at concurrency 1
(single-stream) and at the highest level the study measured, each with its confidence
interval; TTFT p99 and GPU energy per output token of that configuration at that level;
and the median time from start to healthy over the study's launches.

"Trusted" and the interval are those of `tuner best` (study.analysis): a configuration
counts once it is the baseline or was confirmed (launched 1 + stop.confirmations
times); its launches are pooled with the study's between-launch noise, measured on the
same level's throughput (stats.between_launch_variance, stats.config_estimate). The
figures come from the stored levels (tuner_levels), so they exist for any level the
benchmark ran, whatever the study's objective. ``compare_studies`` returns typed data
(the JSON of `--format json` and what an HTML report renders); ``print_comparison``
renders it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from tuner import stats
from tuner.errors import ConfigError, StoreError
from tuner.secrets import safe_url, sqlite_file
from tuner.space.settings import is_default
from tuner.storage import LaunchRow, LaunchStatus
from tuner.storage.tables import LevelRow
from tuner.study.attrs import LABEL
from tuner.views.study_access import StoredStudy, open_study

FORMATS = ("table", "json")


@dataclass(frozen=True)
class LevelBest:
    """The best trusted configuration at one concurrency level, and its figures there."""

    concurrency: int
    output_throughput: float
    """Its pooled mean, tok/s."""
    stderr: float
    interval: tuple[float, float] | None
    """The confidence interval of the mean; None while it is unbounded."""
    trial: int | None
    """The configuration's first trial."""
    launches: int
    ttft_p99_ms: float | None
    """Mean over its rounds at this level; None when no request completed."""
    j_per_token: float | None
    """GPU energy per output token, mean over its rounds; None without GPU telemetry."""

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["interval"] = list(self.interval) if self.interval is not None else None
        return out


@dataclass(frozen=True)
class StudyLine:
    """One study's row."""

    study: str
    label: str
    confidence: float
    levels: tuple[int, ...]
    """Every concurrency level the study measured."""
    single_stream: LevelBest | None
    """At concurrency 1; None when the study never measured it."""
    high_concurrency: LevelBest | None
    """At the highest level measured (concurrency 1 too when that is the only one)."""
    seconds_to_healthy: float | None
    """Median over the launches that became healthy."""
    launches: int
    """Completed launches."""

    def to_json(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "label": self.label,
            "confidence": self.confidence,
            "levels": list(self.levels),
            "single_stream": _json_or_none(self.single_stream),
            "high_concurrency": _json_or_none(self.high_concurrency),
            "seconds_to_healthy": self.seconds_to_healthy,
            "launches": self.launches,
        }


@dataclass(frozen=True)
class StudiesComparison:
    """Several studies side by side (`tuner compare-studies`)."""

    studies: tuple[StudyLine, ...]

    def to_json(self) -> dict[str, Any]:
        return {"metric": "output_throughput", "studies": [s.to_json() for s in self.studies]}


def _json_or_none(best: LevelBest | None) -> dict[str, Any] | None:
    return best.to_json() if best is not None else None


def compare_studies(storage: str, studies: Sequence[str]) -> StudiesComparison:
    """One StudyLine per study of ``storage``, in the order given."""
    if not studies:
        raise ConfigError("name at least one study: tuner compare-studies A B ...")
    database = sqlite_file(storage)
    if database is not None and not database.exists():  # opening would create it empty
        raise StoreError(
            f"{safe_url(storage)}: no such database; run `tuner run` here first or pass "
            "--storage URL"
        )
    return StudiesComparison(tuple(study_line(open_study(storage, s)) for s in studies))


def study_line(opened: StoredStudy) -> StudyLine:
    """The row of one opened study."""
    name = opened.space.study_name
    spec = opened.space.spec
    every = opened.store.launches(name)
    complete = [r for r in every if r.status == LaunchStatus.COMPLETE]
    by_launch: dict[int, list[LevelRow]] = defaultdict(list)
    for level in opened.store.levels_of([r.id for r in complete]):
        by_launch[level.launch_id].append(level)
    levels = tuple(sorted({lv.concurrency for rows in by_launch.values() for lv in rows}))
    confidence = spec.stop.confidence

    def best_at(concurrency: int) -> LevelBest | None:
        return level_best(
            complete, by_launch, concurrency, confidence, confirmations=spec.stop.confirmations
        )

    healthy = [r.seconds_to_healthy for r in every if r.seconds_to_healthy is not None]
    label = opened.optuna_study.user_attrs.get(LABEL)
    return StudyLine(
        study=name,
        label=str(label) if label else name,
        confidence=confidence,
        levels=levels,
        single_stream=best_at(1) if 1 in levels else None,
        high_concurrency=best_at(levels[-1]) if levels else None,
        seconds_to_healthy=statistics.median(healthy) if healthy else None,
        launches=len(complete),
    )


def level_best(
    launches: Iterable[LaunchRow],
    levels: dict[int, list[LevelRow]],
    concurrency: int,
    confidence: float,
    *,
    confirmations: int,
) -> LevelBest | None:
    """The trusted configuration with the highest mean throughput at ``concurrency``."""
    groups: dict[str, list[tuple[LaunchRow, list[LevelRow]]]] = defaultdict(list)
    for launch in launches:
        rows = [lv for lv in levels.get(launch.id, []) if lv.concurrency == concurrency]
        if _throughputs(rows):
            groups[launch.config_hash].append((launch, rows))
    estimates = {
        key: tuple(stats.launch_estimate(_throughputs(rows)) for _, rows in group)
        for key, group in groups.items()
    }
    noise = stats.between_launch_variance(estimates.values()) or stats.NoiseEstimate.prior()
    trusted = [
        key
        for key, group in groups.items()
        if len(group) >= 1 + confirmations or _is_baseline(group[0][0])
    ]
    if not trusted:
        return None
    pooled = {key: stats.config_estimate(estimates[key], noise) for key in trusted}
    key = max(trusted, key=lambda k: pooled[k].mean)
    estimate, group = pooled[key], groups[key]
    rows = [lv for _, level_rows in group for lv in level_rows]
    low, high = estimate.interval(confidence)
    trials = [launch.trial_number for launch, _ in group if launch.trial_number is not None]
    return LevelBest(
        concurrency=concurrency,
        output_throughput=estimate.mean,
        stderr=estimate.se,
        interval=(low, high) if math.isfinite(low) and math.isfinite(high) else None,
        trial=min(trials) if trials else None,
        launches=len(group),
        ttft_p99_ms=_mean(_ttft_p99(lv) for lv in rows),
        j_per_token=_mean(_j_per_token(lv) for lv in rows),
    )


def _is_baseline(launch: LaunchRow) -> bool:
    return all(is_default(v) for v in launch.params.values())


def _throughputs(rows: Iterable[LevelRow]) -> list[float]:
    return [
        float(lv.output_throughput)
        for lv in rows
        if lv.output_throughput is not None and math.isfinite(lv.output_throughput)
    ]


def _ttft_p99(level: LevelRow) -> float | None:
    value = (level.summary.get("ttft_ms") or {}).get("p99")
    return float(value) if isinstance(value, (int, float)) else None


def _j_per_token(level: LevelRow) -> float | None:
    value = (level.gpu_summary or {}).get("j_per_token")
    return float(value) if isinstance(value, (int, float)) else None


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.fmean(known) if known else None


def print_comparison(comparison: StudiesComparison, fmt: str, console: Console) -> None:
    """Render the comparison as a table or as JSON."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    if fmt == "json":
        console.print_json(json.dumps(comparison.to_json()))
        return
    console.print(comparison_table(comparison))


def comparison_table(comparison: StudiesComparison) -> Table:
    """The rich table: one row per study, throughput with its interval and trial."""
    confidences = {s.confidence for s in comparison.studies}
    shown = f"{confidences.pop():.0%} interval" if len(confidences) == 1 else "interval"
    table = Table(title=f"output throughput (tok/s) of each study's best: mean [{shown}]")
    for column in (
        "study",
        "single-stream",
        "high concurrency",
        "TTFT p99 (ms)",
        "J/token",
        "to healthy (s)",
        "launches",
    ):
        table.add_column(column, justify="left" if column == "study" else "right")
    for line in comparison.studies:
        high = line.high_concurrency
        table.add_row(
            line.label,
            _throughput_cell(line.single_stream),
            _throughput_cell(high),
            _number(high.ttft_p99_ms if high else None, ".4g"),
            _number(high.j_per_token if high else None, ".3g"),
            _number(line.seconds_to_healthy, ".3g"),
            str(line.launches),
        )
    return table


def _throughput_cell(best: LevelBest | None) -> str:
    if best is None:
        return "-"
    interval = "[{:.4g}, {:.4g}]".format(*best.interval) if best.interval else "[unbounded]"
    return f"{best.output_throughput:.4g} {interval}\nc={best.concurrency}, trial {best.trial}"


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)
