"""Bad input at the command line: one line naming the argument or source and the problem, exit
status 2, no traceback."""

from __future__ import annotations

import json
import os

import pytest

from cli import main as cli

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(autouse=True)
def own_sources_setting(monkeypatch):
    """`--sources` sets LECTIO_SOURCES for the rest of the process, as it should for a user's
    command; here the next test must find the session's file again."""
    monkeypatch.setenv("LECTIO_SOURCES", os.environ["LECTIO_SOURCES"])


def one_line_error(capsys, argv) -> str:
    capsys.readouterr()
    assert cli(argv) == 2, argv
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in captured.err and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("content, problem", [
    (None, "does not exist"),
    ("sources: [oops", "is not valid YAML"),
    ("sources: 42", "must hold a list"),
    ("sources:\n  - {id: a, kind: document, format: text, path: a.txt, acl: [public]}\n"
     "  - {id: a, kind: document, format: text, path: b.txt, acl: [public]}\n", "more than one source"),
])
def test_a_bad_sources_file_is_one_line(main_run, tmp_path, capsys, content, problem):
    path = tmp_path / "sources.yaml"
    if content is not None:
        path.write_text(content)
    assert problem in one_line_error(capsys, ["run", "--candidate", "--sources", str(path)])


def test_bad_arguments_are_one_line(main_run, tmp_path, capsys):
    assert "no index version 'v999'" in one_line_error(capsys, ["index", "switch", "v999"])
    assert "does-not-exist.jsonl" in one_line_error(capsys, ["eval", str(tmp_path / "does-not-exist.jsonl")])
    assert "--genre" in one_line_error(capsys, ["search", "the law", "--genre", "law\x00"])
    assert "is not a principal" in one_line_error(capsys, ["search", "Psalm 23:1", "--principal", "nobody,user:bob"])
    bad_queries = tmp_path / "q.jsonl"
    bad_queries.write_text('{"query": "law", "filters": {"colour": "red"}}\n')
    assert "q.jsonl:1" in one_line_error(capsys, ["eval", str(bad_queries)])


def test_an_overlong_query_is_refused_at_every_search_door_with_one_line(main_run, capsys):
    from lectio.retrieval import MAX_QUERY_CHARS

    huge = "grace and peace " * 8_000  # 128 KB: it cost 30 s and 1.5 GB before the cap
    assert f"at most {MAX_QUERY_CHARS:,}" in one_line_error(capsys, ["search", huge])
    assert "characters long" in one_line_error(capsys, ["search", huge, "--mode", "lexical"])
    # Just under the cap, a search runs.
    assert cli(["search", ("grace " * 200)[:MAX_QUERY_CHARS], "--k", "1"]) == 0


def test_evaluation_scores_every_query_an_overlong_one_on_what_the_cap_allows(main_run, conn, tmp_path, capsys):
    # One query over the cap refused the whole labelled set ("the query is 1,044 characters
    # long"), and nothing was scored: a doctrinal paragraph's set scored the month before.
    from lectio.evaluation.metrics import evaluate_index
    from lectio.evaluation.querysets import load_queries
    from lectio.retrieval import MAX_QUERY_CHARS

    long = "Rejoice in the Lord always! Again I will say, Rejoice! " * 40  # 2,240 characters
    labelled = [{"id": "long", "query": long, "relevant": ["phil_4_4"]},
                {"id": "short", "query": "do not worry about anything but pray", "relevant": ["phil_4_6"]}]
    queries = tmp_path / "long.jsonl"
    queries.write_text("".join(json.dumps(q) + "\n" for q in labelled))
    capsys.readouterr()
    assert cli(["eval", str(queries), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overall"]["n"] == 2 and report["overall"]["queries_cut"] == 1, report["overall"]
    scored = {row["id"]: row for row in report["queries"]}
    assert scored["long"]["query"] == long[:MAX_QUERY_CHARS] and scored["long"]["recall@20"] == 1.0, scored["long"]
    assert cli(["eval", str(queries)]) == 0
    assert "queries_cut          1" in capsys.readouterr().out.splitlines()
    # The library's door, which the migration and reranker gates score through.
    assert evaluate_index(conn, load_queries(queries))["overall"]["queries_cut"] == 1


def test_a_named_principal_reads_what_public_may_and_an_empty_answer_says_why(main_run, capsys):
    # The service always counts a caller as public too; the CLI and the library once did not, and
    # `--principal user:carol --kind scripture` answered nothing, without a word.
    capsys.readouterr()
    assert cli(["search", "the Lord is my shepherd", "--principal", "user:carol", "--kind", "scripture",
                "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["results"] and found["message"] is None
    assert cli(["search", "the Lord is my shepherd", "--principal", "user:carol", "--kind", "scripture",
                "--translation", "NOSUCH", "--mode", "lexical", "--json"]) == 1  # as grep: found nothing
    empty = json.loads(capsys.readouterr().out)
    assert not empty["results"]
    assert empty["message"] == "no results: nothing that public, user:carol may read matches this query and its filters"


def test_a_sources_file_with_a_repeated_id_revokes_nothing(main_run, conn, tmp_path, capsys, monkeypatch):
    """Which of two entries with one id is meant cannot be known, so such a file is refused
    before it judges any version: it once revoked the live one for naming none of its sources."""
    from lectio.index import versions

    live = versions.live_version(conn)
    path = tmp_path / "sources.yaml"
    path.write_text("sources:\n  - {id: a, kind: document, format: text, path: a.txt, acl: [public]}\n"
                    "  - {id: a, kind: document, format: text, path: b.txt, acl: [public]}\n")
    monkeypatch.setenv("LECTIO_SOURCES", str(path))  # the session's own file again after this test
    for argv in (["index", "audit"], ["index", "switch", live]):
        assert "more than one source" in one_line_error(capsys, argv)
    assert versions.get_version(conn, live).status == "ready" and versions.live_version(conn) == live
