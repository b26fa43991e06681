"""Alerts end to end: a failed asset check, the alert sensor, and real webhook and SMTP servers
started here on 127.0.0.1; the same failure seen twice is delivered once."""

from __future__ import annotations

import json
import socket
import sys
import threading
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    MaterializeResult,
    DagsterInstance,
    StaticPartitionsDefinition,
    asset,
    build_sensor_context,
    materialize,
)

from lectio.alerts import Alert, LogFileChannel, WebhookChannel, send_alerts
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env

UI = "http://dagster.example:3000"


@pytest.fixture()
def instance(settings, database):
    prepare_dagster_env(settings, database)
    return DagsterInstance.get()


@pytest.fixture()
def webhook():
    """A local HTTP server that keeps every JSON body POSTed to it."""
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(json.loads(body))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):  # keep pytest output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.received = received
    server.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    yield server
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def smtp():
    """A local SMTP server (aiosmtpd) that keeps every message it accepts."""

    class Inbox:
        def __init__(self):
            self.messages = []

        async def handle_DATA(self, server, session, envelope):
            self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content, policy=policy.default)))
            return "250 OK"

    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    inbox.port = controller.port
    yield inbox
    controller.stop()


@pytest.fixture()
def channels_env(monkeypatch, webhook, smtp, tmp_path):
    monkeypatch.setenv("LECTIO_ALERT_WEBHOOK_URL", webhook.url)
    monkeypatch.setenv("LECTIO_ALERT_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("LECTIO_ALERT_SMTP_PORT", str(smtp.port))
    monkeypatch.setenv("LECTIO_ALERT_EMAIL_FROM", "lectio@test.example")
    monkeypatch.setenv("LECTIO_ALERT_EMAIL_TO", "platform@test.example, oncall@test.example")
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(tmp_path / "alerts.jsonl"))
    monkeypatch.setenv("LECTIO_UI_URL", UI)
    return tmp_path / "alerts.jsonl"


# A partitioned asset with a check that fails for one source: the sensor reads the evaluation
# from the instance's event log exactly as it reads the quality checks of the real assets.
sources = StaticPartitionsDefinition(["good-source", "bad-source"])


@asset(partitions_def=sources, check_specs=[AssetCheckSpec("table_has_header", asset="price_table")])
def price_table(context):
    header = None if context.partition_key == "bad-source" else ["item", "price"]
    return MaterializeResult(
        check_results=[
            AssetCheckResult(
                passed=header is not None,
                description="a table chunk has no header row",
                metadata={"chunks_without_header": 0 if header else 1},
            )
        ]
    )


def _tick(defs, name, instance, cursor):
    """One tick of sensor `name`, with the resources (the database) its Definitions give it."""
    sensor = defs.resolve_sensor_def(name)
    return sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=cursor, definitions=defs,
                                                     resources=defs.resources))


def test_failed_check_alert_reaches_webhook_and_smtp_once(instance, channels_env, webhook, smtp, settings):
    defs, sensor = build_definitions(settings.sources_file), "alert_on_failed_checks"
    start = _tick(defs, sensor, instance, None).cursor  # the first tick starts watching from now
    result = materialize([price_table], partition_key="bad-source", instance=instance)
    run_id = result.run_id

    first = _tick(defs, sensor, instance, start)
    # The same failure again: a tick evaluated twice from the same cursor (its cursor update
    # lost to a daemon restart), then the next tick from the advanced cursor.
    _tick(defs, sensor, instance, start)
    _tick(defs, sensor, instance, first.cursor)

    posts = [p for p in webhook.received if p["alert"]["run_id"] == run_id]
    assert len(posts) == 1
    post = posts[0]
    assert "table_has_header" in post["text"] and "price_table" in post["text"] and "bad-source" in post["text"]
    assert f"{UI}/runs/{run_id}" in post["text"]
    assert post["blocks"][0]["type"] == "header"
    assert post["alert"]["check"] == "table_has_header" and post["alert"]["partition"] == "bad-source"

    mails = [(to, m) for to, m in smtp.messages if run_id in m.get_content()]
    assert len(mails) == 1
    to, mail = mails[0]
    assert to == ["platform@test.example", "oncall@test.example"]
    assert mail["Subject"] == "lectio: check table_has_header failed on price_table for source bad-source"
    assert f"{UI}/runs/{run_id}" in mail.get_content()

    lines = [json.loads(line) for line in channels_env.read_text().splitlines()]
    logged = [line for line in lines if line["run_id"] == run_id]
    assert len(logged) == 1 and logged[0]["kind"] == "check_failed" and logged[0]["sent_at"]


