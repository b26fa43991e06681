"""`lectio run` and the `index_after_batch` sensor agree on who builds (issue 62, item 3).

`lectio run` executes one ingest run per source in process, holding the database's writer lock,
and builds the index after the last. Between two of its runs nothing is queued or running, so the
sensor took the finished ones for a batch and launched `build_index`, which failed on that lock
(WriterBusy, a stack trace, and with the run-failure alert on, a page to the team). Now the sensor
skips, saying why, for as long as the command is at work, and its index covers what it ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance, build_sensor_context

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def home(documents_home_factory):
    with documents_home_factory("lectio-cli-batch-home-") as home:
        yield home


def _tick(sources: Path):
    from pipelines.definitions import build_definitions

    defs = build_definitions(sources)
    return defs.resolve_sensor_def("index_after_batch").evaluate_tick(build_sensor_context(
        instance=DagsterInstance.get(), definitions=defs, resources=defs.resources))


def test_the_sensor_leaves_the_batch_of_lectio_run_to_it(home):
    from pipelines.runners import run_main

    ticks = {}

    def echo(line: str) -> None:
        # Between the command's in-process runs: after the first source, and before the index.
        if line.startswith(("[2/2]", "index:")):
            ticks[line.split()[0]] = _tick(home.settings.sources_file)

    report = run_main(home.settings, echo=echo)

    assert report.ok and report.index["live"], report.to_json()
    assert set(ticks) == {"[2/2]", "index:"}
    for tick in ticks.values():
        assert not tick.run_requests
        assert tick.skip_message.startswith("lectio run (process ") and "builds its own index" in tick.skip_message
    # Once it has ended, its index covers its runs: nothing is left for the sensor.
    assert _tick(home.settings.sources_file).skip_message == "no ingest run finished since the last index"
