"""How often the corpus cites each verse: a prior for the passages a topic's teaching rests on.

A query like "joy" or "why does God allow suffering" matches hundreds of verses about equally well,
and the ones a reader expects (Neh 8:10, Rom 8:18) are the ones commentators keep returning to.
The count comes from the index version's own chunks (Scofield's links and the references written
in commentary, patristic, Reformation and modern texts), never from Nave's, and from public chunks
only: the reader may read this table, so a private note must not leave a trace in it.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
import psycopg
from psycopg import sql

from lectio.index.xrefs import citations_by_chunk


def table_name(chunk_table: str) -> str:
    return chunk_table.replace("chunks_", "citations_", 1)


def citations(chunks: pd.DataFrame, cited: pd.Series | None = None) -> Counter:
    """verse → how many public non-scripture chunks cite it. `cited` is
    xrefs.citations_by_chunk's answer for the frame, when the caller has it already."""
    cited = citations_by_chunk(chunks) if cited is None else cited
    counted: Counter = Counter()
    for verses in cited[chunks["acl"].map(lambda acl: "public" in acl).to_numpy()]:
        counted.update(verses)
    return counted


def build(conn: psycopg.Connection, chunk_table: str, chunks: pd.DataFrame, cited: pd.Series | None = None) -> int:
    """Create the version's citation counts beside its chunk table."""
    table = sql.Identifier(table_name(chunk_table))
    conn.execute(sql.SQL("CREATE TABLE {} (ref text PRIMARY KEY, chunks int NOT NULL)").format(table))
    counted = citations(chunks, cited)
    with conn.cursor().copy(sql.SQL("COPY {} (ref, chunks) FROM STDIN").format(table)) as copy:
        for ref, count in counted.items():
            copy.write_row((ref, count))
    return len(counted)


def most_cited(conn: psycopg.Connection, chunk_table: str, chunk_ids: list[str], layout: int | None = None) -> dict[str, int]:
    """chunk_id → citations of its most cited verse, for the scripture chunks among chunk_ids.
    Empty for a version built before citations were counted (index layout < 6). A version that
    records its layout (7 on) has the table; only older ones are looked up in the catalogue."""
    table = table_name(chunk_table)
    if not chunk_ids or (layout is None and not conn.execute("SELECT to_regclass(%s) IS NOT NULL", [table]).fetchone()[0]):
        return {}
    rows = conn.execute(
        sql.SQL("SELECT c.chunk_id, max(n.chunks) FROM {chunks} c JOIN {counts} n ON n.ref = ANY(c.refs) "
                "WHERE c.chunk_id = ANY(%s) AND c.kind = 'scripture' GROUP BY c.chunk_id").format(
            chunks=sql.Identifier(chunk_table), counts=sql.Identifier(table)),
        [chunk_ids],
    ).fetchall()
    return dict(rows)
