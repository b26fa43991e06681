"""The titles retriever: pericopes whose title the query names ("the Lord's Prayer", "crossing the
Red Sea"), read with the words in one read of the lexical index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from lectio.retrieval.modes import WORD_MODES
from lectio.retrieval.retriever import Declared, Proposals, Ranking
from lectio.retrieval.stage import Setting
from lectio.retrieval.words import matched

if TYPE_CHECKING:
    from lectio.retrieval.request import VersionRequest


@dataclass(frozen=True)
class TitleSettings:
    """Named passages ("the Lord's Prayer", "crossing the Red Sea") match pericope titles: most of
    the title's words are in the query, and at least `query_share` of the query's words are in
    the title."""

    weight: float = 1.0
    # At a half, one common word of two ("son" of "the prodigal son") matched a title ("Aaron's
    # Sons") and outranked the story; 0.6 was chosen on the theology set's dev part over 0.5, 0.75
    # and 1 (see docs/results.md).
    query_share: float = 0.6


class Titles(Declared):
    """Pericopes the query names by their title."""

    name: ClassVar[str] = "titles"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("titles", TitleSettings),)
    modes: ClassVar[frozenset[str]] = WORD_MODES


    @classmethod
    def propose(cls, request: VersionRequest, found: Proposals, seen=None) -> Ranking | None:
        return matched(request, found).titles if request.config.titles.weight else None
