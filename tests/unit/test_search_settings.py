"""`lectio eval --set FIELD=VALUE`: any search setting for one evaluation, read as its field's type."""

import pytest

from lectio.retrieval.config import SearchConfig, configured


def test_each_value_is_read_as_its_fields_type():
    config = configured(["ef_search=300", "expansion_weight=0.5", "expand_vector=true", "per_source=none",
                         "topic_rows=verses+other"], mode="vector")
    assert config == SearchConfig(mode="vector", ef_search=300, expansion_weight=0.5, expand_vector=True,
                                  per_source=None, topic_rows="verses+other")
    assert configured([]) == SearchConfig()


@pytest.mark.parametrize("item, problem", [
    ("nope=1", "expected FIELD=VALUE"),
    ("ef_search", "expected FIELD=VALUE"),
    ("ef_search=many", "'many' is not of type int"),
    ("expand_vector=perhaps", "'perhaps' is not of type bool"),
    ("ef_search=none", "'none' is not of type int"),
])
def test_a_bad_setting_is_one_clear_line(item, problem):
    with pytest.raises(ValueError, match=problem) as refused:
        configured([item])
    assert repr(item) in str(refused.value) and "\n" not in str(refused.value)
