"""Short topics ("plummet", "bishop"): which queries a search answers as one, fused again with
their words weighing more (lectio.retrieval.fusion) or ranked again over verses. A topic wants the
verses that use its word, and one word's vector is vague."""

from __future__ import annotations

from typing import TYPE_CHECKING

from psycopg import sql

from lectio.retrieval.modes import HYBRID_ONLY

if TYPE_CHECKING:
    from lectio.retrieval.request import VersionRequest

# A topic is fused again in a hybrid only: the vector and lexical baselines stay plain.
FUSED_AGAIN_MODES = HYBRID_ONLY
# The rows a topic is answered from: scripture as verses only, with or without the other kinds.
TOPIC_ROWS = {
    "verses": sql.SQL("granularity = 'verse'"),
    "verses+other": sql.SQL("(kind <> 'scripture' OR granularity = 'verse')"),
}


def takes_topic_path(request: VersionRequest) -> bool:
    """Whether a query the router read as a short topic takes a topic's path in this search. A
    filter only narrows the rows that may answer it and never turns the path off, but for a kind
    other than scripture: no verse is left for the topic's words to find."""
    config = request.config
    if not request.topic or request.filters.given.kind not in (None, "scripture"):
        return False
    return config.topics.rows != "all" or config.mode in FUSED_AGAIN_MODES


def fused_again(request: VersionRequest) -> bool:
    """Whether a topic is fused again from its candidates (not read from other rows)."""
    return request.config.topics.rows == "all" and takes_topic_path(request)
