"""Short topics ("plummet", "bishop"): which queries a search answers as one, fused again with
their words weighing more (lectio.retrieval.fusion) or ranked again over verses. A topic wants the
verses that use its word, and one word's vector is vague."""

from __future__ import annotations

from typing import TYPE_CHECKING

from psycopg import sql

from lectio.retrieval import shape

if TYPE_CHECKING:
    from lectio.retrieval.config import SearchConfig
    from lectio.retrieval.scope import Scope

# The rows a topic is answered from: scripture as verses only, with or without the other kinds.
TOPIC_ROWS = {
    "verses": sql.SQL("granularity = 'verse'"),
    "verses+other": sql.SQL("(kind <> 'scripture' OR granularity = 'verse')"),
}


def topic_shaped(query: str, config: SearchConfig, filters: Scope) -> bool:
    """A short query, as its words alone tell (`query` read by lectio.retrieval.query_text). A
    filter only narrows the rows that may answer it and never turns the topic path off, but for a
    kind other than scripture: no verse is left for the topic's words to find."""
    if filters.given.kind not in (None, "scripture") or not config.topics.words:
        return False
    if config.topics.rows == "all" and not config.hybrid:
        return False  # fused again in a hybrid only
    return shape.query_shape(query, config.topics.words) == shape.TOPIC


def fused_again(query: str, config: SearchConfig, filters: Scope) -> bool:
    """Whether a topic-shaped query is fused again from its candidates (not read from other rows)."""
    return config.topics.rows == "all" and topic_shaped(query, config, filters)
