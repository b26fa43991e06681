"""A one-word topic in another translation's words: BM25 over the other translations' scripture
proposes the search's translation's verse of the same reference, read as the caller, so a
translation the caller may not see lends nothing."""

import pytest
from psycopg import sql

from lectio.index import security, versions
from lectio.retrieval import other_translations
from lectio.retrieval.filters import Filters
from lectio.retrieval.scope import Scope
from lectio.retrieval import SearchConfig, SearchRequest, search

pytestmark = [pytest.mark.slow, pytest.mark.network]

# The KJV's Romans 5:11 says "atonement", the WEB's "reconciliation"; only Alice may read the KJV.
SOURCES = """
sources:
  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb, translation: WEB,
     select: "Romans 5; Philippians 4", acl: [public]}
  - {id: kjv, kind: scripture, format: sword-bible, module: engKJV2006eb, translation: KJV,
     select: "Romans 5; Philippians 4", acl: ["user:alice"]}
"""
ALICE = ("public", "user:alice")
PUBLIC = ("public",)
HEAVY = SearchConfig.from_options(topic_other_translations_weight=100.0)  # the most a weight may be
OFF = SearchConfig.from_options(topic_other_translations_weight=0.0)


@pytest.fixture(scope="module")
def two_translations(index_of):
    return index_of(SOURCES, ("web", "kjv"))


def find(conn, index, query, principals, config):
    version, embedder = index
    return search(conn, SearchRequest(query, k=10, principals=principals, version=version, config=config),
                  embedder=embedder).results


@pytest.mark.parametrize("word, ref", [("atonement", "rom_5_11"), ("moderation", "phil_4_5")])
def test_a_topic_in_another_translations_words_finds_the_verse_in_the_searchs_own(conn, two_translations, word, ref):
    own_words = find(conn, two_translations, word, ALICE, SearchConfig.from_options(mode="lexical"))
    assert all(ref not in hit.refs for hit in own_words)  # the WEB never says it
    first = find(conn, two_translations, word, ALICE, HEAVY)[0]
    assert (first.refs, first.granularity, first.translation) == ([ref], "verse", "WEB")
    assert find(conn, two_translations, word, ALICE, OFF)[0].chunk_id != first.chunk_id


@pytest.mark.parametrize("mirrored", [True, False])
def test_a_translation_the_caller_may_not_read_lends_nothing(conn, two_translations, mirrored):
    heavy, off = (config.but(lexical_mirror=mirrored) for config in (HEAVY, OFF))
    for word in ("atonement", "moderation"):
        as_public = [hit.chunk_id for hit in find(conn, two_translations, word, PUBLIC, heavy)]
        assert as_public == [hit.chunk_id for hit in find(conn, two_translations, word, PUBLIC, off)]
        assert all(hit.translation == "WEB" for hit in find(conn, two_translations, word, ALICE, heavy))


def test_a_twin_is_the_same_verses_in_the_asked_translation(conn, two_translations):
    version, _ = two_translations
    table = versions.get_version(conn, version).table_name
    rows = {chunk_id: (kind, granularity, refs, translation) for chunk_id, kind, granularity, refs, translation
            in conn.execute(sql.SQL("SELECT chunk_id, kind, granularity, refs, translation FROM {}").format(
                sql.Identifier(table))).fetchall()}
    kjv = [(chunk_id, 1.0) for chunk_id, row in rows.items() if row[3] == "KJV"]
    scope = Scope(ALICE, Filters())
    with conn.transaction():
        security.act_as_reader(conn, ALICE)
        found = other_translations.twins(conn, table, kjv, *scope.where("WEB"))
    asked = {(row[1], tuple(row[2])) for row in rows.values() if row[3] == "KJV"}
    for chunk_id, _ in found:
        kind, granularity, refs, translation = rows[chunk_id]
        assert (kind, translation) == ("scripture", "WEB") and (granularity, tuple(refs)) in asked, chunk_id
    verses = {refs for granularity, refs in asked if granularity == "verse"}
    assert {tuple(rows[chunk_id][2]) for chunk_id, _ in found if rows[chunk_id][1] == "verse"} == verses


def test_the_mirror_and_sql_propose_the_same_twins(conn, two_translations):
    for word in ("atonement", "moderation", "peace"):
        mirrored = find(conn, two_translations, word, ALICE, HEAVY)
        in_sql = find(conn, two_translations, word, ALICE, HEAVY.but(lexical_mirror=False))
        assert [(hit.chunk_id, hit.score) for hit in mirrored] == [(hit.chunk_id, hit.score) for hit in in_sql], word
