"""A ranked hit: a chunk's id, its score, and the columns a result shows, read by name."""

from __future__ import annotations

from dataclasses import dataclass, replace

from psycopg import sql

# The columns a hit carries, in the order they are selected; the last, the part of `text` a
# result returns (lectio.rulesets.chunk.Chunk), is read from the metadata.
COLUMNS = ("chunk_id", "kind", "refs", "source_id", "breadcrumb", "header", "text", "granularity", "translation", "title",
           "answer_span")
SELECT_COLUMNS = sql.SQL(", ").join(
    [*map(sql.Identifier, COLUMNS[:-1]), sql.SQL("metadata -> 'answer_span' AS answer_span")])


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    score: float
    kind: str | None = None
    refs: list[str] | None = None
    source_id: str | None = None
    breadcrumb: str | None = None
    header: str | None = None
    text: str = ""
    granularity: str | None = None
    translation: str | None = None
    title: str | None = None
    answer_span: list[int] | None = None

    @classmethod
    def of_row(cls, row: tuple, score: float) -> Hit:
        """A row selected with SELECT_COLUMNS, scored."""
        return cls(score=score, **dict(zip(COLUMNS, row)))

    def scored(self, score: float) -> Hit:
        return replace(self, score=score)

    @property
    def own_text(self) -> str:
        """What the hit returns as its text: a paragraph's own verses (its answer span), without
        the neighbours it was embedded and indexed with; the whole text where there is no span."""
        return self.text[slice(*self.answer_span)] if self.answer_span else self.text

    @property
    def result_text(self) -> str:
        """The text as a result shows it: its header, then its own text."""
        return f"{self.header}\n{self.own_text}" if self.header else self.own_text


def hits_by_id(conn, table_name: str, scored: list[tuple[str, float]]) -> list[Hit]:
    """The rows of `scored`'s (chunk_id, score) as hits, in its order; ids the caller may not
    read (or that are gone) are left out."""
    rows = conn.execute(
        sql.SQL("SELECT {cols} FROM {table} WHERE chunk_id = ANY(%s)").format(
            cols=SELECT_COLUMNS, table=sql.Identifier(table_name)),
        [[chunk_id for chunk_id, _ in scored]],
    ).fetchall()
    by_id = {row[0]: row for row in rows}
    return [Hit.of_row(by_id[chunk_id], score) for chunk_id, score in scored if chunk_id in by_id]
