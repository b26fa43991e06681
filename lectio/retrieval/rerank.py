"""Reshaping a ranked list of hits: re-order by the query's words, move long passages down,
collapse hits another hit covers, spread one source's hits, diversify by maximal marginal
relevance, or return parents. The ranking stages (lectio.retrieval.pipeline) call these."""

from __future__ import annotations

import json

import numpy as np
from psycopg import sql

from lectio.embedding.model import count_tokens
from lectio.retrieval.expansion import query_words
from lectio.retrieval.hits import Hit
from lectio.retrieval.shape import content_words

def by_query_share(hits: list[Hit], query: str, weight: float, depth: int) -> list[Hit]:
    """The first `depth` hits ordered again by score * (1 + weight * share²), where share is how
    many of the query's content words the hit's own text holds. Fusion sees each retriever's
    verdict, not the words: a verse that holds nearly all of a quoted line can sit behind a
    passage each retriever put a little lower. Squared, so a partial overlap counts for little."""
    wanted = set(content_words(query))
    if not wanted or weight <= 0:
        return hits
    head = [hit.scored(hit.score * (1 + weight * _share(hit, wanted) ** 2)) for hit in hits[:depth]]
    return sorted(head, key=lambda hit: -hit.score) + hits[depth:]


def long_passages_last(hits: list[Hit], max_tokens: int, depth: int, parts: bool = False,
                       sizes: dict[str, int] | None = None) -> list[Hit]:
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
    long = {hit.chunk_id for hit in head if sizes[hit.chunk_id] > max_tokens}
    if not long:
        return hits
    if not parts:
        return [hit for hit in head if hit.chunk_id not in long] + [hit for hit in head if hit.chunk_id in long] + tail
    moved: set[str] = set()
    ordered = []
    for position, hit in enumerate(hits):
        if hit.chunk_id in moved:
            continue
        if hit.chunk_id in long:
            part = next((other for other in hits[position + 1:] if other.chunk_id not in moved
                         and other.chunk_id not in long and _inside(other, hit)), None)
            if part is not None:
                moved.add(part.chunk_id)
                ordered.append(part.scored(max(hit.score, part.score)))
        ordered.append(hit)
    return ordered


def pack_page(hits: list[Hit], budget: int) -> list[Hit]:
    """The hits in rank order, except that a hit which would pass what is left of `budget` word
    pieces follows the hits that still fit (in order): a caller that fills a model's context from
    the top stops at the first hit that does not fit, and one long paragraph would end the page
    for the verses after it. Every hit is counted exactly, as the caller's tokenizer would."""
    counts = count_tokens([hit.result_text for hit in hits])
    first, later, left = [], [], budget
    for hit, size in zip(hits, counts):
        if size <= left:
            first.append(hit)
            left -= size
        else:
            later.append(hit)
    return first + later


def _measure(hits: list[Hit], at_most: int, sizes: dict[str, int]) -> None:
    """Put in `sizes` the word pieces of each hit's text as a result returns it (result_text); for
    a text of at most `at_most` characters, its length instead, which no count of its pieces
    exceeds (a piece is at least one character): most hits are verses, and tokenizing every hit
    cost milliseconds a search."""
    texts = {hit.chunk_id: hit.result_text for hit in hits if hit.chunk_id not in sizes}
    long = [chunk_id for chunk_id, text in texts.items() if len(text) > at_most]
    sizes.update((chunk_id, len(text)) for chunk_id, text in texts.items())
    sizes.update(zip(long, count_tokens([texts[chunk_id] for chunk_id in long])))


def _inside(part: Hit, passage: Hit) -> bool:
    """Scripture of the same translation whose verses are all among the passage's, and fewer."""
    refs, around = set(part.refs or ()), set(passage.refs or ())
    return part.kind == passage.kind == "scripture" and part.translation == passage.translation \
        and bool(refs) and refs < around


def _share(hit: Hit, wanted: set[str]) -> float:
    return len(wanted & set(query_words(hit.own_text))) / len(wanted)


def mmr(conn, table_name, hits: list[Hit], k: int, lam: float) -> list[Hit]:
    """Re-rank by maximal marginal relevance; relevance is the fused score scaled to [0, 1],
    redundancy the cosine similarity of the chunks' embeddings."""
    if len(hits) <= 1:
        return hits
    ids = [hit.chunk_id for hit in hits]
    vectors = dict(conn.execute(
        sql.SQL("SELECT chunk_id, embedding FROM {} WHERE chunk_id = ANY(%s)").format(sql.Identifier(table_name)), [ids]
    ).fetchall())
    matrix = np.array([as_array(vectors[i]) for i in ids], dtype=np.float32)
    similarity = matrix @ matrix.T  # embeddings are unit length
    scores = np.array([hit.score for hit in hits], dtype=np.float32)
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


def collapse_covered(hits: list[Hit], min_new_share: float = 0.0,
                     commentary_later: bool = False) -> list[Hit]:
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


def _collapse(hits: list[Hit], covered: set, min_new_share: float,
              commentary_later: bool = False) -> tuple[list[Hit], list[Hit]]:
    """(kept, moved later) of `hits`; `covered` gains the verses of those kept."""
    kept, later = [], []
    for hit in hits:
        refs = hit.refs or []
        if hit.kind != "scripture" or not refs:
            if refs and commentary_later and set(refs) <= {ref for _, ref in covered}:
                later.append(hit)
            else:
                kept.append(hit)
            continue
        keys = {(hit.translation, ref) for ref in refs}
        new = keys - covered
        if not new:
            continue
        if len(new) < min_new_share * len(keys):
            later.append(hit)
            continue
        covered |= keys
        kept.append(hit)
    return kept, later


def spread_sources(hits: list[Hit], per_source: int) -> list[Hit]:
    """Keep the order, but move each non-scripture source's hits past its first `per_source` to
    the end (still in order): scripture's translations are never capped."""
    taken: dict[str, int] = {}
    first, later = [], []
    for hit in hits:
        if hit.kind == "scripture":
            first.append(hit)
            continue
        taken[hit.source_id] = taken.get(hit.source_id, 0) + 1
        (first if taken[hit.source_id] <= per_source else later).append(hit)
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
