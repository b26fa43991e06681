"""An adapted model's name: what it is adapted from, where its weights are, and how a home keeps the
one its live index was switched to."""

from __future__ import annotations

import json

import pytest

from lectio.embedding import model, packaged
from lectio.embedding.packaged import MODEL_NAME

ADAPTED = f"{MODEL_NAME}-adapted-0123456789ab"


def test_an_adapted_name_names_its_packaged_base_and_nothing_else_passes():
    assert packaged.base_of(ADAPTED) == MODEL_NAME and packaged.is_adapted(ADAPTED)
    assert packaged.base_of(MODEL_NAME) == MODEL_NAME and not packaged.is_adapted(MODEL_NAME)
    for name in ("e5-small-adapted-0123456789ab", f"{MODEL_NAME}-adapted-0123", f"{MODEL_NAME}-adapted-XYZ456789abc",
                 f"../{MODEL_NAME}-adapted-0123456789ab"):
        assert not packaged.known(name), name
    assert packaged.release_of(ADAPTED) == packaged.ADAPTED_RELEASE
    choice = model.ModelChoice.of_id(f"{ADAPTED}@{packaged.ADAPTED_RELEASE}+bf16")
    assert (choice.name, choice.precision, choice.backend) == (ADAPTED, "bf16", "torch")


def test_weights_not_in_this_home_are_one_line_naming_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("LECTIO_HOME", str(tmp_path))
    with pytest.raises(ValueError, match=f"{ADAPTED}' is not in this home"):
        packaged.model_path(ADAPTED)
    folder = packaged.adapted_dir(tmp_path) / ADAPTED
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    assert packaged.model_path(ADAPTED) == folder


def test_the_home_follows_its_live_versions_model_and_the_setting_overrules_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LECTIO_HOME", str(tmp_path))
    monkeypatch.delenv("LECTIO_EMBED_MODEL", raising=False)
    assert packaged.home_choice() is None and model.configured_name() == MODEL_NAME
    packaged.follow_live(ADAPTED)
    assert packaged.home_choice() == ADAPTED and model.configured_name() == ADAPTED
    # The semantic splitter's boundaries never move with an adapted model.
    assert model.fp32_model().name == MODEL_NAME
    monkeypatch.setenv("LECTIO_EMBED_MODEL", MODEL_NAME)
    assert model.configured_name() == MODEL_NAME
    monkeypatch.delenv("LECTIO_EMBED_MODEL")
    packaged.follow_live(MODEL_NAME)  # a switch back to a packaged model's version
    assert packaged.home_choice() is None and model.configured_name() == MODEL_NAME
    # A record naming anything but an adapted model is not taken.
    (packaged.adapted_dir(tmp_path) / packaged.ACTIVE).write_text(json.dumps({"id": "../../etc"}))
    assert packaged.home_choice() is None


def test_a_bad_model_setting_is_one_line(monkeypatch):
    monkeypatch.setenv("LECTIO_EMBED_MODEL", "all-MiniLM-L6-v2-adapted-nothex")
    with pytest.raises(ValueError, match="LECTIO_EMBED_MODEL must be one of all-MiniLM-L6-v2 or a model adapted"):
        model.configured_name()
