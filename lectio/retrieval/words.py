"""The lexical retriever: BM25 over the chunks' words (with the query's expansion words and, where
asked, the derivations the stemmer keeps apart), from the version's lexical index
(lectio.retrieval.lexical): names and rare words, which vectors blur."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from lectio.index import bm25
from lectio.retrieval.expansion import derived_forms
from lectio.retrieval.modes import WORD_MODES
from lectio.retrieval.retriever import Declared, Proposals, Ranking
from lectio.retrieval.stage import Setting

if TYPE_CHECKING:
    from lectio.retrieval.config import SearchConfig
    from lectio.retrieval.lexical import Proposals as Matched
    from lectio.retrieval.request import VersionRequest


@dataclass(frozen=True)
class LexicalSettings:
    weight: float = 1.0  # the BM25 list's weight in fusion
    k1: float = bm25.K1
    b: float = bm25.B
    # BM25 on versions with postings (lectio.index.postings): each query word's best
    # `depth` postings are read and the best `rescored` chunks among them scored in
    # full. Chosen by fidelity to scoring every matching chunk, on the theology dev part
    # (benchmarks/search_latency.py reports the overlap), not by any retrieval score.
    depth: int = 4000
    rescored: int = 400
    # BM25 from the version's lexical mirror (lectio.index.mirror): every matching chunk scored
    # in process, the best confirmed under row-level security. Off, or where the mirror cannot
    # apply a filter, the postings above are read in SQL.
    mirror: bool = True
    expand: bool = True  # match the query's expansion words too (ExpansionSettings)
    # Match the other derivations of the query's words the stemmer keeps apart, as the query's own
    # ("justification" also matches "justified"; lectio.retrieval.expansion.derived_forms).
    derived: bool = False


class Words(Declared):
    """BM25 over the chunks' words."""

    name: ClassVar[str] = "words"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("lexical", LexicalSettings),)
    modes: ClassVar[frozenset[str]] = WORD_MODES

    @classmethod
    def weight(cls, config: SearchConfig, topic: bool) -> float:
        # A one-word topic is a word the verses use: its second fusion weighs the words more.
        return config.topics.lexical_weight if topic else config.lexical.weight

    @classmethod
    def propose(cls, request: VersionRequest, found: Proposals, seen=None) -> Ranking:
        return matched(request, found).words


def matched(request: VersionRequest, found: Proposals) -> Matched:
    """The lexical side's words and titles for the query, read once for both retrievers in one
    read under row-level security."""
    if "lexical" not in found.shared:
        query, config = request.query, request.config
        own = " ".join([query, *derived_forms(query)]) if config.lexical.derived else query
        found.shared["lexical"] = found.index.proposals(own, found.extra if config.lexical.expand else "", config)
    return found.shared["lexical"]
