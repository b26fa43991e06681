"""Fusion: by ranks alone at score power 0, and scaled by how close each hit's score is to its
list's best above it, so a far-ahead first place is not outvoted by a crowd of weaker signals."""

import pytest

from lectio.retrieval.fusion import fuse

# The quoted verse is first on both sides, far ahead of the vector side's next hit; a passage
# the commentators favour is close behind it on the lexical side only.
VECTOR = [("verse", 0.99), ("paragraph", 0.58), ("pericope", 0.55)]
LEXICAL = [("verse", 11.0), ("pericope", 10.6), ("paragraph", 10.1)]


def test_at_power_zero_fusion_is_reciprocal_rank_fusion():
    fused = dict(fuse([(1.0, VECTOR), (1.0, LEXICAL)], rrf_k=60))
    assert fused["verse"] == pytest.approx(2 / 61)
    assert fused["pericope"] == pytest.approx(1 / 63 + 1 / 62)


def test_a_first_place_far_ahead_is_not_outvoted_by_weaker_signals():
    """The citation prior multiplies fused scores after fusion (1.3 for a much-cited passage):
    by ranks it lifts the pericope over the verse both sides put first, not once scores count."""
    def first(power):
        fused = dict(fuse([(1.0, VECTOR), (1.0, LEXICAL)], rrf_k=60, score_power=power))
        return max(fused, key=lambda chunk: fused[chunk] * (1.3 if chunk == "pericope" else 1.0))

    assert first(0.0) == "pericope" and first(1.0) == "verse"


def test_a_close_field_fuses_as_by_ranks():
    close = [("a", 0.60), ("b", 0.59), ("c", 0.58)]
    by_ranks = [chunk for chunk, _ in fuse([(1.0, close), (1.0, list(reversed(close)))], rrf_k=60)]
    scaled = [chunk for chunk, _ in fuse([(1.0, close), (1.0, list(reversed(close)))], rrf_k=60, score_power=1.0)]
    assert scaled[0] == by_ranks[0] == "a" or scaled == by_ranks


def test_a_list_without_positive_scores_counts_by_ranks():
    assert fuse([(1.0, [("x", -0.2), ("y", -0.4)])], rrf_k=60, score_power=2.0)[0] == ("x", pytest.approx(1 / 61))


def _hit(chunk_id, refs, score, kind="scripture"):
    from lectio.retrieval.hits import Hit

    return Hit(chunk_id, score, kind=kind, refs=refs, translation="WEB")


def test_a_hit_adding_few_new_verses_follows_those_that_add_more():
    from lectio.retrieval.collapse import collapse_covered

    hits = [_hit("v2", ["r2"], 0.9), _hit("v3", ["r3"], 0.8),
            _hit("pericope", ["r1", "r2", "r3", "r4"], 0.7),  # half of it new
            _hit("v2-again", ["r2"], 0.6), _hit("v5", ["r5"], 0.5), _hit("v1", ["r1"], 0.4)]
    ids = lambda kept: [hit.chunk_id for hit in kept]
    assert ids(collapse_covered(hits)) == ["v2", "v3", "pericope", "v5"]
    # Above half new or nothing: the pericope moves after v1, which it no longer covers.
    assert ids(collapse_covered(hits, min_new_share=0.6)) == ["v2", "v3", "v5", "v1", "pericope"]
