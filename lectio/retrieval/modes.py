"""The modes of a ranked search, in one place: the CLI's and the service's choices, the search's
own branches and the ranking stages' modes all read them from here."""

from enum import StrEnum


class Mode(StrEnum):
    """How a ranked search retrieves: both retrievers fused, or one alone (the plain baselines).
    A Mode is its name as a string, so reports, responses and settings files carry the word."""

    HYBRID = "hybrid"
    VECTOR = "vector"
    LEXICAL = "lexical"


MODES = tuple(Mode)
# The modes a ranking stage or a retriever may serve: every one, or the hybrid alone (vector and lexical stay
# the plain baselines they are).
ANY_MODE, HYBRID_ONLY = frozenset(MODES), frozenset({Mode.HYBRID})
# The modes that embed the query and the modes that match its words: every retriever serves one
# of these or the hybrid alone.
EMBEDDING_MODES, WORD_MODES = frozenset({Mode.HYBRID, Mode.VECTOR}), frozenset({Mode.HYBRID, Mode.LEXICAL})
