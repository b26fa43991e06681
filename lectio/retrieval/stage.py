"""What a ranking stage is. A stage is one class that owns its settings (declared in `settings`,
each a group or a value under the search setting `stages.`), says which modes it serves, how deep
into the fused hits it must look (`depth`, given k) and reshapes the hits (`apply`); `of` reads
its settings from a SearchConfig and answers None where they turn it off.
lectio.retrieval.pipeline lists the stages in the order they run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import ANY_MODE

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
    # What each retriever said of the fused hits (lectio.retrieval.signals), where the ranking
    # the page is read from kept it; the learned ranker reads it.
    signals: object = None


@dataclass(frozen=True)
class Setting:
    """One entry a stage adds under `stages.` in the search settings: a group of its own (`kind` a
    frozen dataclass of settings, at its defaults) or one value (`kind` its type as written, such
    as "int | None", and its `default`)."""

    name: str
    kind: type | str
    default: Any = None

    @property
    def annotation(self) -> str:
        return self.kind.__name__ if isinstance(self.kind, type) else self.kind

    def field(self):
        return field(default_factory=self.kind) if isinstance(self.kind, type) else field(default=self.default)


class Stage(Protocol):
    modes: frozenset[str]
    settings: ClassVar[tuple[Setting, ...]]

    @classmethod
    def of(cls, config) -> Stage | None:
        """The stage as the SearchConfig `config` sets it; None where its settings turn it off."""

    def depth(self, k: int) -> int:
        """How many fused hits this stage must see to give k."""

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]: ...


class Deep:
    """A stage that drops hits, moves them back, chooses among them or looks below the first k
    for one: it sees the pool past k."""

    def depth(self, k: int) -> int:
        return k * POOL_FACTOR


class PageOnly:
    """A stage that orders the first k alone."""

    def depth(self, k: int) -> int:
        return k


@dataclass(frozen=True)
class Truncate(PageOnly):
    """The first k: what the stages after it order is the page itself."""

    modes: frozenset[str] = ANY_MODE
    settings: ClassVar[tuple[Setting, ...]] = ()

    @classmethod
    def of(cls, config) -> Truncate:
        return cls()

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return hits[:ctx.k]
