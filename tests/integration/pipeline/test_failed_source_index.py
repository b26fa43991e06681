"""A failed source never freezes the index silently (issue 37, item 1). Runs as the UI and the
daemon make them, through Dagster's APIs: ingest runs of partitions, the index_after_batch
sensor's tick, the build_index run it requests. A source whose ingest failed keeps its last good
chunks (the live version's), the other sources' new chunks go live, and the failure is loud: the
search_index check `every_source_indexed` fails (ERROR) naming the source and why, the run says
so in a tag and its log, and alert_on_failed_checks sends it. Never carried: a source whose ACL
the sources file has narrowed since (the revocation rule still holds).

Before the fix the build went green, kept the old version live and said so in its metadata alone."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from dagster import AssetCheckSeverity, DagsterInstance, build_sensor_context, in_process_executor

from assets.index import SOURCES_CHECK
from lectio.index import versions
from pipelines.batches import index_cursor
from pipelines.sensors.index_after_batch import INDEX_SENSOR_INTERVAL
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env
from assets.names import EMBED_POOL, FAILED_TAG, INDEX_JOB, INDEX_POOL, INGEST_JOB, LAUNCHED_BY_TAG

pytestmark = [pytest.mark.slow, pytest.mark.network]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def sources_yaml(notes_file: str = "alice.jsonl", notes_acl: str = "'user:alice'", extra: str = "") -> str:
    return (
        "sources:\n"
        "  - {id: guide, kind: document, format: markdown, path: staff_guide.md, acl: ['group:staff']}\n"
        f"  - {{id: notes-alice, kind: notes, format: notes-jsonl, path: {notes_file}, acl: [{notes_acl}]}}\n"
        "  - {id: rota, kind: document, format: text, path: rota.txt, acl: [public]}\n" + extra
    )


# The case: one entry's file is gone, another entry is malformed (an unknown format).
BROKEN = "  - {id: odd, kind: document, format: docx, path: rota.txt, acl: [public]}\n"


@pytest.fixture(scope="module")
def home(home_factory):
    with home_factory("lectio-failed-source-home-", sources_yaml,
                      [FIXTURES / "notes" / "alice.jsonl", FIXTURES / "staff_guide.md"]) as home:
        (home.folder / "rota.txt").write_text("Volunteer rota\n\nSunday: tea and coffee after the service.\n")
        from pipelines.runners import run_main

        first = run_main(home.use(home.sources("base")), echo=lambda _: None)
        assert first.index["live"], first.index
        yield home


def _tick(defs, name: str, instance, cursor=None):
    return defs.resolve_sensor_def(name).evaluate_tick(
        build_sensor_context(instance=instance, cursor=cursor, definitions=defs, resources=defs.resources))


def _ui_ingest_then_index(home, sources: Path, partitions: list[str]):
    """Ingest runs of `partitions` as the UI launches them, then the index run the sensor asks for."""
    prepare_dagster_env(home.use(sources), home.database)
    instance = DagsterInstance.get()
    since = index_cursor(time.time())
    defs = build_definitions(sources)
    for key in partitions:
        defs.resolve_job_def(INGEST_JOB).execute_in_process(run_config=QUIET, instance=instance, partition_key=key,
                                                            raise_on_error=False)
    (request,) = _tick(defs, "index_after_batch", instance, since).run_requests
    result = defs.resolve_job_def(INDEX_JOB).execute_in_process(
        run_config={**QUIET, **request.run_config}, instance=instance, tags=request.tags)
    return defs, instance, request, result


def _source_rows(home, version: str) -> dict[str, list[str]]:
    with home.connect() as conn:
        table = versions.get_version(conn, version).table_name
        rows = conn.execute(f'SELECT source_id, text FROM "{table}" ORDER BY chunk_id').fetchall()
    found: dict[str, list[str]] = {}
    for sid, text in rows:
        found.setdefault(sid, []).append(text)
    return found


def _check(result):
    (evaluation,) = [e.event_specific_data for e in result.all_events
                     if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.event_specific_data.check_name == SOURCES_CHECK]
    return evaluation


def test_a_failed_source_keeps_its_chunks_and_the_rest_goes_live_loudly(home, monkeypatch):
    with home.connect() as conn:
        live_before = versions.live_version(conn)
    before = _source_rows(home, live_before)
    (home.folder / "rota.txt").write_text("Volunteer rota\n\nSunday: tea, coffee and a new urn in the hall.\n")
    broken = home.sources("broken", notes_file="gone.jsonl", extra=BROKEN)
    log_file = home.folder / "alerts.jsonl"
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(log_file))
    prepare_dagster_env(home.use(broken), home.database)
    defs = build_definitions(broken)
    watching = _tick(defs, "alert_on_failed_checks", DagsterInstance.get()).cursor  # alerts from now on

    defs, instance, request, result = _ui_ingest_then_index(home, broken, ["rota", "notes-alice", "odd"])
    assert request.run_config["ops"]["search_index"]["config"]["failed_sources"] == ["notes-alice", "odd"]
    built = result.asset_materializations_for_node("search_index")[0].metadata
    version = built["version"].value

    # The rest moved on: the new rota text is what is live now …
    assert built["live"].value and version != live_before
    assert built["live_index"].value == f"switched {live_before} -> {version}"
    with home.connect() as conn:
        assert versions.live_version(conn) == version
    now = _source_rows(home, version)
    assert any("new urn" in text for text in now["rota"])
    # … and the failed source kept its last good chunks, exactly those that were live.
    assert now["notes-alice"] == before["notes-alice"]
    assert "odd" not in now and now["guide"] == before["guide"]

    # Loud: a failed ERROR check naming each source and why, a tag and error lines on the run.
    check = _check(result)
    assert not check.passed and check.severity == AssetCheckSeverity.ERROR
    assert "notes-alice" in check.description and "gone.jsonl" in check.description
    assert f"kept its last good chunks ({len(before['notes-alice'])}) from {live_before}" in check.description
    assert "odd" in check.description and "docx" in check.description
    run = instance.get_run_by_id(result.run_id)
    assert run.tags[FAILED_TAG] == "notes-alice, odd"
    errors = [e.message for e in instance.all_logs(result.run_id) if e.level >= 40 and "source notes-alice failed" in e.message]
    assert errors, "the run's log names the failed source"
    # Each source with nothing stored is one line in lectio's words, not Dagster's own.
    messages = [e.message for e in instance.all_logs(result.run_id)]
    assert not [m for m in messages if "allow_missing_partitions" in m]
    assert [m for m in messages if m.startswith("source 'odd': nothing stored from a successful run")]

    _tick(defs, "alert_on_failed_checks", instance, watching)
    alerts = [json.loads(line) for line in log_file.read_text().splitlines()]
    (alert,) = [a for a in alerts if a["check"] == SOURCES_CHECK]
    assert alert["kind"] == "check_failed" and alert["asset"] == "search_index" and alert["run_id"] == result.run_id
    assert "notes-alice" in alert["message"] and "odd" in alert["message"]


def _source_alerts(log_file: Path) -> list[dict]:
    lines = log_file.read_text().splitlines() if log_file.exists() else []
    return [a for a in map(json.loads, lines) if a["check"] == SOURCES_CHECK]


def test_a_source_still_broken_stays_named_and_alerts_once_until_it_is_fixed(home, monkeypatch):
    """Issue 52, item 1: a later batch that does not touch the broken sources still judges them by
    their own latest results (named, their chunks carried, not taken as current), alerts no
    second time for the same failed sources, and once they are fixed and fail again, alerts
    again."""
    log_file = home.folder / "alerts.jsonl"
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(log_file))
    broken = home.sources("broken", notes_file="gone.jsonl", extra=BROKEN)
    watching = _tick(build_definitions(broken), "alert_on_failed_checks", DagsterInstance.get()).cursor
    defs, instance, _, _ = _ui_ingest_then_index(home, broken, ["notes-alice", "odd"])
    watching = _tick(defs, "alert_on_failed_checks", instance, watching).cursor
    sent = len(_source_alerts(log_file))
    assert sent >= 1

    (home.folder / "rota.txt").write_text("Volunteer rota\n\nSunday: the choir's tea after the carol service.\n")
    defs, instance, request, result = _ui_ingest_then_index(home, broken, ["rota"])
    assert request.run_config["ops"]["search_index"]["config"]["failed_sources"] == []  # this batch's own runs
    check = _check(result)
    assert not check.passed and "notes-alice" in check.description and "gone.jsonl" in check.description
    assert "odd" in check.description
    watching = _tick(defs, "alert_on_failed_checks", instance, watching).cursor
    assert len(_source_alerts(log_file)) == sent  # the same sources failed: already said

    fixed = home.sources("fixed")
    defs, instance, _, result = _ui_ingest_then_index(home, fixed, ["notes-alice"])
    assert _check(result).passed
    watching = _tick(defs, "alert_on_failed_checks", instance, watching).cursor
    defs, instance, _, result = _ui_ingest_then_index(home, broken, ["notes-alice", "odd"])
    assert not _check(result).passed
    _tick(defs, "alert_on_failed_checks", instance, watching)
    assert len(_source_alerts(log_file)) == sent + 1  # back after a pass: news again


def test_a_narrowed_acl_is_never_carried(home):
    """The notes' file is gone and its ACL narrowed meanwhile: the live version shows them wider
    than the file allows now, so they are not carried (and that version is revoked)."""
    with home.connect() as conn:
        live_before = versions.live_version(conn)
    assert "notes-alice" in _source_rows(home, live_before)
    narrowed = home.sources("narrowed", notes_file="gone.jsonl", notes_acl="'user:nobody'")
    _, _, _, result = _ui_ingest_then_index(home, narrowed, ["notes-alice"])
    built = result.asset_materializations_for_node("search_index")[0].metadata
    assert built["live"].value
    assert "notes-alice" not in _source_rows(home, built["version"].value)
    check = _check(result)
    assert not check.passed and "not carried from" in check.description
    assert "which the sources file no longer allows" in check.description
    with home.connect() as conn:
        assert versions.get_version(conn, live_before).status == "revoked"


def test_the_index_runs_in_one_process_in_a_pool_of_one(home):
    """Item 4 and 10: build_index on the in-process executor, search_index in the index pool,
    which dagster.yaml limits to one run at a time, and the sensor reacting within seconds."""
    prepare_dagster_env(home.settings, home.database)
    instance = DagsterInstance.get()
    defs = build_definitions(home.settings.sources_file)
    assert defs.resolve_job_def(INDEX_JOB).executor_def is in_process_executor
    assert defs.resolve_assets_def("search_index").op.pool == INDEX_POOL
    # The embedding step holds a pool of its own (the queue honouring it: test_ui_path.py).
    assert defs.resolve_assets_def("embeddings").op.pool == EMBED_POOL != INDEX_POOL
    pools = instance.get_concurrency_config().pool_config
    assert pools.default_pool_limit == 1 and pools.pool_granularity.value == "run"
    # Under the sensor daemon's 5 s loop, so that no pass skips it (ticks 10 s apart, measured).
    assert defs.resolve_sensor_def("index_after_batch").minimum_interval_seconds == INDEX_SENSOR_INTERVAL < 5


def test_lectio_run_follows_the_same_rule(home, monkeypatch, capsys):
    """`lectio run` carries a failed source's last good chunks as the UI's builds do: the rest goes
    live, and the failure is loud (exit status 1, one line per failed source)."""
    from cli import main as cli

    monkeypatch.setenv("LECTIO_SOURCES", str(home.settings.sources_file))  # `--sources` sets it for the process
    assert cli(["run", "--json", "--sources", str(home.settings.sources_file)]) == 0
    live_before = json.loads(capsys.readouterr().out)["index"]["version"]
    before = _source_rows(home, live_before)
    (home.folder / "rota.txt").write_text("Volunteer rota\n\nSunday: the Advent rota is on the board.\n")
    broken = home.sources("broken-cli", notes_file="gone.jsonl", extra=BROKEN)

    assert cli(["run", "--json", "--sources", str(broken)]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert {s["source_id"] for s in report["sources"] if not s["ok"]} == {"notes-alice", "odd"}
    index = report["index"]
    assert index["ok"] and index["live"] and index["version"] != live_before, index
    assert index["live_index"] == f"switched {live_before} -> {index['version']}"
    assert "kept its last good chunks" in index["decision"] and index["failed_sources"] == "notes-alice, odd"
    now = _source_rows(home, index["version"])
    assert any("Advent" in text for text in now["rota"]) and now["notes-alice"] == before["notes-alice"]
    lines = captured.err.strip().splitlines()
    assert len(lines) == 2 and "notes-alice" in lines[0] and "gone.jsonl" in lines[0] and "odd" in lines[1], lines
    # Its runs say where they came from (Dagster's own "Launched by" reads "Manually launched").
    instance = DagsterInstance.get()
    for run_id in [index["run_id"], *(s["run_id"] for s in report["sources"] if not s["reused"])]:
        assert instance.get_run_by_id(run_id).tags[LAUNCHED_BY_TAG] == "lectio run"
