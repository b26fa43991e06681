"""The code location's sensors, one module each, named after the sensor it declares.

How they fit together with the nightly schedule (pipelines/schedules.py; docs/operations.md tells
the operator's side):

- `source_changes` fingerprints every source's inputs (entry, files, the version of its ruleset,
  the embedding model), records them as `source_inputs` observations (so the UI's staleness
  follows them) and requests `ingest_source` runs for exactly the sources whose fingerprint
  moved, tagged as one batch.
- `index_after_batch` treats every ingest run that finished since the last index as one batch,
  however it was started (the UI, a backfill, the schedule, `source_changes`): once no ingest
  run is queued or running and no backfill of ingest assets is open, it requests one
  `build_index` run, told which of those sources failed (each keeps its last good chunks, the
  rest goes live, and the build's `every_source_indexed` check fails naming them). It ticks
  on every pass of the daemon's sensor loop (5 s); with it on, an ingest run that ends its batch
  asks for the same index itself as its last step ends, so the sensor's pass is not waited for
  (pipelines.batches, where the rule lives). A version `build_index` held back because the
  chunking rules changed (lectio.index.build) it hands to `gate_candidate` at its next tick: a
  rule change goes live through the migration gate alone. While a `lectio run` or `lectio migrate`
  is at work it skips, saying so: that command builds the index of its own runs. A sensor rather than a second schedule at,
  say, 04:00: the index follows the partitions however long they take. Waiting for "nothing in
  progress" rather than for a batch's size makes it follow runs nobody tagged.
- `alert_on_failed_checks` and `alert_on_failed_runs` turn failed asset checks and failed runs
  into alerts (lectio.alerts), each sent once.
- `fail_orphaned_runs` fails the runs a `lectio run` or `lectio migrate` executed in process and
  that stayed STARTED when it was killed (pipelines.run_owners).

All but `fail_orphaned_runs` start STOPPED: turning them on is the operator's decision (UI →
Automation, or `dagster schedule start` / `dagster sensor start`). That one runs from the start: it
requests nothing, and without it a killed `lectio run` stops the run queue for hours.

A package of pipelines rather than one beside assets/: the sensors read the run instance through
pipelines' own modules (batches, run_owners, observations, the Dagster internals) and are gathered
by pipelines.definitions, so they sit between the two in the Dagster layer.
"""

from __future__ import annotations

from assets.names import GATE_JOB, INDEX_JOB, INGEST_JOB, MIGRATE_JOB
from pipelines.sensors.alert_on_failed_checks import alert_on_failed_checks_sensor
from pipelines.sensors.alert_on_failed_runs import alert_on_failed_runs_sensor
from pipelines.sensors.delivery import alerts_go_to
from pipelines.sensors.fail_orphaned_runs import fail_orphaned_runs
from pipelines.sensors.index_after_batch import index_after_batch_sensor
from pipelines.sensors.source_changes import source_changes_sensor


def build_sensors(jobs: dict) -> list:
    """Every sensor, given the code location's jobs by name; where alerts go is read as the
    definitions load."""
    where = alerts_go_to()
    return [
        source_changes_sensor(jobs[INGEST_JOB]),
        index_after_batch_sensor(jobs[INDEX_JOB], jobs[MIGRATE_JOB], jobs[GATE_JOB]),
        alert_on_failed_checks_sensor(where),
        alert_on_failed_runs_sensor(where),
        fail_orphaned_runs,
    ]
