"""Answers from a stored study: `tuner best`, `tuner trials`, `tuner show`, `tuner compare`.

Each ``*_report`` function returns plain data (JSON-ready dicts) built from the
store and the statistics; the ``print_*`` functions render them with rich, or as
JSON / env / systemd / args for deployment.
"""

from __future__ import annotations

import json
import math
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState
from rich.console import Console
from rich.table import Table

from tuner.study import analysis
from tuner.space.spec import Space, load_space, parse_space
from tuner.errors import ConfigError, StoreError
from tuner.space.settings import settings_from_params
from tuner.storage import Store

FORMATS = ("table", "json", "env", "systemd", "args")


def resolve_study(storage: str, study: str | None, space: Path | None) -> str:
    """The study the user means: --study, else the space file's, else the only one stored."""
    if study:
        return study
    if space is not None:
        return load_space(space).study_name
    names = [s.study_name for s in _all_studies(storage)]
    if len(names) == 1:
        return names[0]
    if not names:
        raise StoreError(f"{storage}: no study yet; run `tuner run --space FILE` first")
    raise ConfigError(f"{storage} holds several studies ({', '.join(names)}): pass --study NAME")


def _all_studies(storage: str) -> list[optuna.study.StudySummary]:
    if storage.startswith("sqlite:///") and not Path(storage.removeprefix("sqlite:///")).exists():
        raise StoreError(
            f"{storage}: no such database; run `tuner run` here first or pass --storage URL"
        )
    try:
        return optuna.get_all_study_summaries(storage=storage, include_best_trial=False)
    except Exception as exc:  # optuna raises several storage-specific errors
        raise StoreError(f"cannot read studies from {storage}: {exc}") from exc


def stored_space(store: Store, study: str) -> Space:
    """The space the study ran with, as stored (so answers survive edits of the file)."""
    row = store.study(study)
    if row is None or not row.space_text:
        raise StoreError(f"{store.url}: no study named {study!r} was run by tuner here")
    import yaml

    return parse_space(
        yaml.safe_load(row.space_text), Path(row.space_path or f"{study}.yaml")
    ).model_copy(update={"study_name": study})


def _open(storage: str, study: str) -> tuple[Store, Space, optuna.Study]:
    store = Store(storage)
    space = stored_space(store, study)
    try:
        optuna_study = optuna.load_study(study_name=study, storage=storage)
    except KeyError as exc:
        raise StoreError(f"{storage}: no optuna study named {study!r}") from exc
    return store, space, optuna_study


# --- tuner best ----------------------------------------------------------------------------


def best_report(storage: str, study: str) -> dict[str, Any]:
    """The JSON contract of `tuner best --format json` (see docs/architecture.md)."""
    store, space, optuna_study = _open(storage, study)
    result = analysis.analyze(store, space)
    states = [t.state for t in optuna_study.get_trials(deepcopy=False)]
    row = store.study(study)
    rec = result.recommendation()
    best = result.configs.get(rec.best) if rec else None
    recommended = result.configs.get(rec.recommended) if rec else None
    baseline = result.baseline
    report: dict[str, Any] = {
        "study": study,
        "metric": space.spec.objective.metric,
        "direction": space.spec.direction,
        "concurrency": space.spec.objective_concurrency,
        "confidence": space.spec.stop.confidence,
        "best": _config_entry(space, best),
        "recommended": _config_entry(space, recommended),
        "baseline": _config_entry(space, baseline),
        "noise": result.noise_dict() or None,
        "stop_reason": row.stop_reason if row else None,
        "stop_detail": row.stop_detail if row else None,
        "trials": {
            "complete": states.count(TrialState.COMPLETE),
            "failed": states.count(TrialState.FAIL),
            "pruned": states.count(TrialState.PRUNED),
            "running": states.count(TrialState.RUNNING),
        },
    }
    if report["recommended"] is not None and rec is not None:
        report["recommended"]["reason"] = rec.reason
        report["keep_defaults"] = baseline is not None and rec.recommended == baseline.config_hash
    if recommended is not None and baseline is not None and recommended is not baseline:
        cmp = result.compare(recommended, baseline)
        report["gain_vs_baseline"] = {
            "rel_diff": cmp.rel_diff,
            "ci_low": cmp.ci_low,
            "ci_high": cmp.ci_high,
            "verdict": cmp.verdict,
        }
    return report


def _config_entry(space: Space, config: analysis.ConfigResult | None) -> dict[str, Any] | None:
    if config is None:
        return None
    settings = settings_from_params(space.spec, config.params)
    return {
        "trial": config.trials[0] if config.trials else None,
        "trials": list(config.trials),
        "config": config.config_hash,
        "params": dict(settings.params),
        "env": dict(settings.env),
        "args": list(settings.args),
        "value": config.estimate.mean,
        "stderr": config.estimate.se,
        "interval": _interval(config, space.spec.stop.confidence),
        "launches": len(config.launches),
    }


