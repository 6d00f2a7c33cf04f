"""The store's measurements of each launch: its levels with their requests, its samples.

A mixin of ``Store`` (tuner/storage/store.py), which gives it its sessions. A level and
every request record of it are written in one transaction, so no summary reads a level
without its requests; the capacity search's levels are kept apart from the fixed ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import insert, or_, select
from sqlalchemy.orm import Session

from tuner.storage.tables import LevelRow, RequestRow, SampleRow


class Measurements:
    """Levels, requests and samples of the launches; ``session`` is the Store's."""

    def session(self) -> Session:
        raise NotImplementedError("Store gives its sessions")

    def add_level(
        self,
        launch_id: int,
        *,
        round_index: int,
        summary: Mapping[str, Any],
        requests: Sequence[Mapping[str, Any]],
        server_metrics: Mapping[str, Any] | None = None,
        gpu_summary: Mapping[str, Any] | None = None,
        flagged: str | None = None,
        capacity_search: bool = False,
    ) -> int:
        """Store a level's summary and every raw request record in one transaction.

        ``capacity_search``: a level the capacity search chose, kept apart from the fixed
        levels of ``benchmark.concurrency`` (``levels``/``levels_of`` leave it out)."""
        with self.session() as s, s.begin():
            row = LevelRow(
                launch_id=launch_id,
                round=round_index,
                concurrency=int(summary["concurrency"]),
                completed=int(summary["completed"]),
                errors=int(summary["errors"]),
                duration_s=float(summary.get("duration_s") or 0.0),
                output_throughput=summary.get("output_throughput"),
                summary=dict(summary),
                server_metrics=dict(server_metrics) if server_metrics else None,
                gpu_summary=dict(gpu_summary) if gpu_summary else None,
                flagged=flagged,
                capacity_search=capacity_search,
            )
            s.add(row)
            s.flush()
            if requests:
                s.execute(insert(RequestRow), [{**r, "level_id": row.id} for r in requests])
            return row.id

    def levels(self, launch_id: int, *, capacity_search: bool = False) -> list[LevelRow]:
        """A launch's fixed levels, or (``capacity_search``) those its capacity search chose."""
        query = (
            select(LevelRow)
            .where(LevelRow.launch_id == launch_id, _level_kind(capacity_search))
            .order_by(LevelRow.id)
        )
        with self.session() as s:
            return list(s.scalars(query))

    def levels_of(
        self, launch_ids: Sequence[int], *, capacity_search: bool = False
    ) -> list[LevelRow]:
        """The levels of several launches in one query (a study's, for a summary)."""
        if not launch_ids:
            return []
        query = (
            select(LevelRow)
            .where(LevelRow.launch_id.in_(list(launch_ids)), _level_kind(capacity_search))
            .order_by(LevelRow.id)
        )
        with self.session() as s:
            return list(s.scalars(query))

    def requests(self, level_id: int) -> list[RequestRow]:
        query = select(RequestRow).where(RequestRow.level_id == level_id).order_by(RequestRow.idx)
        with self.session() as s:
            return list(s.scalars(query))

    def add_samples(self, launch_id: int, rows: Iterable[Mapping[str, Any]]) -> None:
        batch = [{**r, "launch_id": launch_id} for r in rows]
        if batch:
            with self.session() as s, s.begin():
                s.execute(insert(SampleRow), batch)

    def samples(self, launch_id: int, kind: str | None = None) -> list[SampleRow]:
        query = select(SampleRow).where(SampleRow.launch_id == launch_id).order_by(SampleRow.id)
        if kind is not None:
            query = query.where(SampleRow.kind == kind)
        with self.session() as s:
            return list(s.scalars(query))


def _level_kind(capacity_search: bool) -> Any:
    """Fixed levels (NULL in rows older than schema 3) or the capacity search's."""
    if capacity_search:
        return LevelRow.capacity_search.is_(True)
    return or_(LevelRow.capacity_search.is_(None), LevelRow.capacity_search.is_(False))
