"""An entry renamed for its bad id never takes a real source's id (issue 63, item 11): `x/a` as
the first entry went by `source-1`, and a real `source-1` below it then had the whole file
refused, blaming the valid entry. Tried at the doors that read the file: `lectio run` and the
Dagster code location's partitions."""

from __future__ import annotations

import pytest

from cli import main as cli
from pipelines.definitions import build_definitions
from assets.names import INGEST_JOB

pytestmark = [pytest.mark.slow]


def _sources() -> str:
    return ("sources:\n"
            "  - {id: 'x/a', kind: document, format: text, path: rota.txt, acl: [public]}\n"
            "  - {id: source-1, kind: document, format: text, path: rota.txt, acl: [public]}\n")


def test_a_real_source_1_is_ingested_beside_an_entry_renamed_for_its_bad_id(home_factory, capsys):
    with home_factory("lectio-bad-id-apart-", _sources) as home:
        (home.folder / "rota.txt").write_text("Volunteer rota\n\nSunday: the urn is filled at nine.\n")
        partitions = build_definitions(home.settings.sources_file).resolve_job_def(INGEST_JOB).partitions_def
        assert partitions.get_partition_keys() == ["source-1-2", "source-1"]

        assert cli(["run", "--sources", str(home.settings.sources_file)]) == 1  # the bad entry fails alone
        out = capsys.readouterr().out
        assert "ok source-1:" in out and "FAILED source-1-2: source 'source-1-2': 'id' 'x/a' " in out, out
        assert cli(["search", "the urn is filled at nine", "--json"]) == 0
        assert "urn is filled" in capsys.readouterr().out