def _interval(config: analysis.ConfigResult, confidence: float) -> list[float] | None:
    """The confidence interval of the configuration's mean; None while it is unbounded."""
    low, high = config.estimate.interval(confidence)
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return [low, high]


def print_best(report: dict[str, Any], fmt: str, console: Console) -> None:
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    rec = report.get("recommended")
    if fmt == "json":
        console.print_json(json.dumps(report, default=str))
        return
    if fmt in ("env", "systemd", "args"):
        if rec is None:
            raise StoreError(f"study {report['study']!r} has no completed trial yet")
        console.print(deployment_text(rec, fmt), highlight=False, markup=False, soft_wrap=True)
        return
    table = Table(
        title=f"{report['study']}: {report['metric']} at concurrency "
        f"{report['concurrency']} ({report['direction']})"
    )
    confidence = f"{report.get('confidence', 0.95):.0%} interval"
    for col in ("", "trial", "value", confidence, "launches", "settings"):
        table.add_column(col)
    for label in ("best", "recommended", "baseline"):
        entry = report.get(label)
        if entry is None:
            continue
        changed = {k: v for k, v in entry["params"].items() if v != "default"}
        table.add_row(
            label,
            str(entry["trial"]),
            f"{entry['value']:.4g}",
            "[{:.4g}, {:.4g}]".format(*entry["interval"]) if entry["interval"] else "-",
            str(entry["launches"]),
            " ".join(f"{k}={v}" for k, v in changed.items()) or "(defaults)",
        )
    console.print(table)
    if report.get("noise"):
        console.print(f"Noise between launches: ±{report['noise'].get('rel_sd', 0):.2%} (1 s.d.)")
    if rec is not None:
        console.print(f"[bold]Recommendation:[/] {rec['reason']}", highlight=False)
        if not report.get("keep_defaults"):
            console.print("Deploy with:  tuner best --format env | systemd | args")
    t = report["trials"]
    console.print(
        f"Trials: {t['complete']} complete, {t['failed']} failed, {t['pruned']} pruned. "
        f"Stopped: {report.get('stop_reason') or 'not yet'}"
        + (f" — {report['stop_detail']}" if report.get("stop_detail") else "")
    )


def deployment_text(entry: dict[str, Any], fmt: str) -> str:
    """The recommended settings in a form to paste: a .env file, a systemd drop-in, or args."""
    env = entry["env"]
    if fmt == "env":
        lines = [f"# tuner: trial {entry['trial']}"] + [f"{k}={v}" for k, v in env.items()]
        return "\n".join(lines)
    if fmt == "systemd":
        lines = ["[Service]"] + [f'Environment="{k}={v}"' for k, v in env.items()]
        if entry["args"]:
            lines.append(f"# append to ExecStart: {shlex.join(entry['args'])}")
        return "\n".join(lines)
    return shlex.join(entry["args"])


# --- tuner trials --------------------------------------------------------------------------


def trials_rows(storage: str, study: str) -> list[dict[str, Any]]:
    """One dict per optuna trial with its launch facts."""
    from tuner.study.attrs import PARAMS as PARAMS_ATTR
    from tuner.study.attrs import REASON as REASON_ATTR
    from tuner.study.attrs import ROLE as ROLE_ATTR

    store, space, optuna_study = _open(storage, study)
    launches = {r.trial_number: r for r in store.launches(study)}
    rows = []
    for t in optuna_study.get_trials(deepcopy=False):
        params = t.user_attrs.get(PARAMS_ATTR) or {}
        launch = launches.get(t.number)
        rows.append(
            {
                "number": t.number,
                "state": t.state.name.lower(),
                "role": t.user_attrs.get(ROLE_ATTR, "search"),
                "changed": {k: v for k, v in params.items() if v != "default"},
                "value": t.value,
                "stderr": launch.objective_se if launch else None,
                "seconds_to_healthy": launch.seconds_to_healthy if launch else None,
                "reason": t.user_attrs.get(REASON_ATTR) or (launch.reason if launch else None),
            }
        )
    return rows


def print_trials(storage: str, study: str, console: Console) -> None:
    table = Table(title=f"trials of {study}")
    for col in ("#", "state", "role", "value", "± s.e.", "load s", "changed params / reason"):
        table.add_column(col, overflow="fold")
    for r in trials_rows(storage, study):
        changed = " ".join(f"{k}={v}" for k, v in r["changed"].items()) or "(defaults)"
        detail = changed if r["state"] == "complete" else f"{changed}  [red]{r['reason'] or ''}[/]"
        table.add_row(
            str(r["number"]),
            r["state"],
            r["role"],
            f"{r['value']:.4g}" if r["value"] is not None else "-",
            f"{r['stderr']:.2g}" if r["stderr"] is not None else "-",
            f"{r['seconds_to_healthy']:.1f}" if r["seconds_to_healthy"] is not None else "-",
            detail,
        )
    console.print(table)


# --- tuner show ----------------------------------------------------------------------------


