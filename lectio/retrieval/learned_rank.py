"""The learned-rank stage: a ranker trained on the labelled query sets' dev parts (lectio.ranker)
orders the first `depth` fused hits again, reading what each retriever said of each hit (the
Fused ranking's signals), what the hit is, and the query's shape.

Fusion weighs every list alike for every query; the ranker learns, from readers' own labelled
questions and topics, when a verse both sides found matters more than the vector's first guess,
or that a short question wants the verse a commentary names. Hybrid searches only: vector and
lexical stay the plain baselines they are. By default it reads the ranker the gate let into the
searched version (none: it reads and moves nothing); `record` computes the features and moves
nothing, as training reads them (lectio.ranker.features.recording)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from psycopg import sql

from lectio.ranker import features
from lectio.retrieval import shape
from lectio.retrieval.expansion import query_words
from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.reranking import fuse
from lectio.retrieval.signals import Signals
from lectio.retrieval.stage import Context, Setting
from lectio.settings import runtime_settings


@dataclass(frozen=True)
class LearnedRankSettings:
    """`model` names a ranker trained in the home (`lectio model rank`; "latest" for the newest),
    "active" for the one the gate let into the searched version (lectio.training.ranker.gate), "" for
    none. It orders the first `depth` fused hits again. `record` computes their features for a
    training run to read, and orders nothing (lectio.training.ranker.trainer). The trees' order is fused
    with the fused order's (reciprocal ranks, the trees weighing `weight` against its 1), as the
    reranker's is."""

    model: str = "active"
    depth: int = 100
    record: bool = False
    # Chosen on the dev parts' out-of-fold orders over the trees' order alone (which lost Nave's
    # budget recall beyond noise) and a weight of 2 (the same).
    weight: float = 1.0


@dataclass(frozen=True)
class LearnedRank:
    model: str
    head: int
    topic_words: int
    paragraph_words: int
    record: bool
    weight: float
    modes: frozenset[str] = HYBRID_ONLY
    settings: ClassVar[tuple[Setting, ...]] = (Setting("learned_rank", LearnedRankSettings),)
    trained: ClassVar[str] = "learned_rank.model"

    @classmethod
    def of(cls, config) -> LearnedRank | None:
        settings = config.stages.learned_rank
        if not settings.depth or not (settings.model or settings.record):
            return None
        return cls(settings.model, settings.depth, config.topics.words, config.paragraphs.words, settings.record,
                   settings.weight)

    def depth(self, k: int) -> int:
        # Without a ranker to read them, the stage reads no more hits than the page: a home whose
        # gate let none in ranks exactly as it did before there were any.
        return max(k, self.head) if self.record or _chosen(self.model) else k

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        chosen = _chosen(self.model)
        if ctx.signals is None or not (chosen or self.record):  # no ranker; or parents, no list's hits
            return hits
        recorder = features.recorder()
        head = hits[:self.head]
        rows = features.matrix(self._query(ctx.query), _hit_facts(head, ctx))
        if recorder is not None:
            recorder.append((rows, head))
        if not chosen:
            return hits
        from lectio.ranker import model

        scores = model.scores(model.find(runtime_settings().home, chosen), rows)
        return blend(head, scores.tolist(), self.weight) + hits[self.head:]

    def _query(self, query: str) -> features.QueryFacts:
        return features.QueryFacts(len(shape.content_words(query)), shape.asks(query),
                                   shape.query_shape(query, self.topic_words) == shape.TOPIC,
                                   shape.is_paragraph(query, self.paragraph_words))


def blend(head: list[Hit], scores: list[float], weight: float) -> list[Hit]:
    """`head` ordered by its fused order's reciprocal rank plus `weight` times the trees' (the
    reranker's fusion with the fused order, lectio.retrieval.reranking.fuse)."""
    return fuse(head, scores, weight)


def _chosen(model: str) -> str | None:
    """The ranker a setting names, None for none. "active" is made the searched version's choice
    at the door (lectio.retrieval.door); a stage that meets it unmade serves no version's search,
    and reads none."""
    return None if model in ("", "active") else model


def _hit_facts(hits: list[Hit], ctx: Context) -> list[features.HitFacts]:
    signals: Signals = ctx.signals
    ids = [hit.chunk_id for hit in hits]
    cosines = _cosines(ctx, signals.vector, ids)
    cited = signals.cited(ids) if signals.cited else {}
    best = max((hit.score for hit in hits), default=0.0)
    wanted = set(shape.content_words(ctx.query))
    return [features.HitFacts(
        fused_share=hit.score / best if best > 0 else 0.0, cosine=cosines.get(hit.chunk_id),
        cited=cited.get(hit.chunk_id, 0), granularity=hit.granularity, kind=hit.kind, refs=len(hit.refs or ()),
        characters=len(hit.own_text), query_share=len(wanted & set(query_words(hit.own_text))) / len(wanted) if wanted else 0.0,
        heard={name: (said.rank, said.share) for name, listed in signals.heard.items()
               if (said := listed.get(hit.chunk_id)) is not None})
        for hit in hits]


def _cosines(ctx: Context, vector, ids: list[str]) -> dict[str, float]:
    """Each hit's cosine to the query's vector, read from the index: a hit only the words found
    has no vector score in any list."""
    if vector is None or not ids:
        return {}
    rows = ctx.conn.execute(
        sql.SQL("SELECT chunk_id, 1 - (embedding <=> %s) FROM {} WHERE chunk_id = ANY(%s)").format(
            sql.Identifier(ctx.table_name)), [vector, ids]).fetchall()
    return {chunk_id: float(cosine) for chunk_id, cosine in rows}
