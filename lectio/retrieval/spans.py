"""Rows by where they stand in the Bible: an ordinal is BBCCCVVV, so a run of verses, a chapter or
a book is a span of ordinals, which the chunk tables index (an overlap of verse references is no
leakproof test under row-level security, so it would read every row the caller may)."""

from __future__ import annotations

from psycopg import sql


def ordinal_spans(spans: list[tuple[int, int]]) -> tuple[sql.Composable, dict]:
    """A condition that a row's ordinal falls in one of `spans` (first, last), and its parameters."""
    condition = sql.SQL(" OR ").join(
        sql.SQL("ordinal BETWEEN {} AND {}").format(sql.Placeholder(f"s{i}"), sql.Placeholder(f"e{i}"))
        for i in range(len(spans)))
    params = {key: value for i, (first, last) in enumerate(spans) for key, value in ((f"s{i}", first), (f"e{i}", last))}
    return condition, params
