"""One search as the steps after routing see it: the caller's request with what was read of its
version (the chunk table, its layout, its model, the lexical mirror in the scope)."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from lectio.embedding.model import Embedder
from lectio.index.mirror import Mirror
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.scope import Scope

# With several translations indexed, one is preferred unless the caller names another.
DEFAULT_TRANSLATION = "WEB"


@dataclass(frozen=True)
class VersionRequest:
    """A SearchRequest with what was read of its version. A narrower search inside it (the
    lexicon entries of a word study, the evidence's unfiltered ranking) is a replace() of it."""

    conn: psycopg.Connection
    table_name: str  # the version's chunk table
    query: str
    k: int
    filters: Scope
    version: str
    config: SearchConfig
    embedder: Embedder | None  # the version's model; a reference is looked up, not embedded
    layout: int | None  # the version's INDEX_LAYOUT (lectio.index.tables)
    vector_conn: psycopg.Connection | None = None  # the vector side's, beside the lexical side on `conn`
    # The version's lexical mirror where this search ranks words with it (lectio.retrieval.lexical
    # .version_mirror); None to score BM25 in SQL.
    mirror: Mirror | None = None
    # What the vector side embeds where it differs from `query`: a question as asked, ranked
    # otherwise by its subject (lectio.retrieval.config.QuestionSettings).
    embedded: str | None = None
    # Whether the query reads as a question, with its question mark or without it
    # (lectio.retrieval.query_text.QueryText.question_form), as read of the query as typed: the
    # text ranked has lost both.
    question: bool = False
    # Whether the router read the text ranked as a short topic (lectio.retrieval.router.Plan).
    topic: bool = False

    @property
    def translation(self) -> str:
        """The translation the retrievers rank: the caller's, else the preferred one."""
        return self.filters.translation or DEFAULT_TRANSLATION
