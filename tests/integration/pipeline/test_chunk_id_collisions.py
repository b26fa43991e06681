"""Two sources never share a chunk id by accident, and where they share one on purpose (two
scripture sources with one translation code) only the later source fails, with one line naming
both and the id, while every other source indexes and the live index stays as it was. Both
cases failed every index build before the fix (the version table's primary key refused the
second row)."""

from __future__ import annotations

import pytest

from lectio.index import versions
from tests.integration.trust.test_trust import run  # noqa: F401  (runs `lectio run`'s main job on a home)

pytestmark = [pytest.mark.slow, pytest.mark.network]

WEB = ("  - {{id: {id}, kind: scripture, format: sword-bible, module: engWEB2015eb, translation: WEB,\n"
       "     select: \"Philemon\", acl: [public]}}\n")


def sources_yaml(extra: str = "") -> str:
    return (
        "sources:\n"
        "  - {id: y_a, kind: notes, format: notes-jsonl, path: y_a.jsonl, acl: ['user:alice']}\n"
        "  - {id: y, kind: notes, format: notes-jsonl, path: y.jsonl, acl: ['user:bob']}\n" + extra
    )


@pytest.fixture(scope="module")
def home(home_factory):
    with home_factory("lectio-collision-home-", sources_yaml) as home:
        # `y_a` + note `b1` and `y` + note `a_b1`: the same id while ids were joined with '_'.
        (home.folder / "y_a.jsonl").write_text('{"id": "b1", "ref": "Romans 8:28", "text": "Alice on the good."}\n')
        (home.folder / "y.jsonl").write_text('{"id": "a_b1", "ref": "Psalm 23:1", "text": "Bob on the shepherd."}\n')
        yield home


def chunk_sources(home, version: str) -> dict[str, str]:
    with home.connect() as conn:
        table = versions.get_version(conn, version).table_name
        return dict(conn.execute(f'SELECT chunk_id, source_id FROM "{table}"').fetchall())


def test_notes_of_two_sources_never_make_one_id(home):
    report = run(home, home.sources("notes"))
    assert report.index["ok"] and report.index["live"], report.index
    assert report.index["failed_sources"] == "none"
    assert chunk_sources(home, report.index["version"]) == {"y_a/b1/1": "y_a", "y/a_b1/1": "y"}


def test_a_second_source_with_one_translation_code_fails_alone(home):
    first = run(home, home.sources("one-web", extra=WEB.format(id="web")))
    assert first.index["ok"] and first.index["live"], first.index
    live = first.index["version"]

    report = run(home, home.sources("two-webs", extra=WEB.format(id="web") + WEB.format(id="web-copy")))
    index = report.index
    assert index["ok"], index  # the build went on without the colliding source
    assert index["failed_sources"] == "web-copy" and not index["live"]
    problem = index["quality_failures"]
    assert problem.startswith("web-copy: chunk id 'phlm_1_1_web' is also made by source 'web'"), problem
    assert len(problem.splitlines()) == 1
    held = set(chunk_sources(home, index["version"]).values())
    assert held == {"y_a", "y", "web"}  # every other source indexed, as a candidate
    with home.connect() as conn:
        assert versions.live_version(conn) == live  # the live index was not touched

    # The later source fails, whichever it is: listed first, the copy indexes and `web` fails.
    swapped = run(home, home.sources("swapped", extra=WEB.format(id="web-copy") + WEB.format(id="web")),
                  switch_live=False)
    assert swapped.index["failed_sources"] == "web", swapped.index
    assert "'phlm_1_1_web' is also made by source 'web-copy'" in swapped.index["quality_failures"]
