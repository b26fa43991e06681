"""benchmarks/query_variants.py end to end on the fixture corpus's index: every form of a set's
part scored by the search users get, and compared with the as-written form (the forms and the
comparison alone: tests/unit/evaluation/test_query_forms.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from lectio.evaluation.query_forms import BASE, METRICS

pytestmark = [pytest.mark.slow, pytest.mark.network]

PROJECT = Path(__file__).resolve().parents[3]
QUERIES = PROJECT / "tests" / "fixtures" / "queries" / "migration.jsonl"


def _runner():
    spec = importlib.util.spec_from_file_location("query_variants", PROJECT / "benchmarks" / "query_variants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_form_is_scored_and_compared_with_the_as_written_one(main_run, tmp_path, capsys):
    out = tmp_path / "variants.json"
    assert _runner().main([str(QUERIES), "--part", "dev", "--form", "lower", "--form", "lower+kind",
                           "--out", str(out)]) == 0
    [result] = json.loads(out.read_text()).values()
    assert set(result["reports"]) == {BASE, "lower", "lower+kind"}
    counts = {form: report["overall"]["n"] for form, report in result["reports"].items()}
    assert len(set(counts.values())) == 1 and counts[BASE] > 0
    for metric in METRICS:
        rows = result["comparison"][metric]["forms"]
        assert rows[BASE]["vs_as_written"] is None and rows["lower"]["vs_unfiltered"] is None
        assert rows["lower+kind"]["vs_unfiltered"] is not None
    printed = capsys.readouterr().out
    assert "migration (dev" in printed and "lower+kind" in printed
