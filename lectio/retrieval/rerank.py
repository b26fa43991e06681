"""Reshaping a ranked list of rows: read them in rank order, collapse hits another hit covers,
spread one source's hits, diversify by maximal marginal relevance, or return parents."""

from __future__ import annotations

import json

import numpy as np
from psycopg import sql

from lectio.embedding.model import count_tokens
from lectio.retrieval.expansion import query_words
from lectio.retrieval.shape import content_words

# The columns a result row carries, in the order every reader of rows expects; the last, the part
# of `text` a result returns (lectio.rulesets.chunk.Chunk), is read from the metadata.
COLUMNS = ["chunk_id", "kind", "refs", "source_id", "breadcrumb", "header", "text", "granularity", "translation", "title",
           "answer_span"]
SELECT_COLUMNS = sql.SQL(", ").join(
    [*map(sql.Identifier, COLUMNS[:-1]), sql.SQL("metadata -> 'answer_span' AS answer_span")])


def rows_by_id(conn, table_name, ids: list[str]) -> list[tuple]:
    rows = conn.execute(
        sql.SQL("SELECT {cols} FROM {table} WHERE chunk_id = ANY(%s)").format(
            cols=SELECT_COLUMNS, table=sql.Identifier(table_name)),
        [ids],
    ).fetchall()
    by_id = {row[0]: row for row in rows}
    return [by_id[i] for i in ids if i in by_id]


def by_query_share(hits: list[tuple[tuple, float]], query: str, weight: float,
                   depth: int) -> list[tuple[tuple, float]]:
    """The first `depth` hits ordered again by score * (1 + weight * share²), where share is how
    many of the query's content words the hit's own text holds. Fusion sees each retriever's
    verdict, not the words: a verse that holds nearly all of a quoted line can sit behind a
    passage each retriever put a little lower. Squared, so a partial overlap counts for little."""
    wanted = set(content_words(query))
    if not wanted or weight <= 0:
        return hits
    head = [(row, score * (1 + weight * _share(row, wanted) ** 2)) for row, score in hits[:depth]]
    return sorted(head, key=lambda hit: -hit[1]) + hits[depth:]


def long_passages_last(hits: list[tuple[tuple, float]], max_tokens: int, depth: int,
                       parts: bool = False, sizes: dict[str, int] | None = None) -> list[tuple[tuple, float]]:
    """Within the first `depth` hits, a hit whose text is longer than `max_tokens` word pieces
    follows the shorter ones (in order): a reader, or a model's context, that takes the page from
    the top spends a whole budget on it, and its vector, averaged over windows, speaks for none of
    its parts. With `parts`, the best-ranked smaller scripture hit inside such a passage (its verse
    or paragraph, further down the list) takes the passage's place, so what the passage answered
    with still comes first; run before collapse_covered, which would drop the part as covered.
    `sizes` keeps the hits' sizes across calls in one search, so no text is tokenized twice."""
    head, tail = hits[:depth], hits[depth:]
    sizes = {} if sizes is None else sizes
    _measure(head, max_tokens, sizes)
    long = {row[0] for row, _ in head if sizes[row[0]] > max_tokens}
    if not long:
        return hits
    if not parts:
        return [hit for hit in head if hit[0][0] not in long] + [hit for hit in head if hit[0][0] in long] + tail
    moved: set[str] = set()
    ordered = []
    for position, (row, score) in enumerate(hits):
        if row[0] in moved:
            continue
        if row[0] in long:
            part = next((hit for hit in hits[position + 1:] if hit[0][0] not in moved and hit[0][0] not in long
                         and _inside(hit[0], row)), None)
            if part is not None:
                moved.add(part[0][0])
                ordered.append((part[0], max(score, part[1])))
        ordered.append((row, score))
    return ordered


def pack_page(hits: list[tuple[tuple, float]], budget: int) -> list[tuple[tuple, float]]:
    """The hits in rank order, except that a hit which would pass what is left of `budget` word
    pieces follows the hits that still fit (in order): a caller that fills a model's context from
    the top stops at the first hit that does not fit, and one long paragraph would end the page
    for the verses after it. Every hit is counted exactly, as the caller's tokenizer would."""
    counts = count_tokens([result_text(row) for row, _ in hits])
    first, later, left = [], [], budget
    for hit, size in zip(hits, counts):
        if size <= left:
            first.append(hit)
            left -= size
        else:
            later.append(hit)
    return first + later


def _measure(hits: list[tuple[tuple, float]], at_most: int, sizes: dict[str, int]) -> None:
    """Put in `sizes` the word pieces of each hit's text as a result returns it (result_text); for
    a text of at most `at_most` characters, its length instead, which no count of its pieces
    exceeds (a piece is at least one character): most hits are verses, and tokenizing every hit
    cost milliseconds a search."""
    texts = {row[0]: result_text(row) for row, _ in hits if row[0] not in sizes}
    long = [chunk_id for chunk_id, text in texts.items() if len(text) > at_most]
    sizes.update((chunk_id, len(text)) for chunk_id, text in texts.items())
    sizes.update(zip(long, count_tokens([texts[chunk_id] for chunk_id in long])))


def _inside(part: tuple, passage: tuple) -> bool:
    """Scripture of the same translation whose verses are all among the passage's, and fewer."""
    refs_at, translation_at, kind_at = COLUMNS.index("refs"), COLUMNS.index("translation"), COLUMNS.index("kind")
    refs, around = set(part[refs_at] or ()), set(passage[refs_at] or ())
    return part[kind_at] == passage[kind_at] == "scripture" and part[translation_at] == passage[translation_at] \
        and bool(refs) and refs < around


