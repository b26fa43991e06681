"""What a retriever is, and what the retrievers of one search have proposed so far.

A retriever is one class that owns its settings (each a group of the search settings, declared in
`settings`), says which modes it serves, what it reads before it can propose (`reads`), how much
its list weighs in a fusion (`weight`) and what it proposes (`propose`): a list of (chunk_id,
score), best first, read as the caller, or None where it has nothing to say for this search.
lectio.retrieval.retrievers lists them in the order fusion takes their lists; adding one is its
module and one line there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Protocol

from psycopg import sql

from lectio.retrieval.stage import Setting

if TYPE_CHECKING:
    from lectio.retrieval.config import SearchConfig
    from lectio.retrieval.lexical import LexicalIndex
    from lectio.retrieval.request import VersionRequest

Ranking = list[tuple[str, float]]  # (chunk_id, score), best first

# What a retriever reads before it proposes, in the order a search gets them: the query alone;
# the other retrievers' lists; the first page of the search (a callable that ranks it on first
# use); the fused order; or nothing it reads itself, its list handed to the search by the ranking
# that made it (lectio.retrieval.ranking).
QUERY, LISTS, PAGE, FUSED, GIVEN = "query", "lists", "page", "fused", "given"


class Unfiltered(list):
    """A list walked over more rows than the search's filters admit, so that each row it keeps
    weighs in fusion as it does in the unfiltered search; `outside` names the rows fusion drops
    once it has fused."""

    def __init__(self, ranking: Ranking, outside: frozenset[str]):
        super().__init__(ranking)
        self.outside = outside


@dataclass
class Proposals:
    """What the retrievers proposed for one query, before fusion, by retriever name (a retriever
    that said nothing has no entry): fusing them again under other weights reads nothing twice."""

    vector: Any  # the query's embedding (None where no retriever embeds)
    where: sql.Composable  # the rows the search may read, and its parameters (Scope.where)
    params: dict
    index: LexicalIndex  # the lexical side's, which the citation prior reads too
    extra: str = ""  # the query's expansion words (lectio.retrieval.expansion)
    narrowed: bool = False  # whether the rows ranked were narrowed beyond the search's filters
    lists: dict[str, Ranking] = field(default_factory=dict)
    # What a retriever read once for itself and another (the lexical side's words and titles).
    shared: dict[str, Any] = field(default_factory=dict)

    def listed(self, name: str) -> Ranking | None:
        return self.lists.get(name)


class Retriever(Protocol):
    name: ClassVar[str]  # its list's name in fusion and in what fusion remembers (Signals)
    settings: ClassVar[tuple[Setting, ...]]  # groups of the search settings, each under its name
    modes: ClassVar[frozenset[str]]
    reads: ClassVar[str]  # QUERY, LISTS, PAGE, FUSED or GIVEN
    # Whether it runs beside the lexical side, on the search's second connection where it has one.
    beside: ClassVar[bool]

    @classmethod
    def weight(cls, config: SearchConfig, topic: bool) -> float:
        """Its list's weight in a fusion (in a topic's second fusion where `topic`); 0 leaves it out."""

    @classmethod
    def propose(cls, request: VersionRequest, found: Proposals, seen: Ranking | Callable[[], Ranking] | None = None
                ) -> Ranking | None:
        """Its list for `request`, given what the search has `found` so far and, for a retriever
        that reads the first page or the fused order, that `seen` (the first page as a callable,
        ranked only if asked); None where it proposes nothing."""


class Declared:
    """What most retrievers share: proposing from the query, on the search's own connection, at
    the `weight` of the first settings group they declare."""

    settings: ClassVar[tuple[Setting, ...]] = ()
    reads: ClassVar[str] = QUERY
    beside: ClassVar[bool] = False

    @classmethod
    def weight(cls, config: SearchConfig, topic: bool) -> float:
        return getattr(config, cls.settings[0].name).weight
