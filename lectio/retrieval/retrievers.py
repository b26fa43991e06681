"""The retrievers a ranked search fuses, in the order fusion takes their lists (ties keep it).

Adding a retriever is its module (a class that keeps to lectio.retrieval.retriever.Retriever and
declares its settings) and one line in RETRIEVERS: its settings appear in every SearchConfig under
the names it declares, `lectio eval --set` and `lectio search --set` take them, and the search
asks it for a list wherever its mode is the search's, when what it reads is there, and fuses that
list at the weight it gives."""

from __future__ import annotations

from functools import lru_cache

from lectio.retrieval.evidence import Evidence
from lectio.retrieval.feedback import Feedback
from lectio.retrieval.passages import Passages
from lectio.retrieval.retriever import Retriever
from lectio.retrieval.stage import Setting
from lectio.retrieval.titles import Titles
from lectio.retrieval.other_translations import OtherTranslations
from lectio.retrieval.vector import Vector
from lectio.retrieval.words import Words
from lectio.retrieval.xrefs import Xrefs

RETRIEVERS: tuple[type[Retriever], ...] = (
    Vector, Words, Titles, OtherTranslations, Feedback, Passages, Evidence, Xrefs)


def declared() -> tuple[Setting, ...]:
    """Every retriever's settings groups, in RETRIEVERS' order, each once."""
    found: dict[str, Setting] = {}
    for retriever in RETRIEVERS:
        for setting in retriever.settings:
            if found.setdefault(setting.name, setting) != setting:
                raise TypeError(f"two retrievers declare the setting {setting.name} differently")
    return tuple(found.values())


@lru_cache(maxsize=16)
def serving(mode: str) -> tuple[type[Retriever], ...]:
    """The retrievers that serve `mode`, in fusion's order (RETRIEVERS as the first search reads it)."""
    return tuple(retriever for retriever in RETRIEVERS if mode in retriever.modes)
