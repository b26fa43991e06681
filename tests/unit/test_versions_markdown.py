"""index_evaluation's `versions` table (issue 62, item 11): it listed every old version ever built
as a row of dashes reading "not scored", burying the live version and the candidate; those are now
named in one line after the tables."""

from types import SimpleNamespace

from assets.migration import _versions_markdown


def _version(name: str, scores: dict | None = None, status: str = "ready"):
    metrics = {"evaluation": {"query_sets": {"theology": scores}}} if scores else {}
    return SimpleNamespace(version=name, status=status, rows=10, metrics=metrics)


def test_old_unscored_versions_are_named_once_not_listed_as_rows():
    listed = [_version("v1"), _version("v2", {"mrr": 0.5, "n": 4}), _version("v3"), _version("v4"),
              _version("v5"), _version("v0", status="failed")]
    reports = {"v4": {"theology": {"overall": {"mrr": 0.6, "n": 4}}}}
    text = _versions_markdown(listed, reports, live="v4", candidate="v5", set_names=["theology"])

    rows = [line.split("|")[1:3] for line in text.splitlines() if line.startswith("| v") and not line.startswith("| version")]
    assert [[cell.strip() for cell in row] for row in rows] == [["v2", "stored"], ["v4", "live"], ["v5", "candidate"]]
    assert "not scored" not in text
    assert text.splitlines()[-1] == "Ready and never scored (a version is scored when a migration gates it): v1, v3."