def print_trial(storage: str, study: str, number: int, console: Console) -> None:
    store, space, _ = _open(storage, study)
    launch = store.launch_for_trial(study, number)
    if launch is None:
        raise StoreError(
            f"trial {number} of {study!r} never launched a server (see `tuner trials`)"
        )
    console.print(
        f"[bold]Trial {number}[/] ({launch.role}) status {launch.status}"
        + (f": {launch.reason}" if launch.reason else "")
    )
    console.print(f"command: {shlex.join(launch.argv)}", highlight=False, soft_wrap=True)
    console.print(
        f"env: {' '.join(f'{k}={v}' for k, v in launch.env.items()) or '-'}",
        highlight=False,
        soft_wrap=True,
    )
    if launch.unset_env:
        console.print(f"unset: {' '.join(launch.unset_env)}", highlight=False)
    console.print(
        f"pid {launch.pid} on {launch.host}; healthy after "
        f"{launch.seconds_to_healthy or float('nan'):.1f} s; log {launch.log_path}"
    )
    levels = store.levels(launch.id)
    if levels:
        table = Table(title="levels")
        for col in (
            "round",
            "conc",
            "done",
            "err",
            "tok/s",
            "ttft p50",
            "tpot p50",
            "itl p99",
            "e2el p99",
            "flag",
        ):
            table.add_column(col)
        for lv in levels:
            s = lv.summary
            table.add_row(
                str(lv.round),
                str(lv.concurrency),
                str(lv.completed),
                str(lv.errors),
                f"{lv.output_throughput or 0:.1f}",
                _ms(s, "ttft_ms", "p50"),
                _ms(s, "tpot_ms", "p50"),
                _ms(s, "itl_ms", "p99"),
                _ms(s, "e2el_ms", "p99"),
                lv.flagged or "",
            )
        console.print(table)
    if launch.cleanup:
        console.print(
            f"cleanup: {'clean' if launch.cleanup_ok else 'INCOMPLETE'} "
            f"{'; '.join(launch.cleanup.get('problems') or [])}"
        )
    if launch.log_tail:
        console.print("[bold]log tail[/]")
        console.print("\n".join(launch.log_tail.splitlines()[-20:]), markup=False, highlight=False)
    row = store.study(study)
    if row and row.inventory:
        from tuner.telemetry import render_inventory_dict

        console.print(render_inventory_dict(row.inventory))


def _ms(summary: dict[str, Any], family: str, stat: str) -> str:
    value = (summary.get(family) or {}).get(stat)
    return f"{value:.1f}" if isinstance(value, (int, float)) else "-"


# --- tuner compare -------------------------------------------------------------------------


def compare_report(storage: str, study: str, a: int, b: int) -> dict[str, Any]:
    store, space, _ = _open(storage, study)
    result = analysis.analyze(store, space)
    by_trial = {n: c for c in result.configs.values() for n in c.trials}
    missing = [n for n in (a, b) if n not in by_trial]
    if missing:
        raise StoreError(
            f"trial {missing[0]} of {study!r} has no completed measurement (see `tuner trials`)"
        )
    ca, cb = by_trial[a], by_trial[b]
    cmp = result.compare(ca, cb)
    return {
        "a": {
            "trial": a,
            "mean": ca.estimate.mean,
            "stderr": ca.estimate.se,
            "launches": len(ca.launches),
        },
        "b": {
            "trial": b,
            "mean": cb.estimate.mean,
            "stderr": cb.estimate.se,
            "launches": len(cb.launches),
        },
        "diff": cmp.diff,
        "rel_diff": cmp.rel_diff,
        "ci_low": cmp.ci_low,
        "ci_high": cmp.ci_high,
        "verdict": cmp.verdict,
        "confidence": space.spec.stop.confidence,
        "min_gain": space.spec.stop.min_gain,
    }


def print_compare(storage: str, study: str, a: int, b: int, console: Console) -> None:
    r = compare_report(storage, study, a, b)
    lines = [
        f"trial {x}: {r[k]['mean']:.4g} ± {r[k]['stderr']:.2g} ({r[k]['launches']} launches)"
        for x, k in ((a, "a"), (b, "b"))
    ]
    lines.append(
        f"difference A - B: {r['rel_diff']:+.2%}, {r['confidence']:.0%} interval "
        f"[{r['ci_low']:+.2%}, {r['ci_high']:+.2%}] (minimum gain {r['min_gain']:.1%})"
    )
    suffix = "" if r["verdict"] == "within noise" else " than B"
    lines.append(f"[bold]verdict: A is {r['verdict']}{suffix}[/]")
    console.print("\n".join(lines), highlight=False)


# --- tuner dashboard -----------------------------------------------------------------------


def run_dashboard(storage: str, port: int) -> None:
    exe = shutil.which("optuna-dashboard")
    if exe is None:
        raise ConfigError("optuna-dashboard is not installed: pip install 'tuner[dashboard]'")
    subprocess.run([exe, storage, "--host", "127.0.0.1", "--port", str(port)], check=False)
