"""What the sensors' pages say of them (issue 62, item 11).

index_after_batch's page read "Frequency ~1 sec" (Dagster shows the least time between ticks),
while the docs said every 5 s, and neither the page nor the docs' readers could tell which was
true; the alert sensors said what they send and not where. Their descriptions now say both, from
the sensor definitions the UI shows."""

from __future__ import annotations

import pytest

from pipelines.sensors.index_after_batch import DAEMON_PASS_SECONDS
from pipelines.definitions import build_definitions
from tests.dagster_internals import sensor_daemon_pass_seconds

ALERT_SENSORS = ("alert_on_failed_checks", "alert_on_failed_runs")


def _description(settings, name: str) -> str:
    return build_definitions(settings.sources_file).resolve_sensor_def(name).description


def test_the_index_sensors_page_says_how_often_it_really_ticks(settings):
    sensor = build_definitions(settings.sources_file).resolve_sensor_def("index_after_batch")
    # Dagster's daemon comes round every DAEMON_PASS_SECONDS; the minimum interval under it lets
    # every pass tick, and is what the page's Frequency shows.
    assert DAEMON_PASS_SECONDS == sensor_daemon_pass_seconds()
    assert sensor.minimum_interval_seconds < DAEMON_PASS_SECONDS
    assert f"Ticks every {DAEMON_PASS_SECONDS} s" in sensor.description
    assert f"~{sensor.minimum_interval_seconds} sec" in sensor.description


def test_the_alert_sensors_say_where_alerts_go(settings, monkeypatch, tmp_path):
    log = tmp_path / "alerts.jsonl"
    monkeypatch.setenv("LECTIO_ALERT_WEBHOOK_URL", "https://hooks.example.org/services/T0/B0/secret-token")
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(log))
    monkeypatch.setenv("LECTIO_ALERT_SMTP_HOST", "mail.example.org")
    monkeypatch.setenv("LECTIO_ALERT_EMAIL_TO", "team@example.org")
    for name in ALERT_SENSORS:
        description = _description(settings, name)
        assert "a webhook on hooks.example.org" in description and "secret-token" not in description
        assert f"the file {log}" in description and "e-mail to team@example.org through mail.example.org" in description


@pytest.mark.parametrize("name", ALERT_SENSORS)
def test_an_alert_sensor_with_no_channel_says_its_alerts_go_nowhere(settings, monkeypatch, name):
    for variable in ("LECTIO_ALERT_WEBHOOK_URL", "LECTIO_ALERT_SMTP_HOST", "LECTIO_ALERT_EMAIL_TO"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LECTIO_ALERT_LOG", "")
    assert "Alerts go nowhere" in _description(settings, name)
