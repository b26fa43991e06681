"""The retrievers as the search settings and fusion see them: each owns its settings, declared in
its own module; the settings gather exactly what the retrievers declare; modes are declared by
the retrievers, never compared inline where they propose."""

import dataclasses
import inspect

from lectio.retrieval import config, retrievers
from lectio.retrieval.config import SearchConfig, setting_types
from lectio.retrieval.modes import Mode


def test_each_retriever_owns_its_settings_and_the_search_settings_gather_them():
    declared = []
    for retriever in retrievers.RETRIEVERS:
        for setting in retriever.settings:
            assert setting.kind.__module__ == retriever.__module__, (retriever.__name__, setting.kind.__name__)
            declared.append(setting.name)
    fields = [f.name for f in dataclasses.fields(SearchConfig)]
    assert [name for name in fields if name in declared] == declared
    source = inspect.getsource(config)
    assert not [r.__name__ for r in retrievers.RETRIEVERS if f"class {r.__name__}" in source]
    assert not [s.kind.__name__ for s in retrievers.declared() if f"class {s.kind.__name__}" in source]
    # The names every door takes are the retrievers' groups, as before they were theirs.
    assert {"vector.weight", "lexical.k1", "titles.query_share", "feedback.weight", "passages.weight",
            "evidence.depth", "xrefs.depth"} <= set(setting_types())


def test_each_mode_asks_the_retrievers_that_serve_it():
    names = {mode: [r.name for r in retrievers.serving(mode)] for mode in Mode}
    assert names[Mode.VECTOR] == ["vector", "passages"]
    assert names[Mode.LEXICAL] == ["words", "titles"]
    assert names[Mode.HYBRID] == [r.name for r in retrievers.RETRIEVERS]


def test_no_retriever_compares_the_mode_inline():
    """A retriever's modes are its declaration: where it proposes, it never asks the mode again."""
    for retriever in retrievers.RETRIEVERS:
        source = inspect.getsource(inspect.getmodule(retriever))
        assert ".hybrid" not in source and "Mode." not in source and ".embeds" not in source, retriever.__name__
