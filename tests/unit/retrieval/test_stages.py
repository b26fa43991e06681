"""The ranked search's stages: built once from the configuration, only those it turns on for its
mode, in the declared order, and the fused hits read as deep as the deepest of them looks."""

from __future__ import annotations

from lectio.retrieval import stages
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.hits import Hit
from lectio.retrieval.spread import SpreadSources
from lectio.retrieval.stage import Context, Truncate


def names(config: SearchConfig) -> list[str]:
    return [type(stage).__name__ for stage in stages.build(config)]


def test_the_hybrid_runs_every_stage_it_turns_on_in_the_declared_order():
    assert names(SearchConfig()) == ["LearnedRank", "Rerank", "QueryShare", "LongPassageParts", "CollapseCovered",
                                     "SpreadSources", "Truncate", "PackPage"]
    diverse = SearchConfig.from_options(mmr_lambda=0.5, pack_page=False)
    assert names(diverse) == ["LearnedRank", "Rerank", "QueryShare", "LongPassageParts", "CollapseCovered",
                              "SpreadSources", "Mmr", "Truncate", "PackPage"]
    assert not stages.build(diverse)[-1].pack  # only hits longer than the page follow
    assert stages.build(SearchConfig()) is stages.build(SearchConfig())  # built once per configuration


def test_the_baselines_keep_only_the_stages_every_mode_serves():
    assert names(SearchConfig.from_options(mode="vector")) == ["CollapseCovered", "Truncate"]
    plain = SearchConfig.from_options(mode="lexical", collapse_covered=False)
    assert names(plain) == ["Truncate"]
    assert stages.pool_depth(stages.build(plain), 10) == 10


def test_the_pool_is_as_deep_as_the_deepest_stage_looks():
    # The part of a long passage is looked for below the first k, with nothing else reranking.
    parts_only = SearchConfig.from_options(["stages.rerank.model=", "stages.learned_rank.model="],
                                           collapse_covered=False, per_source=None,
                                           query_share_weight=0)
    assert names(parts_only) == ["LongPassageParts", "Truncate", "PackPage"]
    assert stages.pool_depth(stages.build(parts_only), 5) == 20
    # Query share re-orders its first ten, whatever k.
    share_only = SearchConfig.from_options(collapse_covered=False, per_source=None, long_passage_tokens=0)
    assert stages.pool_depth(stages.build(share_only), 5) == 10


def test_a_stage_reads_the_hits_by_name_and_keeps_them_typed():
    hits = [Hit("a", 0.3, kind="notes", source_id="s", refs=[]), Hit("b", 0.2, kind="notes", source_id="s", refs=[]),
            Hit("c", 0.1, kind="scripture", refs=["r"])]
    spread = SpreadSources(1)
    context = Context(None, "t", "q", 2, kind=None)
    assert [hit.chunk_id for hit in spread.apply(hits, context)] == ["a", "c", "b"]
    # A caller asking for one kind sees its sources as ranked.
    assert spread.apply(hits, Context(None, "t", "q", 2, kind="notes")) == hits
    assert stages.run((spread, Truncate()), hits, context) == [hits[0], hits[2]]


def test_a_paragraph_keeps_whole_passages_under_its_own_prior_weight():
    paragraph = SearchConfig().for_paragraphs()
    assert "LongPassageParts" not in names(paragraph) and "PackPage" not in names(paragraph)
    assert paragraph.fusion.prominence_weight == SearchConfig().paragraphs.prominence_weight
    # Its own knobs, as any setting: `--set paragraphs.long_passage_tokens=1000` keeps the stages.
    kept = SearchConfig.from_options(["paragraphs.long_passage_tokens=1000"]).for_paragraphs()
    assert names(kept) == [name for name in names(SearchConfig()) if name != "LearnedRank"]
    # The learned ranker never learned from a paragraph: its page is the fused order's unless asked.
    assert "LearnedRank" not in names(paragraph)
    ranked = SearchConfig.from_options(["paragraphs.learned_rank=true", "paragraphs.long_passage_tokens=1000"])
    assert names(ranked.for_paragraphs()) == names(SearchConfig())


def test_each_stage_owns_its_settings_and_the_pipeline_gathers_them():
    """Adding a stage is one module and one line in PIPELINE: its settings are declared in the
    stage's own module, and `stages.` in the search settings is exactly what the stages declare."""
    import dataclasses
    import inspect

    from lectio.retrieval import config, pipeline

    declared = []
    for stage in pipeline.PIPELINE:
        for setting in stage.settings:
            if isinstance(setting.kind, type):
                assert setting.kind.__module__ == stage.__module__, (stage.__name__, setting.kind.__name__)
            declared.append(setting.name)
    fields = [f.name for f in dataclasses.fields(pipeline.StageSettings)]
    assert fields == list(dict.fromkeys(declared)) + ["return_parents"]
    # The search settings' module names no stage and none of their settings.
    source = inspect.getsource(config)
    assert not [s.__name__ for s in pipeline.PIPELINE if s.__name__ in source]
    assert not [name for name in pipeline.GROUPS if f"class {name}" in source]
