"""The leakage guard: no text that evaluates lectio, nothing from an evaluation-only source and
nothing private may become a training input."""

from __future__ import annotations

import json
from pathlib import Path

from lectio.evaluation.querysets import load_queries
from lectio.sources import Source, SourceError
from lectio.training.guard import QUERY_SETS, Guard, evaluation_sources

GUARD = Guard.of_query_sets()


def test_every_query_of_every_committed_set_is_refused_dev_and_test_alike():
    sets = sorted(QUERY_SETS.glob("*.jsonl"))
    assert {path.stem for path in sets} >= {"theology", "naves", "quotations", "long_passages", "henry_catechism", "openbible_topics"}
    for path in sets:
        for query in load_queries(path):
            assert not GUARD.admits_text(query.query), (path.name, query.id)
            # Another case and punctuation do not disguise it.
            assert not GUARD.admits_text(f"  {query.query.upper()}!  "), (path.name, query.id)


def test_a_commentary_entry_holding_a_long_passage_query_is_refused_whole():
    query = load_queries(QUERY_SETS / "long_passages.jsonl")[0].query
    entry = f"Verses 1-5. Some opening remark of the commentator. {query} And a closing thought."
    assert not GUARD.admits_text(entry)
    # Eight words of it are enough; seven shared words are not.
    words = query.split()
    assert not GUARD.admits_text("He said: " + " ".join(words[:8]) + " and went on.")
    assert GUARD.admits_text("Quite another comment on the mercy of God shown to sinners who repent.")


def test_a_guard_reads_the_sets_it_is_given(tmp_path: Path):
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"id": "x1", "query": "the peace that passes understanding"}) + "\n")
    guard = Guard.of_query_sets([own])
    assert not guard.admits_text("The peace that passes understanding.")
    assert guard.admits_text("what does the Bible say about forgiving others")  # a theology query: not in this set


def test_only_chunks_every_caller_may_read_are_admitted():
    assert GUARD.admits_source("mhcc", ["public"])
    assert not GUARD.admits_source("notes-alice", ["user:alice"])
    assert not GUARD.admits_source("staff", ["group:staff", "user:bob"])
    assert GUARD.admits_source("shared", ["group:staff", "public"])  # every caller may read it all the same


def test_naves_and_westminster_are_refused_by_what_they_read_whatever_their_id():
    entries = {
        "topics": Source("topics", "commentary", "sword-lexicon", ("public",), module="NAVES"),
        "wcf": Source("wcf", "commentary", "westminster-json", ("public",), module="westminster-standards-cli"),
        "mhcc": Source("mhcc", "commentary", "sword-commentary", ("public",), module="mhcc"),
        "broken": SourceError("broken", "no acl"),
    }
    excluded = evaluation_sources(entries)
    assert excluded == {"topics", "wcf", "broken"}
    guard = Guard.of_query_sets(excluded_sources=excluded)
    assert not guard.admits_source("topics", ["public"]) and guard.admits_source("mhcc", ["public"])