def test_passing_checks_send_nothing(instance, channels_env, webhook, smtp, settings):
    defs, sensor = build_definitions(settings.sources_file), "alert_on_failed_checks"
    start = _tick(defs, sensor, instance, None).cursor
    materialize([price_table], partition_key="good-source", instance=instance)
    assert _tick(defs, sensor, instance, start).cursor != start  # it read the evaluation …
    assert webhook.received == [] and smtp.messages == []  # … and sent nothing


@asset(partitions_def=sources, check_specs=[AssetCheckSpec("acl_present", asset="shelf", blocking=True)])
def shelf(context):
    return MaterializeResult(check_results=[AssetCheckResult(passed=False, description="a chunk has no ACL")])


@asset(partitions_def=sources, deps=[shelf])
def shelf_index(context):
    return None


def test_a_blocking_check_alerts_once_not_again_for_its_run(instance, channels_env, webhook, smtp, settings):
    defs = build_definitions(settings.sources_file)
    check_start = _tick(defs, "alert_on_failed_checks", instance, None).cursor
    run_start = _tick(defs, "alert_on_failed_runs", instance, None).cursor
    result = materialize([shelf, shelf_index], partition_key="bad-source", instance=instance, raise_on_error=False)
    assert not result.success  # the blocking check failed the run and kept shelf_index from running

    _tick(defs, "alert_on_failed_checks", instance, check_start)
    _tick(defs, "alert_on_failed_runs", instance, run_start)
    posts = [p["alert"] for p in webhook.received if p["alert"]["run_id"] == result.run_id]
    assert [(a["kind"], a["check"]) for a in posts] == [("check_failed", "acl_present")]


@asset(partitions_def=sources)
def broken_reader(context):
    raise ValueError(f"source {context.partition_key!r}: line 3 is not valid JSON")


def test_each_alert_tick_says_what_it_alerted(instance, channels_env, settings):
    """Issue 37, item 9: an alert sensor requests no runs, so its tick names the run and the
    source it alerted on, never "0 runs requested" or an alert's fingerprint alone."""
    defs = build_definitions(settings.sources_file)
    check_start = _tick(defs, "alert_on_failed_checks", instance, None).cursor
    run_start = _tick(defs, "alert_on_failed_runs", instance, None).cursor
    failed = materialize([broken_reader], partition_key="bad-source", instance=instance, raise_on_error=False)
    checked = materialize([price_table], partition_key="bad-source", instance=instance)

    tick = _tick(defs, "alert_on_failed_runs", instance, run_start)
    assert tick.skip_message.startswith(f"alerted: broken_reader on bad-source, run {failed.run_id[:8]}: ")
    assert "line 3 is not valid JSON" in tick.skip_message
    tick = _tick(defs, "alert_on_failed_checks", instance, check_start)
    assert tick.skip_message.endswith(f"1 alert: table_has_header on bad-source, run {checked.run_id[:8]}")

    # The same evaluations read again (a lost cursor update; every_source_indexed's one alert per
    # set of failed sources is held back alike): nothing is sent, and the tick says so rather than
    # count what it held back as alerted (the walk of issue 62, D2).
    tick = _tick(defs, "alert_on_failed_checks", instance, check_start)
    assert tick.skip_message.endswith(
        f"no alert; held back as already alerted: table_has_header on bad-source, run {checked.run_id[:8]}"), \
        tick.skip_message
    tick = _tick(defs, "alert_on_failed_runs", instance, run_start)
    assert tick.skip_message.startswith(
        f"held back as already alerted: broken_reader on bad-source, run {failed.run_id[:8]}: "), tick.skip_message


