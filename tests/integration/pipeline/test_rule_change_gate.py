"""A chunking-rule change never goes live without the migration gate (issue 62, item 2).

With `index_after_batch` on, adding `rules: {paragraph_context_sentences: 1}` to a scripture
source and materializing it through `ingest_source` had `build_index` switch the re-chunked index
in ("switched v7 -> v8"), and `lectio run` did the same. Now a build asked to switch builds such a
version beside the live one and holds it back; the sensor hands it to `gate_candidate`, and
`lectio run` gates it itself, as `lectio migrate` does; only the gate's decision moves the live
index."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, RunsFilter, build_sensor_context

from assets.names import AWAITS_GATE_TAG, GATE_JOB, INDEX_JOB, INGEST_JOB, LAUNCHED_BY_TAG
from lectio.index import versions
from pipelines.batches import index_cursor
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env

pytestmark = [pytest.mark.slow, pytest.mark.network]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
QUERIES = FIXTURES / "queries" / "migration.jsonl"
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def sources_yaml(scripture_options: str = "") -> str:
    return (
        "sources:\n"
        "  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb, select: 'Philippians 4; John 3',\n"
        f"     translation: WEB, acl: [public]{scripture_options}}}\n"
        "  - {id: guide, kind: document, format: markdown, path: staff_guide.md, acl: ['group:staff']}\n"
    )


@pytest.fixture(scope="module")
def home(home_factory):
    with home_factory("lectio-rule-gate-home-", sources_yaml, [FIXTURES / "staff_guide.md"]) as home:
        from pipelines.runners import run_main

        assert run_main(home.settings, echo=lambda _: None).index["live"]
        yield home


def _live(home) -> str:
    with home.connect() as conn:
        return versions.live_version(conn)


def _tick(defs, cursor=None):
    return defs.resolve_sensor_def("index_after_batch").evaluate_tick(build_sensor_context(
        instance=DagsterInstance.get(), cursor=cursor, definitions=defs, resources=defs.resources))


def test_a_rule_change_from_the_ui_is_held_for_the_gate_and_switched_only_by_it(home, monkeypatch):
    # A UI run gates on the project's sets only (issue 63): here the fixture's one set is the project's.
    from lectio.evaluation import migration_gate

    monkeypatch.setattr(migration_gate, "QUERY_SETS_DIR", QUERIES.parent)
    monkeypatch.setattr(migration_gate, "DEFAULT_QUERY_SETS", (str(QUERIES),))
    live_before = _live(home)
    rules = home.sources("context-1", ", rules: {paragraph_context_sentences: 1}")
    prepare_dagster_env(home.use(rules), home.database)
    instance = DagsterInstance.get()
    defs = build_definitions(rules)
    since = index_cursor(time.time())
    assert defs.resolve_job_def(INGEST_JOB).execute_in_process(instance=instance, partition_key="web",
                                                               run_config=QUIET).success

    # The batch's index, as index_after_batch asks for it: built, not switched in.
    (request,) = _tick(defs, since).run_requests
    assert request.job_name == INDEX_JOB
    built = defs.resolve_job_def(INDEX_JOB).execute_in_process(
        instance=instance, run_config={**QUIET, **request.run_config}, tags=request.tags)
    metadata = built.asset_materializations_for_node("search_index")[0].metadata
    candidate = metadata["version"].value
    assert candidate != live_before and not metadata["live"].value and _live(home) == live_before
    assert metadata["live_index"].value == f"kept {live_before} live; {candidate} not switched in"
    assert metadata["awaits_gate"].value and metadata["rule_changes"].value.startswith("web: scripture-structural")
    assert "goes live only through the migration gate" in metadata["decision"].value
    assert instance.get_run_by_id(built.run_id).tags[AWAITS_GATE_TAG] == candidate

    # The sensor's next tick hands it to the gate, once.
    (gate,) = _tick(defs).run_requests
    assert gate.job_name == GATE_JOB and gate.run_config["ops"]["index_evaluation"]["config"]["candidate"] == candidate
    config = {**QUIET, **gate.run_config}
    gated = defs.resolve_job_def(GATE_JOB).execute_in_process(instance=instance, run_config=config, tags=gate.tags)
    decision = gated.output_for_node("live_index")
    assert decision["candidate"] == candidate and decision["decision"] in ("switch", "refuse")
    assert _live(home) == (candidate if decision["switched"] else live_before)
    assert not _tick(defs).run_requests


def test_lectio_run_gates_a_rule_change_itself(home, capsys, monkeypatch):
    from cli import main as cli

    live_before = _live(home)
    rules = home.sources("context-0", ", rules: {paragraph_context_sentences: 0}")
    monkeypatch.setenv("LECTIO_SOURCES", str(rules))  # `--sources` sets it for the process
    code = cli(["run", "--json", "--sources", str(rules)])
    report = json.loads(capsys.readouterr().out)
    index = report["index"]
    gate = index["gate"]
    assert gate["candidate"] == index["version"] != live_before and gate["live"] == live_before
    assert gate["decision"] in ("switch", "refuse") and index["live"] == gate["switched"]
    assert code == (0 if gate["passed"] else 1) and report["ok"] == gate["passed"]
    assert _live(home) == (index["version"] if gate["switched"] else live_before)
    assert index["decision"].startswith("the chunking rules changed, so the migration gate decided")
    gate_runs = DagsterInstance.get().get_run_records(filters=RunsFilter(job_name=GATE_JOB), limit=1)
    assert gate_runs and gate_runs[0].dagster_run.tags[LAUNCHED_BY_TAG] == "lectio run"

    # Run again with nothing changed: the same version, and the same verdict (a refused one is
    # gated again, as the sources file still asks for rules the live index was not built by).
    assert cli(["run", "--json", "--sources", str(rules)]) == code
    again = json.loads(capsys.readouterr().out)["index"]
    assert again["version"] == index["version"]

