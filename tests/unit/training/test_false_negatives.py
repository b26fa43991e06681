"""Which of a batch's passages may not count against a query when the embedder is adapted."""

from __future__ import annotations

from lectio.training.embedder.adaptation import false_negatives
from lectio.training.pairs import Pair


def pair(query: str, positive: str, refs: tuple[str, ...]) -> Pair:
    return Pair("commentary:test", query, positive, ("n",), refs, "train")


def test_a_passage_that_may_be_right_is_masked_and_a_wrong_one_is_not():
    batch = [
        pair("the lord is my shepherd", "Psalm 23:1", ("ps_23_1",)),
        pair("still waters", "Psalm 23:2", ("ps_23_2",)),  # same chapter as the first
        pair("God so loved", "John 3:16", ("john_3_16",)),
        pair("for God so loved the world", "John 3:16", ("john_3_16",)),  # the same positive
    ]
    negatives = ["Romans 8:28", "John 3:16", "Psalm 23:1", "Genesis 1:1"]
    mask = false_negatives(batch, negatives)
    assert mask.shape == (4, 8)
    assert not mask.diagonal().any()  # a query's own positive is its target, never masked
    assert mask[0, 1] and mask[1, 0]  # another comment on the same chapter
    assert not mask[0, 2] and not mask[2, 0]  # another book: an honest in-batch negative
    assert mask[2, 3] and mask[3, 2]  # the same passage
    # Hard negatives: masked only where one is the query's own positive (mined from other chapters).
    assert mask[2, 5] and mask[3, 5] and mask[0, 6]
    assert not mask[0, 4] and not mask[0, 7] and not mask[1, 6]
