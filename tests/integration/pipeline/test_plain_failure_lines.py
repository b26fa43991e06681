"""A failure reads as one plain line wherever it is told (issue 63, item 16).

A run's failure line (`lectio run`'s FAILED line, the run-failure alert, the index's
every_source_indexed check) took the innermost error of the chain. Where lectio had wrapped an
error in its own words (the output it could not store, the runtime to set instead), those were
lost and a Python class name led the line: "IsADirectoryError: [Errno 21] Is a directory: '…'".
Now the line is the first error below Dagster's own wrappers, in the words of whoever raised it,
without a class path."""

from __future__ import annotations

import json

import pytest
from dagster import DagsterInstance, build_sensor_context

from cli import main as cli
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env

pytestmark = [pytest.mark.slow]

ROTA = "sources:\n  - {id: rota, kind: document, format: text, path: rota.txt, acl: [public]}\n"


@pytest.fixture(scope="module")
def home(home_factory):
    with home_factory("lectio-plain-lines-", lambda: ROTA) as home:
        (home.folder / "rota.txt").write_text("Volunteer rota\n\nSunday: tea and coffee after the service.\n")
        prepare_dagster_env(home.settings, home.database)
        yield home


def test_an_output_that_cannot_be_stored_fails_in_lectios_words_on_the_run_and_in_the_alert(home, capsys, monkeypatch):
    alerts = home.folder / "alerts.jsonl"
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(alerts))
    defs = build_definitions(home.settings.sources_file)
    sensor = defs.resolve_sensor_def("alert_on_failed_runs")

    def tick(cursor=None):
        return sensor.evaluate_tick(build_sensor_context(instance=DagsterInstance.get(), cursor=cursor,
                                                         definitions=defs, resources=defs.resources))

    failures = tick().cursor  # watching failed runs from now on
    # Where raw_texts stores the source's text, a folder: opening it to write fails, under lectio's
    # wrapper that names the output.
    stored = home.settings.home / "storage" / "raw_texts" / "rota"
    (stored / "in-the-way").mkdir(parents=True)

    assert cli(["run"]) == 1
    said = capsys.readouterr()
    expected = f"[Errno 21] could not store {stored}: Is a directory"
    (failed,) = [line for line in said.out.splitlines() if line.strip().startswith("FAILED rota:")]
    assert failed.strip() == f"FAILED rota: {expected}", failed

    tick(failures)
    (alert,) = [json.loads(line) for line in alerts.read_text().splitlines()]
    assert alert["message"] == expected, alert
