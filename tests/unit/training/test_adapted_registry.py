"""The adapted embedders are listed and found through the registry the rerankers and rankers use,
with the words a migration's refusal has always said, and in the folder the home has always had."""

import json

import pytest

from lectio.embedding.packaged import MODEL_NAME, adapted_dir
from lectio.training.embedder.registry import RECORD, REGISTRY, chosen, trained

ADAPTED = f"{MODEL_NAME}-adapted-0123456789ab"


def _adapted(home, ident, at):
    folder = adapted_dir(home) / ident
    folder.mkdir(parents=True)
    (folder / RECORD).write_text(json.dumps({"id": ident, "trained_at": at}))


def test_the_registry_lists_the_adapted_folder(tmp_path):
    assert REGISTRY.models_dir(tmp_path) == adapted_dir(tmp_path)
    _adapted(tmp_path, ADAPTED, "2026-01-01T00:00:00+00:00")
    _adapted(tmp_path, f"{MODEL_NAME}-adapted-ba9876543210", "2026-02-01T00:00:00+00:00")
    assert [r["id"] for r in trained(tmp_path)] == [f"{MODEL_NAME}-adapted-ba9876543210", ADAPTED]
    assert chosen(tmp_path, "latest") == f"{MODEL_NAME}-adapted-ba9876543210"
    assert chosen(tmp_path, ADAPTED) == ADAPTED
    assert chosen(tmp_path, "base") == MODEL_NAME


def test_what_is_not_there_is_said_as_before(tmp_path):
    with pytest.raises(ValueError, match=r"^no embedder has been adapted in .* \(lectio model adapt\)$"):
        chosen(tmp_path, "latest")
    _adapted(tmp_path, ADAPTED, "2026-01-01T00:00:00+00:00")
    for name in ("nothing-adapted", "../../etc"):
        with pytest.raises(ValueError, match=rf"^no adapted embedder '{name}' in .* \(adapted: {ADAPTED}\)$"):
            chosen(tmp_path, name)
