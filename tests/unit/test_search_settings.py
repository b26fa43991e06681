"""`lectio eval --set NAME=VALUE`: any search setting for one evaluation, named by its dotted path
(or the flat name it had before settings were grouped), read as its setting's type."""

from dataclasses import replace

import pytest

from lectio.retrieval.config import ALIASES, SearchConfig, setting_types


def test_each_value_is_read_as_its_settings_type():
    config = SearchConfig.from_options(["vector.ef_search=300", "expansion.weight=0.5", "vector.expand=true",
                                        "stages.per_source=none", "topics.rows=verses+other"], mode="vector")
    default = SearchConfig()
    assert config == replace(default, mode="vector",
                             vector=replace(default.vector, ef_search=300, expand=True),
                             expansion=replace(default.expansion, weight=0.5),
                             stages=replace(default.stages, per_source=None),
                             topics=replace(default.topics, rows="verses+other"))
    assert SearchConfig.from_options([]) == SearchConfig()


def test_the_flat_names_still_name_their_settings():
    # Settings added after the grouping have only their dotted names.
    dotted_only = {path for path in setting_types() if path.startswith(
        ("evidence.", "paragraphs.", "stages.rerank.", "stages.learned_rank.", "questions.", "feedback.", "passages."))} | {"lexical.derived"}
    assert set(ALIASES.values()) | {"mode", "candidates", "word_study"} | dotted_only == set(setting_types())
    flat = SearchConfig.from_options(["ef_search=300", "query_share_weight=0.5", "per_source=none"])
    dotted = SearchConfig.from_options(["vector.ef_search=300", "stages.query_share.weight=0.5",
                                        "stages.per_source=none"])
    assert flat == dotted == SearchConfig.from_options(ef_search=300, query_share_weight=0.5, per_source=None)
    assert dotted.stages.query_share.depth == SearchConfig().stages.query_share.depth


def test_an_option_left_out_keeps_its_default_but_none_turns_off_what_none_can():
    config = SearchConfig.from_options(prominence_weight=None, mmr_lambda=None, per_source=None)
    assert config.fusion.prominence_weight == SearchConfig().fusion.prominence_weight
    assert config.stages.per_source is None and config.stages.mmr_lambda is None


@pytest.mark.parametrize("item, problem", [
    ("nope=1", "expected NAME=VALUE"),
    ("ef_search", "expected NAME=VALUE"),
    ("vector=1", "expected NAME=VALUE"),
    ("ef_search=many", "'many' is not of type int"),
    ("vector.expand=perhaps", "'perhaps' is not of type bool"),
    ("ef_search=none", "'none' is not of type int"),
])
def test_a_bad_setting_is_one_clear_line(item, problem):
    with pytest.raises(ValueError, match=problem) as refused:
        SearchConfig.from_options([item])
    assert repr(item) in str(refused.value) and "\n" not in str(refused.value)


def test_an_unknown_option_is_named():
    with pytest.raises(ValueError, match="unknown search setting 'nope'"):
        SearchConfig.from_options(nope=1)


def test_the_hybrid_alone_is_hybrid_whichever_way_its_mode_is_given():
    assert SearchConfig().hybrid and SearchConfig(mode="hybrid").hybrid
    assert not SearchConfig(mode="vector").hybrid and not SearchConfig.from_options(mode="lexical").hybrid