def _share(row: tuple, wanted: set[str]) -> float:
    return len(wanted & set(query_words(own_text(row)))) / len(wanted)


def result_text(row: tuple) -> str:
    """A row's text as a result shows it: its header, then its own text."""
    header = row[COLUMNS.index("header")]
    return f"{header}\n{own_text(row)}" if header else own_text(row)


def own_text(row: tuple) -> str:
    """What a row returns as its text: a paragraph's own verses (its answer span), without the
    neighbours it was embedded and indexed with; the whole text where there is no span."""
    text, span = row[COLUMNS.index("text")], row[COLUMNS.index("answer_span")]
    return text[slice(*span)] if span else text


def mmr(conn, table_name, hits: list[tuple[tuple, float]], k: int, lam: float) -> list[tuple[tuple, float]]:
    """Re-rank by maximal marginal relevance; relevance is the fused score scaled to [0, 1],
    redundancy the cosine similarity of the chunks' embeddings."""
    if len(hits) <= 1:
        return hits
    ids = [row[0] for row, _ in hits]
    vectors = dict(conn.execute(
        sql.SQL("SELECT chunk_id, embedding FROM {} WHERE chunk_id = ANY(%s)").format(sql.Identifier(table_name)), [ids]
    ).fetchall())
    matrix = np.array([as_array(vectors[i]) for i in ids], dtype=np.float32)
    similarity = matrix @ matrix.T  # embeddings are unit length
    scores = np.array([score for _, score in hits], dtype=np.float32)
    relevance = scores / scores.max() if scores.max() > 0 else scores
    chosen: list[int] = []
    remaining = list(range(len(hits)))
    while remaining and len(chosen) < k:
        def value(i: int) -> float:
            redundancy = max((similarity[i, j] for j in chosen), default=0.0)
            return lam * relevance[i] - (1 - lam) * redundancy
        best = max(remaining, key=value)
        chosen.append(best)
        remaining.remove(best)
    return [hits[i] for i in chosen]


def as_array(value) -> np.ndarray:
    # pgvector's loaders give numpy arrays or Vector objects; without them the text form arrives.
    if hasattr(value, "to_numpy"):
        return value.to_numpy()
    return np.asarray(json.loads(value) if isinstance(value, str) else value)


def collapse_covered(hits: list[tuple[tuple, float]], min_new_share: float = 0.0,
                     commentary_later: bool = False) -> list[tuple[tuple, float]]:
    """Drop a hit whose verses, in its translation, are all in better-ranked hits: a verse under
    the paragraph already shown, the same paragraph reached twice. A hit of which less than
    `min_new_share` of its verses is new moves after the others (in order, judged again by what
    now precedes it): a pericope over verses already listed spends a reader's budget on little
    new. Hits without verse refs (documents, notes) and commentary (its text is not the verses')
    always stay; with `commentary_later`, commentary on verses all already listed follows the
    others, since on a page of verses it spends the reader's budget on none they lack."""
    covered: set[tuple[str | None, str]] = set()
    kept, later = _collapse(hits, covered, min_new_share, commentary_later)
    return kept + _collapse(later, covered, 0.0)[0]


def _collapse(hits, covered: set, min_new_share: float, commentary_later: bool = False) -> tuple[list, list]:
    """(kept, moved later) of `hits`; `covered` gains the verses of those kept."""
    refs_at, kind_at, translation_at = COLUMNS.index("refs"), COLUMNS.index("kind"), COLUMNS.index("translation")
    kept, later = [], []
    for row, score in hits:
        refs = row[refs_at] or []
        if row[kind_at] != "scripture" or not refs:
            if refs and commentary_later and set(refs) <= {ref for _, ref in covered}:
                later.append((row, score))
            else:
                kept.append((row, score))
            continue
        keys = {(row[translation_at], ref) for ref in refs}
        new = keys - covered
        if not new:
            continue
        if len(new) < min_new_share * len(keys):
            later.append((row, score))
            continue
        covered |= keys
        kept.append((row, score))
    return kept, later


def spread_sources(hits: list[tuple[tuple, float]], per_source: int) -> list[tuple[tuple, float]]:
    """Keep the order, but move each non-scripture source's hits past its first `per_source` to
    the end (still in order): scripture's translations are never capped."""
    source_at, kind_at = COLUMNS.index("source_id"), COLUMNS.index("kind")
    taken: dict[str, int] = {}
    first, later = [], []
    for row, score in hits:
        if row[kind_at] == "scripture":
            first.append((row, score))
            continue
        taken[row[source_at]] = taken.get(row[source_at], 0) + 1
        (first if taken[row[source_at]] <= per_source else later).append((row, score))
    return first + later


def parents_of(conn, table_name, ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Retrieve the child, return the parent. A hit with a parent (a verse in its
    pericope) is replaced by the parent, and a parent reached twice is kept once, at its best rank.
    The parent is read under the same row-level rules as its child (same source, same ACL)."""
    parents = dict(
        conn.execute(
            sql.SQL("SELECT chunk_id, parent_id FROM {} WHERE chunk_id = ANY(%s) AND parent_id IS NOT NULL").format(
                sql.Identifier(table_name)),
            [[chunk_id for chunk_id, _ in ranked]],
        ).fetchall()
    )
    seen, collapsed = set(), []
    for chunk_id, score in ranked:
        chosen = parents.get(chunk_id, chunk_id)
        if chosen not in seen:
            seen.add(chosen)
            collapsed.append((chosen, score))
    return collapsed
