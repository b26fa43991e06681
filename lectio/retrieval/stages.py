"""The stages a ranked search's fused hits pass through, from the fused ranking to the page.

Every stage serves some modes, needs to see some number of fused hits (its depth, given k), and
reshapes the hits (`apply`). The list is built once from a SearchConfig: only the stages it turns
on, for its mode, in the order of PIPELINE; the search reads as many fused hits as the deepest of
them needs. docs/search.md draws the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from lectio.retrieval import rerank, reranking
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.modes import ANY_MODE, HYBRID_ONLY
from lectio.retrieval.hits import Hit, hits_by_id

if TYPE_CHECKING:
    from lectio.retrieval.request import VersionRequest

# Hits read past k for the stages that drop, move back or choose among them.
POOL_FACTOR = 4


@dataclass(frozen=True)
class Context:
    """What a stage may read besides the hits: the search it serves."""

    conn: object  # psycopg.Connection, reading as the caller
    table_name: str
    query: str
    k: int
    kind: str | None  # the kind the caller's filters ask for, None for every kind
    # Word pieces of the hits measured so far, shared by the long-passage stages so no text is
    # tokenized twice in one search.
    sizes: dict[str, int] = field(default_factory=dict)


class Stage(Protocol):
    modes: frozenset[str]

    def depth(self, k: int) -> int:
        """How many fused hits this stage must see to give k."""

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]: ...


class _Deep:
    """A stage that drops hits, moves them back, chooses among them or looks below the first k
    for one: it sees the pool past k."""

    def depth(self, k: int) -> int:
        return k * POOL_FACTOR


class _Page:
    """A stage that orders the first k alone."""

    def depth(self, k: int) -> int:
        return k


@dataclass(frozen=True)
class QueryShare:
    """The first `depth` hits ordered again by how much of the query their own text holds."""

    weight: float
    head: int
    modes: frozenset[str] = HYBRID_ONLY

    @classmethod
    def of(cls, config: SearchConfig) -> QueryShare | None:
        share = config.stages.query_share
        return cls(share.weight, share.depth) if share.weight else None

    def depth(self, k: int) -> int:
        return max(k, self.head)

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return rerank.by_query_share(hits, ctx.query, self.weight, self.head)


@dataclass(frozen=True)
class LongPassageParts(_Deep):
    """A passage longer than a page among the first k follows the shorter hits, the best part of
    it found further down taking its place. Before CollapseCovered, which would drop the part as
    covered by the passage."""

    tokens: int
    modes: frozenset[str] = HYBRID_ONLY

    @classmethod
    def of(cls, config: SearchConfig) -> LongPassageParts | None:
        long = config.stages.long_passages
        return cls(long.tokens) if long.tokens and long.parts else None

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return rerank.long_passages_last(hits, self.tokens, ctx.k, parts=True, sizes=ctx.sizes)


@dataclass(frozen=True)
class CollapseCovered(_Deep):
    """Hits whose verses better hits already list are dropped (or, by share, moved back)."""

    min_new_share: float
    commentary_later: bool
    modes: frozenset[str] = ANY_MODE

    @classmethod
    def of(cls, config: SearchConfig) -> CollapseCovered | None:
        collapse = config.stages.collapse
        return cls(collapse.min_new_share, collapse.commentary_later) if collapse.on else None

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return rerank.collapse_covered(hits, self.min_new_share, self.commentary_later)


@dataclass(frozen=True)
class SpreadSources(_Deep):
    """One non-scripture source's hits past its first `per_source` follow the others; not when
    the caller asks for one kind, whose sources are all the page may hold."""

    per_source: int
    modes: frozenset[str] = HYBRID_ONLY

    @classmethod
    def of(cls, config: SearchConfig) -> SpreadSources | None:
        return None if config.stages.per_source is None else cls(config.stages.per_source)

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return hits if ctx.kind is not None else rerank.spread_sources(hits, self.per_source)


@dataclass(frozen=True)
class Mmr(_Deep):
    """Maximal marginal relevance: k hits chosen among the pool, each the most relevant least
    like those taken."""

    lam: float
    modes: frozenset[str] = ANY_MODE

    @classmethod
    def of(cls, config: SearchConfig) -> Mmr | None:
        return None if config.stages.mmr_lambda is None else cls(config.stages.mmr_lambda)

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return rerank.mmr(ctx.conn, ctx.table_name, hits, ctx.k, self.lam)


@dataclass(frozen=True)
class Truncate(_Page):
    """The first k: what the stages after it order is the page itself."""

    modes: frozenset[str] = ANY_MODE

    @classmethod
    def of(cls, config: SearchConfig) -> Truncate:
        return cls()

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return hits[:ctx.k]


@dataclass(frozen=True)
class PackPage(_Page):
    """The page holds `tokens` word pieces. With `pack`, a hit that would pass what is left of it
    follows the hits that still fit; without, only a hit longer than the whole page follows the
    others."""

    tokens: int
    pack: bool
    modes: frozenset[str] = HYBRID_ONLY

    @classmethod
    def of(cls, config: SearchConfig) -> PackPage | None:
        long = config.stages.long_passages
        return cls(long.tokens, long.pack_page) if long.tokens else None

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        if self.pack:
            return rerank.pack_page(hits, self.tokens)
        return rerank.long_passages_last(hits, self.tokens, ctx.k, sizes=ctx.sizes)


# The order the stages run in. The trained reranker reads the fused order first, so every stage
# after it shapes the page it chose. Parts take a long passage's place before collapsing could drop
# them as covered; spreading and MMR see the collapsed list; the page is packed from the k kept.
PIPELINE = (reranking.Rerank, QueryShare, LongPassageParts, CollapseCovered, SpreadSources, Mmr, Truncate, PackPage)


@lru_cache(maxsize=64)
def build(config: SearchConfig) -> tuple[Stage, ...]:
    """The stages `config` turns on for its mode, in PIPELINE's order (once per configuration)."""
    chosen = (kind.of(config) for kind in PIPELINE)
    return tuple(stage for stage in chosen if stage is not None and config.mode in stage.modes)


def pool_depth(stages: tuple[Stage, ...], k: int) -> int:
    """How many fused hits to read: as many as the deepest stage needs, and k at least."""
    return max((stage.depth(k) for stage in stages), default=k)


def run(stages: tuple[Stage, ...], hits: list[Hit], ctx: Context) -> list[Hit]:
    for stage in stages:
        hits = stage.apply(hits, ctx)
    return hits


def page(request: VersionRequest, ranked: list[tuple[str, float]], k: int | None = None) -> list[Hit]:
    """The first `k` (the request's by default) of the ranking, after the ranking stages."""
    conn, table_name, config, k = request.conn, request.table_name, request.config, k or request.k
    if config.stages.return_parents:
        ranked = rerank.parents_of(conn, table_name, ranked)
    pipeline = build(config)
    # Read as deep as the deepest stage looks: those that drop hits, move them back or choose
    # among them see more than k.
    hits = hits_by_id(conn, table_name, ranked[:pool_depth(pipeline, k)])
    return run(pipeline, hits, Context(conn, table_name, request.query, k, request.filters.given.kind))
