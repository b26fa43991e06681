"""What the UI's catalog shows of each asset lectio materializes: its kinds (the storage and
library it lives in, as icons on the lineage) and who answers for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey

from assets.source_assets import OWNERS, SOURCE_INPUTS
from pipelines.definitions import build_definitions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture()
def graph(tmp_path, monkeypatch):
    monkeypatch.setenv("LECTIO_HOME", str(tmp_path / "home"))
    return build_definitions(FIXTURES / "sources.yaml").resolve_asset_graph()


def test_every_materialized_asset_has_kinds_and_owners(graph):
    materialized = [key for key in graph.materializable_asset_keys]
    assert len(materialized) >= 6
    for key in materialized:
        node = graph.get(key)
        assert node.kinds, f"{key.to_user_string()} has no kinds"
        assert list(node.owners) == OWNERS, key.to_user_string()
    assert SOURCE_INPUTS not in {key.to_user_string() for key in materialized}


def test_the_observed_source_asset_has_a_kind_and_owners_like_the_others(graph):
    node = graph.get(AssetKey(SOURCE_INPUTS))
    assert node.is_observable and node.kinds == {"python"} and list(node.owners) == OWNERS


def test_a_build_that_reuses_an_older_version_says_so_rather_than_looking_like_a_rollback():
    from assets.index import live_change

    assert live_change("v4", "v3", "v3", reused=True).startswith("switched v4 -> v3: this build's chunks are exactly")
    assert live_change("v3", "v4", "v4") == "switched v3 -> v4"
    assert live_change("v4", "v4", "v4", reused=True) == "kept v4 live (this build's version)"
