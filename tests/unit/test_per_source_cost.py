"""A source's run costs the same whatever the number of sources: it parses the sources file at
most once per content and fingerprints, and observes, its own source alone. Each of N runs
parsing the file, fingerprinting every entry and writing N observations made a run over N sources
O(N²) (0.03 s × N per source, 29.5 s each at 1,000)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, DagsterEventType, DagsterInstance, define_asset_job

import lectio.sources
from assets.source_assets import SOURCE_INPUTS
from lectio.rulesets import registry
from pipelines.definitions import build_definitions

N = 40


@pytest.fixture()
def shared_file_sources(tmp_path, monkeypatch) -> Path:
    """N entries naming one small shared file, as in the issue."""
    monkeypatch.setenv("LECTIO_HOME", str(tmp_path / "home"))
    (tmp_path / "shared.md").write_text("# Note\n\nOne paragraph.\n")
    entries = "".join(f"  - {{id: doc-{i}, kind: document, format: markdown, path: shared.md, acl: [public]}}\n"
                      for i in range(N))
    path = tmp_path / "sources.yaml"
    path.write_text("sources:\n" + entries)
    return path


@pytest.fixture()
def counts(monkeypatch) -> dict[str, int]:
    """How many times the sources file is parsed and a source's inputs fingerprinted."""
    seen = {"parses": 0, "fingerprints": 0}
    lectio.sources._parse_text.cache_clear()

    def counted(name, real):
        def call(*args, **kwargs):
            seen[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(lectio.sources, "_entries", counted("parses", lectio.sources._entries))
    monkeypatch.setattr(registry, "input_fingerprint", counted("fingerprints", registry.input_fingerprint))
    return seen


def test_reading_each_source_parses_the_file_once(shared_file_sources, counts):
    ids = lectio.sources.source_ids(shared_file_sources)
    for source_id in ids:  # what raw_texts does in each source's run
        source, inputs = registry.source_and_inputs(shared_file_sources, shared_file_sources.parent, source_id, "m")
        assert source.id == source_id and inputs
    assert counts == {"parses": 1, "fingerprints": N}


def test_an_edited_file_is_parsed_again(shared_file_sources, counts):
    assert lectio.sources.source_ids(shared_file_sources)[-1] == f"doc-{N - 1}"
    shared_file_sources.write_text(shared_file_sources.read_text().replace(f"doc-{N - 1}", "renamed"))
    assert lectio.sources.source_ids(shared_file_sources)[-1] == "renamed"
    assert counts["parses"] == 2


def test_entries_handed_out_are_copies(shared_file_sources):
    lectio.sources.read_entry(shared_file_sources, "doc-0")["acl"].append("user:mallory")
    lectio.sources.read_entries(shared_file_sources)[0]["acl"].append("user:mallory")
    assert lectio.sources.load_source(shared_file_sources, "doc-0").acl == ("public",)


def test_a_sources_run_observes_and_fingerprints_its_own_source_alone(shared_file_sources, counts):
    defs = build_definitions(shared_file_sources)
    (inputs,) = [a for a in defs.assets if getattr(a, "key", None) == AssetKey(SOURCE_INPUTS)]
    job = define_asset_job("observe_one", selection=[SOURCE_INPUTS]).resolve(
        asset_graph=defs.resolve_asset_graph(), resource_defs=defs.resources)
    counts["fingerprints"] = 0
    with DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(instance=instance, partition_key="doc-7", resources=defs.resources)
        observed = [e.partition for e in result.all_events if e.event_type == DagsterEventType.ASSET_OBSERVATION]
    assert result.success and observed == ["doc-7"]
    assert counts == {"parses": 1, "fingerprints": 1}
