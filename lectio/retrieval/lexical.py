"""BM25 and title candidates from a version's lexical mirror (lectio.index.mirror): every chunk
that holds a query word scored in this process, and every pericope title matched, exactly as the
SQL scoring and title match do it, and the best confirmed under row-level security as the caller
before any is returned.

The mirror holds every chunk, private ones too. It narrows to what the caller's principals and
filters allow before ranking (so deep private matches do not crowd out the list), but it only
proposes: the ids are read back on the caller's connection, as the reader role with the caller's
token and the search's WHERE clause, and whatever that read drops is replaced from further down
the ranking."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from psycopg import sql

from lectio.index import mirror as mirrors
from lectio.retrieval.config import SearchConfig

# The first read confirms exactly the candidates wanted: the mirror has already applied the caller's
# ACL and filters, so the read drops nothing unless the two disagree (measured on the full index:
# 1.0 ms for 100 ids, 1.4-1.7 ms for 200). Each further read goes this many times deeper.
_DEEPER = 2

# The query's words and their weights, as the SQL scoring takes them (candidates._TERMS): a word
# of the query weighs 1, an expansion word `ew`, and a word in both counts once at the larger.
# Whether a word is the query's own: titles are matched by those alone.
_WORDS = """
    SELECT lexeme, max(w), bool_or(own) FROM (
        SELECT lexeme, 1.0::float8 AS w, true AS own FROM unnest(to_tsvector('english', %(query)s))
        UNION ALL
        SELECT lexeme, %(ew)s::float8, false FROM unnest(to_tsvector('english', %(extra)s))) t
    GROUP BY lexeme
"""


class Proposals(NamedTuple):
    """What the mirror found, each list (chunk_id, score) best first and read under row-level
    security: BM25 over the chunks' words, and pericopes whose titles the query names."""

    words: list[tuple[str, float]]
    titles: list[tuple[str, float]]


def candidates(conn, mirror: mirrors.Mirror | None, table_name: str, query: str, extra: str,
               conditions: list, where: sql.Composable, params: dict, config: SearchConfig,
               corpus: tuple[float, float]) -> Proposals | None:
    """BM25 and title candidates, at most `config.candidates` of each (titles only when
    `config.titles.weight` asks for them); None when there is no mirror or it cannot apply
    `conditions` (the caller scores in SQL). `conditions` are what `where` asks
    (lectio.retrieval.scope.Scope.conditions); `corpus` is BM25's N and mean document length, as
    the SQL scoring gets them."""
    eligible = mirror.mask(conditions) if mirror is not None else None
    if eligible is None:
        return None
    words = conn.execute(_WORDS, {"query": query, "extra": extra, "ew": config.expansion.weight}).fetchall()
    scores, held = mirror.scores({word: w for word, w, _ in words}, config.lexical.k1, config.lexical.b, *corpus)
    offers = [_Offer(scores, held & eligible, config.candidates)]
    own = {word for word, _, is_own in words if is_own}
    if config.titles.weight and own:
        scores, matched = mirror.titles(own, config.titles.query_share)
        offers.append(_Offer(scores, matched & eligible, config.candidates))
    _confirm(conn, mirror, table_name, offers, where, params)
    return Proposals(offers[0].found, offers[1].found if len(offers) > 1 else [])


@dataclass
class _Offer:
    """One ranking's proposals and how far down it they have been read."""

    scores: np.ndarray
    eligible: np.ndarray
    wanted: int
    found: list[tuple[str, float]] = field(default_factory=list)
    checked: int = 0
    done: bool = False


def _confirm(conn, mirror: mirrors.Mirror, table_name: str, offers: list[_Offer], where, params) -> None:
    """Fill each offer with its best `wanted` proposals that the caller's connection returns, in the
    mirror's order: one read for all offers, and further reads only for an offer that read drops
    some of."""
    statement = sql.SQL("SELECT chunk_id FROM {} WHERE chunk_id = ANY(%(mirror_ids)s) AND {}").format(
        sql.Identifier(table_name), where)
    while True:
        asked = []
        for offer in (offer for offer in offers if not offer.done):
            depth = offer.checked * _DEEPER if offer.checked else offer.wanted
            ranked = mirrors.best(offer.scores, offer.eligible, depth)
            offer.done = len(ranked) <= offer.checked  # nothing left to offer
            if not offer.done:
                asked.append((offer, ranked, depth))
        if not asked:
            return
        proposed = list({mirror.chunk_ids[i] for offer, ranked, _ in asked for i in ranked[offer.checked:]})
        visible = {chunk_id for (chunk_id,) in conn.execute(statement, {**params, "mirror_ids": proposed})}
        for offer, ranked, depth in asked:
            offer.found += [(mirror.chunk_ids[i], float(offer.scores[i])) for i in ranked[offer.checked:]
                            if mirror.chunk_ids[i] in visible][:offer.wanted - len(offer.found)]
            # Done when full, or when every eligible chunk has been offered.
            offer.done = len(offer.found) >= offer.wanted or len(ranked) < depth
            offer.checked = len(ranked)