def test_a_run_the_queue_could_not_start_alerts_with_the_queue_s_error(instance, channels_env, settings):
    """The walk of issue 62, X2: a run queued for a code location the daemon's workspace lacks is
    failed by the run queue from outside the run ("This run has been marked as failed from outside
    the execution context."), and its alert said only that; the queue's engine event says why, and
    the alert carries it. The run is failed here as the queue daemon fails it."""
    from tests.dagster_internals import (DagsterCodeLocationNotFoundError, EngineEventData,
                                         serializable_error_info_from_exc_info)

    defs = build_definitions(settings.sources_file)
    start = _tick(defs, "alert_on_failed_runs", instance, None).cursor
    run = instance.create_run_for_job(defs.resolve_job_def("ingest_source"), tags={"dagster/partition": "web"})
    try:
        raise DagsterCodeLocationNotFoundError("Location pipelines.definitions does not exist in workspace")
    except DagsterCodeLocationNotFoundError:
        error = serializable_error_info_from_exc_info(sys.exc_info())
    instance.report_engine_event(f"Caught an error dequeuing run {run.run_id}", run, EngineEventData.engine_error(error))
    instance.report_run_failed(run)

    tick = _tick(defs, "alert_on_failed_runs", instance, start)
    assert tick.skip_message.startswith(f"alerted: job ingest_source on web, run {run.run_id[:8]}: "), tick.skip_message
    (alert,) = [json.loads(line) for line in channels_env.read_text().splitlines()
                if json.loads(line)["run_id"] == run.run_id]
    assert alert["message"] == "Location pipelines.definitions does not exist in workspace", alert["message"]


def test_an_alert_tick_without_its_database_says_why_in_one_line_and_the_next_sends(
        instance, channels_env, webhook, settings):
    """Issue 52, item 6: the database out of reach for a tick is one line naming why (no
    traceback), and the alert goes out on the next tick: the cursor waits for it."""
    from resources import DatabaseResource

    defs = build_definitions(settings.sources_file)
    start = _tick(defs, "alert_on_failed_checks", instance, None).cursor
    checked = materialize([price_table], partition_key="bad-source", instance=instance)
    unreachable = DatabaseResource(home=str(settings.home), url=f"postgresql://lectio@127.0.0.1:{_free_port()}/none")
    sensor = defs.resolve_sensor_def("alert_on_failed_checks")
    tick = sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=start, definitions=defs,
                                                     resources={**defs.resources, "database": unreachable}))
    assert tick.cursor in (None, start) and "\n" not in tick.skip_message
    assert tick.skip_message.startswith("alerts not sent this tick, tried again on the next: ")
    assert "127.0.0.1" in tick.skip_message and not [p for p in webhook.received if p["alert"]["run_id"] == checked.run_id]
    _tick(defs, "alert_on_failed_checks", instance, start)
    assert [p for p in webhook.received if p["alert"]["run_id"] == checked.run_id]


def test_a_failing_channel_does_not_stop_the_others_and_is_retried(conn, webhook, tmp_path):
    alert = Alert(kind="check_failed", message="acl missing", run_id="run-retry", asset="chunks",
                  check="permission_tags", partition="web")
    broken = WebhookChannel(f"http://127.0.0.1:{_free_port()}/nobody-listens", timeout=2)
    log_file = LogFileChannel(tmp_path / "alerts.jsonl")
    first = send_alerts(conn, [alert], [broken, log_file])
    assert [(d.channel, d.status) for d in first] == [("webhook", "failed"), ("log", "sent")]
    # The webhook comes back: the same alert reaches it, and the log file is not written twice.
    second = send_alerts(conn, [alert], [WebhookChannel(webhook.url), log_file])
    assert [(d.channel, d.status) for d in second] == [("webhook", "sent"), ("log", "already_sent")]
    assert len(webhook.received) == 1
    assert len((tmp_path / "alerts.jsonl").read_text().splitlines()) == 1


def test_a_channel_that_cannot_be_reached_is_named_in_one_plain_line(conn):
    """Why a delivery failed is read in a sensor tick's log: it said "URLError: <urlopen error
    [Errno 111] Connection refused>", a Python class name and its wrapper's brackets (issue 63,
    item 16)."""
    alert = Alert(kind="check_failed", message="acl missing", run_id="run-unreachable", asset="chunks",
                  check="permission_tags", partition="web")
    broken = WebhookChannel(f"http://127.0.0.1:{_free_port()}/nobody-listens", timeout=2)
    (delivery,) = send_alerts(conn, [alert], [broken])
    assert delivery.status == "failed" and delivery.error == "[Errno 111] Connection refused", delivery.error
