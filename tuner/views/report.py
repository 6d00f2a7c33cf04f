"""`tuner report`: write the study's HTML report, and hand it to optuna-dashboard.

``write_report`` gathers the data (tuner/report/data.py), renders the page
(tuner/report/html.py) and writes it owner-only (it names the server's settings and
failure reasons, like the database). ``publish`` then makes the study read well in
optuna-dashboard without tuner: the objective named, every trial's final verdict and
the answer on the study (tuner/study/run/verdicts.py), and the report uploaded as an optuna
artifact in the study's artifact folder (the previous report's artifact removed), which
`tuner dashboard` serves.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import optuna
from optuna.artifacts import FileSystemArtifactStore, upload_artifact
from optuna.artifacts.exceptions import ArtifactNotFound

from tuner.report.data import build_report
from tuner.report.html import render
from tuner.secrets import private_dir, sqlite_file
from tuner.storage import health
from tuner.study import attrs
from tuner.study.facts import analysis
from tuner.study.run import verdicts
from tuner.study.run.optuna_rdb import open_rdb
from tuner.study.run.optuna_study import name_objective
from tuner.study.state import StudyState
from tuner.views.study_access import open_study

ARTIFACTS_PREFIX = "artifacts:"
"""optuna's study system attr prefix of an artifact's metadata (optuna/artifacts/_upload.py)."""


def artifact_dir(storage: str) -> Path:
    """Where a study's optuna artifacts live: beside a SQLite database
    (``experiments.db`` -> ``experiments-artifacts/``), else ``tuner-artifacts/`` here."""
    path = sqlite_file(storage)
    if path is None:
        return Path("tuner-artifacts")
    return path.parent / f"{path.stem}-artifacts"


def write_report(storage: str, study: str, out: Path, compare: Sequence[str] = ()) -> Path:
    """Render the report of ``study`` (beside the studies ``compare`` names) into ``out``
    (owner-only); NoAnswerError without a completed trial."""
    page = render(build_report(storage, study, compare))
    out.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(page)
    return out


def publish(storage: str, study: str, report: Path, artifacts: Path | None = None) -> str:
    """Name the objective, record the final verdicts, and upload ``report`` as the study's
    artifact (replacing the one uploaded before); the new artifact's id.

    The database must be writable: a read-only one is an UnusableDatabaseError (kind
    ``read_only``) before anything is written, which `tuner report` reports as a note.
    """
    path = sqlite_file(storage)
    if path is not None and health.is_read_only(path):
        raise health.unusable("read_only", storage, "the report is not added to it")
    opened = open_study(storage, study, writable=True)
    optuna_study = opened.optuna_study
    name_objective(optuna_study, opened.space.spec.objective.label)
    facts = analysis.analyze(opened.store, opened.space)  # judged with the looks as sized
    facts = facts.with_looks(StudyState.from_attrs(optuna_study.user_attrs).final.looks)
    verdicts.record_final(optuna_study, facts)
    store = FileSystemArtifactStore(str(private_dir(artifacts or artifact_dir(storage))))
    previous = optuna_study.user_attrs.get(attrs.REPORT_ARTIFACT)
    artifact_id = upload_artifact(
        artifact_store=store,
        file_path=str(report),
        study_or_trial=optuna_study,
        mimetype="text/html",
        encoding=None,
    )
    optuna_study.set_user_attr(attrs.REPORT_ARTIFACT, artifact_id)
    if isinstance(previous, str) and previous != artifact_id:
        _remove_artifact(storage, study, store, previous)
    _save_study_note(optuna_study, report.name)
    return artifact_id


def study_note(study: optuna.Study, report_name: str) -> str:
    """The study's note in optuna-dashboard (Markdown): the answer, each trial's verdict,
    and where the HTML report is."""
    user_attrs = study.user_attrs
    lines = [
        f"**Answer:** {user_attrs.get(attrs.ANSWER, 'not yet')}",
        "",
        f"The full report is this study's artifact `{report_name}` (written by `tuner report`).",
        "",
        "| trial | verdict |",
        "|--:|---|",
    ]
    for number, verdict in (user_attrs.get(attrs.VERDICTS) or {}).items():
        lines.append(f"| {number} | {str(verdict).replace('|', '/')} |")
    return "\n".join(lines)


def _save_study_note(study: optuna.Study, report_name: str) -> None:
    """The note, when optuna-dashboard is installed (its ``save_note`` is how notes are
    stored); without it the dashboard cannot show one anyway."""
    try:
        from optuna_dashboard import save_note
    except ImportError:
        return
    save_note(study, study_note(study, report_name))


def _remove_artifact(
    storage_url: str, study: str, store: FileSystemArtifactStore, artifact_id: str
) -> None:
    """Drop an older report: its file, and its entry as optuna-dashboard deletes one."""
    # Removed by hand or in the dashboard already: only the entry is left to drop.
    with contextlib.suppress(ArtifactNotFound):
        store.remove(artifact_id)
    storage = open_rdb(storage_url)
    study_id = storage.get_study_id_from_name(study)
    # optuna has no call to delete a study attr; a null entry is what the dashboard's own
    # delete writes, and what it skips when it lists artifacts.
    storage.set_study_system_attr(study_id, ARTIFACTS_PREFIX + artifact_id, json.dumps(None))


def report_artifacts(storage_url: str, study: str) -> list[dict[str, str]]:
    """The study's artifacts as optuna records them (for tests and `tuner dashboard`)."""
    storage: optuna.storages.BaseStorage = open_rdb(storage_url)
    found = storage.get_study_system_attrs(storage.get_study_id_from_name(study))
    metas = [json.loads(v) for k, v in found.items() if k.startswith(ARTIFACTS_PREFIX)]
    return [m for m in metas if m is not None]
