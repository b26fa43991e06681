"""The rerank stage's place and its fusion with the fused order: first of the hybrid's stages
after the learned ranker (which reads what each retriever said of the fused order),
reading the reranker gated onto the searched version by default (none: it reads and changes
nothing), and a hit both
orders put first stays first."""

from __future__ import annotations

from lectio.retrieval import stages
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.hits import Hit
from lectio.retrieval.stage import Context
from lectio.retrieval.reranking import Rerank, fuse


def names(config: SearchConfig) -> list[str]:
    return [type(stage).__name__ for stage in stages.build(config)]


def test_the_reranker_runs_first_in_hybrids_only_and_reads_no_deeper_without_a_model():
    assert SearchConfig().stages.rerank.model == "active"
    assert SearchConfig().as_chosen_by({"stages.rerank.model": "m"}).stages.rerank.model == "m"
    assert names(SearchConfig())[:2] == ["LearnedRank", "Rerank"]
    default = stages.build(SearchConfig().as_chosen_by({}))  # a version the gate let no model into
    assert not {"LearnedRank", "Rerank"} & {type(stage).__name__ for stage in default}
    assert stages.pool_depth(default, 5) == 20  # what the long-passage stages read (k * 4), not the reranker's 20
    deeper = SearchConfig.from_options(["stages.rerank.depth=50"]).as_chosen_by({})
    assert stages.pool_depth(stages.build(deeper), 5) == 20
    assert "Rerank" not in names(SearchConfig.from_options(["stages.rerank.model="]))
    on = SearchConfig.from_options(["stages.rerank.model=latest", "stages.rerank.depth=30"])
    assert names(on) == names(SearchConfig())
    assert stages.pool_depth(stages.build(on), 5) == 30
    for mode in ("vector", "lexical"):
        assert "Rerank" not in names(SearchConfig.from_options(["stages.rerank.model=latest"], mode=mode))


def hits(n: int) -> list[Hit]:
    return [Hit(f"h{i}", 1.0 - i / 100) for i in range(n)]


def test_fusion_with_the_fused_order():
    head = hits(5)
    # The reranker's favourite (h3) rises; weight 0 leaves the fused order.
    assert [h.chunk_id for h in fuse(head, [0, 0.1, 0.2, 5.0, 0.3], 1.0)][0] in ("h0", "h3")
    assert [h.chunk_id for h in fuse(head, [0, 0.1, 0.2, 5.0, 0.3], 3.0)][0] == "h3"
    assert [h.chunk_id for h in fuse(head, [0, 0.1, 0.2, 5.0, 0.3], 0.0)] == [h.chunk_id for h in head]
    # Both put h0 first: it stays first whatever the weight.
    assert fuse(head, [9, 1, 2, 3, 4], 10.0)[0].chunk_id == "h0"
    fused = fuse(head, [0.5, 0.1, 0.2, 5.0, 0.3], 1.0)
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)


def test_the_stage_reorders_its_head_and_leaves_the_rest(monkeypatch):
    class Scorer:
        def score(self, query, texts, max_tokens):
            import numpy as np

            return np.array([float(len(t)) for t in texts])

    monkeypatch.setattr("lectio.reranker.model.loaded", lambda home, model: Scorer())
    given = [Hit(f"h{i}", 1.0, text="x" * (i + 1)) for i in range(6)]
    stage = Rerank("m", head=3, tokens=64, weight=5.0)
    ranked = stage.apply(given, Context(None, "t", "q", 2, kind=None))
    assert [h.chunk_id for h in ranked] == ["h2", "h1", "h0", "h3", "h4", "h5"]
