"""Finding and opening a stored study for the read-only commands (`best`, `trials`, ...).

Which study the user means (``--study``, the space file's, or the only one stored),
the space it ran with as stored (so answers survive later edits of the file), and
the tuner store, space and optuna study opened together, each failure a StoreError
or ConfigError that says what to do. Opened to read only: no database, table or study
is created and nothing is written (tuner/storage/health.py); a study that is not there
is an error that lists the studies that are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import optuna
import yaml

from tuner.errors import ConfigError, StoreError
from tuner.secrets import safe_url, scrub_url
from tuner.space.spec import Space, load_space, parse_space
from tuner.storage import health
from tuner.storage.driver import missing_driver
from tuner.storage.store import Store


@dataclass(frozen=True)
class StoredStudy:
    """A study opened for reading: tuner's tables, its stored space, and optuna's study."""

    store: Store
    space: Space
    optuna_study: optuna.Study


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
        raise StoreError(f"{safe_url(storage)}: no study yet; run `tuner run --space FILE` first")
    raise ConfigError(
        f"{safe_url(storage)} holds several studies ({', '.join(names)}): pass --study NAME"
    )


def _all_studies(
    storage: str, rdb: optuna.storages.BaseStorage | None = None
) -> list[optuna.study.StudySummary]:
    """Every optuna study in ``storage``, read only: a missing SQLite file is an error
    (optuna would create an empty database at a mistyped path)."""
    try:
        return optuna.get_all_study_summaries(
            storage=rdb or health.read_rdb(storage), include_best_trial=False
        )
    except StoreError:
        raise
    except ImportError as exc:  # optuna's engine: the URL's driver is not installed
        raise missing_driver(storage, exc) from exc
    except Exception as exc:  # optuna raises several storage-specific errors
        raise health.database_error(storage, exc) or StoreError(
            f"cannot read studies from {safe_url(storage)}: {scrub_url(str(exc), storage)}"
        ) from exc


def missing_study(storage: str, study: str, names: list[str]) -> StoreError:
    """The error for a study ``storage`` does not hold: the studies it does hold."""
    split = [n for n in names if n.startswith(f"{study}@")]
    if split:
        held = (
            f"it was split by host (--split-by-host) into {', '.join(split)}: pass one "
            "of them to --study"
        )
    elif not names:
        held = "it holds no study yet; run `tuner run --space FILE` first"
    else:
        held = f"the studies there: {', '.join(names)}; pass one of them to --study"
    return StoreError(f"{health.where(storage)}: no study named {study!r}; {held}")


def stored_space(store: Store, study: str) -> Space:
    """The space the study ran with, as stored (so answers survive edits of the file)."""
    row = store.study(study)
    if row is None or not row.space_text:
        names = store.study_names()
        split = [n for n in names if n.startswith(f"{study}@")]
        if split:
            hint = (
                f"; it was split by host (--split-by-host) into {', '.join(split)}: pass one "
                "of them to --study"
            )
        elif names:
            hint = f"; the studies there: {', '.join(names)}"
        else:
            hint = "; it holds no study tuner ran yet: run `tuner run --space FILE` first"
        raise StoreError(
            f"{safe_url(store.url)}: no study named {study!r} was run by tuner here{hint}"
        )
    return parse_space(
        yaml.safe_load(row.space_text), Path(row.space_path or f"{study}.yaml")
    ).model_copy(update={"study_name": study})


def open_study(storage: str, study: str, *, writable: bool = False) -> StoredStudy:
    """The store, the stored space and the optuna study of ``study`` in ``storage``.

    Read only unless ``writable`` (`tuner report` records its verdicts and artifact):
    nothing is created and nothing is written. A study not there is a StoreError that
    lists the studies that are.
    """
    if writable:
        from tuner.study.run.optuna_rdb import open_rdb

        store = Store(storage)
        space = stored_space(store, study)
        rdb = open_rdb(storage)
    else:
        rdb = health.read_rdb(storage)
        store = Store(storage, read_only=True)
        if store.study(study) is None:
            names = [s.study_name for s in _all_studies(storage, rdb)]
            if study not in names:
                raise missing_study(storage, study, names)
        space = stored_space(store, study)
    try:
        optuna_study = optuna.load_study(study_name=study, storage=rdb)
    except KeyError as exc:
        raise StoreError(f"{safe_url(storage)}: no optuna study named {study!r}") from exc
    return StoredStudy(store=store, space=space, optuna_study=optuna_study)
