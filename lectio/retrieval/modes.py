"""The modes of a ranked search, in one place: the CLI's and the service's choices, the search's
own branches and the ranking stages' modes all read them from here."""

# How a ranked search retrieves: both retrievers fused, or one alone (the plain baselines).
HYBRID, VECTOR, LEXICAL = "hybrid", "vector", "lexical"
MODES = (HYBRID, VECTOR, LEXICAL)
# The modes a ranking stage may serve: every one, or the hybrid alone (vector and lexical stay
# the plain baselines they are).
ANY_MODE, HYBRID_ONLY = frozenset(MODES), frozenset({HYBRID})
