"""The lexical mirror (lectio.index.mirror, lectio.retrieval.lexical): BM25 scored and titles
matched in the search process rank exactly as the SQL scoring of every matching chunk and the SQL
title match, and what the mirror proposes reaches a caller only through row-level security."""

import json
import logging
from dataclasses import replace

import numpy as np
import psycopg
import pytest
from psycopg import sql

from lectio.index import citations, mirror, revocation, security, versions
from lectio.retrieval import lexical
from lectio.retrieval.filters import Filters
from lectio.retrieval.request import VersionRequest
from lectio.retrieval.scope import Scope
from lectio.retrieval.expansion import expansion_words
from lectio.retrieval import SearchConfig, SearchRequest, search
from lectio.sources import load_sources

pytestmark = [pytest.mark.slow, pytest.mark.network]

# Bob's only note says this; nobody else's chunk comes close.
BOBS_WORDS = "hospital appointment rehearsing results"
QUERIES = ["the Lord is my shepherd", "justified by faith we have peace with God", "do not be anxious about anything",
           "God works all things together for good", BOBS_WORDS]


@pytest.fixture()
def live(main_run, conn, settings):
    info = versions.get_version(conn)
    return info, mirror.ensure(conn, info, settings.home)


def both_ways(conn, info, found, principals, given, ask):
    """What `ask` gets of the lexical index on the mirror `found` and of SQL scoring every chunk
    that holds a query word (the reference), both read as `principals`."""
    filters = Scope(principals, given, info.bm25_corpus)
    translation = given.translation or "WEB"
    where, params = filters.where(translation)
    with conn.transaction():
        security.act_as_reader(conn, principals)
        rows = lexical.Rows(conn, info.table_name, where, params, info.layout)
        mirrored = lexical.MirrorIndex(rows, found, found.mask(filters.conditions(translation)), filters.corpus,
                                       found.sets(principals))
        return ask(mirrored), ask(lexical.ScanIndex(rows))


def lexical_both_ways(conn, info, found, query, principals=("public",), given=Filters(), config=SearchConfig()):
    """BM25 candidates from the mirror `found`, and from SQL scoring every matching chunk."""
    extra = expansion_words(query, config.expansion) if config.lexical.expand else ""
    return both_ways(conn, info, found, principals, given, lambda index: index.words(query, extra, config))


def ranked_alike(one, other) -> bool:
    """The same chunks in the same order, save that chunks whose scores differ by float rounding
    alone (SQL sums a chunk's words in the order its plan reads them) may stand in either order."""
    def canonical(ranked):
        return [(-round(score, 9), chunk_id) for chunk_id, score in ranked]
    return bool(one) == bool(other) and sorted(canonical(one)) == sorted(canonical(other)) and \
        [round(score, 9) for _, score in one] == [round(score, 9) for _, score in other]


def test_the_mirror_lives_in_the_home_closed_to_others(live, settings):
    info, found = live
    assert found is not None and found.path == settings.home / "mirrors" / info.version
    assert (found.path.parent.stat().st_mode & 0o077) == 0
    assert len(found.chunk_ids) == info.rows


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("principals, given", [
    (("public",), Filters()),
    (("public", "user:alice"), Filters()),
    (("public", "user:bob"), Filters(kind="notes")),
    (("public",), Filters(kind="scripture", translation="KJV")),
    (("public", "group:staff"), Filters(testament="NT")),
])
def test_the_mirror_ranks_as_sql_scoring_every_chunk(conn, live, query, principals, given):
    info, found = live
    mirrored, exhaustive = lexical_both_ways(conn, info, found, query, principals, given)
    assert ranked_alike(mirrored, exhaustive)
    # The same arithmetic in float64; only the order of a sum's terms may differ.
    assert [score for _, score in mirrored] == pytest.approx([score for _, score in exhaustive], rel=1e-12)


def test_a_mirror_of_an_older_format_is_built_again_without_a_warning(conn, live, settings, caplog):
    info, found = live
    manifest = found.path / "manifest.json"
    older = json.loads(manifest.read_text()) | {"format": mirror.FORMAT - 1}
    manifest.write_text(json.dumps(older))
    (found.path / "title_run_words.npy").unlink()  # as a mirror from before titles lacks it
    mirror.forget(settings.home, info.version)
    with caplog.at_level(logging.WARNING, logger=mirror.__name__):
        rebuilt = mirror.ensure(conn, info, settings.home)
    assert rebuilt is not None and rebuilt.manifest["format"] == mirror.FORMAT
    assert (rebuilt.path / "title_run_words.npy").is_file()
    assert not caplog.records  # an expected rebuild, not damage


def test_the_mirror_counts_citations_as_sql_does(conn, live):
    info, found = live
    ids = found.chunk_ids
    in_sql = citations.most_cited(conn, info.table_name, ids, info.layout)
    assert in_sql  # the fixture's commentary cites verses: the comparison is not of empty maps
    assert found.most_cited(ids) == in_sql
    assert found.most_cited(["no-such-chunk", *ids[:3]]) == {i: in_sql[i] for i in ids[:3] if i in in_sql}


def test_the_mirror_matches_titles_as_sql_does(conn, live):
    info, found = live
    titles = [title for (title,) in conn.execute(
        f"SELECT DISTINCT title FROM {info.table_name} WHERE granularity = 'pericope' ORDER BY title LIMIT 10")]
    # A title alone, a title in a longer question (its share of the query falls), and queries
    # that name no title.
    queries = titles + [f"what does Paul teach about {title} and prayer" for title in titles] + QUERIES
    matched = 0
    for query in queries:
        for principals, given in ((("public",), Filters()), (("public",), Filters(translation="KJV"))):
            mirrored, in_sql = both_ways(conn, info, found, principals, given,
                                         lambda index: index.titles(query, SearchConfig()))
            assert mirrored == in_sql, query
            matched += bool(mirrored)
    assert matched >= len(titles)  # the comparison was not of empty lists


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
@pytest.mark.parametrize("query", QUERIES[:4])
def test_search_ranks_the_same_with_the_mirror_or_in_sql(conn, live, monkeypatch, mode, query):
    principals = ("public", "user:alice")
    in_sql = search(conn, SearchRequest(query, k=20, principals=principals,
                                        config=SearchConfig.from_options(mode=mode, lexical_mirror=False)))
    # With the mirror on, neither BM25, the title match nor the citation prior's counts are read in SQL.
    monkeypatch.setattr(lexical, "PostingsIndex", None)
    monkeypatch.setattr(lexical, "ScanIndex", None)
    monkeypatch.setattr(citations, "most_cited", None)
    mirrored = search(conn, SearchRequest(query, k=20, principals=principals,
                                          config=SearchConfig.from_options(mode=mode)))
    assert mirrored.results
    assert [(r.chunk_id, r.score) for r in mirrored.results] == [(r.chunk_id, r.score) for r in in_sql.results]


class Ungranular(Scope):
    """A scope that asks for a column the mirror does not hold."""

    def conditions(self, translation, others=False):
        return [*super().conditions(translation, others), ("granularity", "=", "verse")]


def version_request(scope: Scope, found, layout: int | None = 8) -> VersionRequest:
    """A search of table `t` of a version of `layout`, as `scope` allows, with the mirror `found`."""
    return VersionRequest(None, "t", "", 10, scope, "v", SearchConfig(), None, layout, mirror=found)


def test_a_filter_the_mirror_lacks_is_left_to_sql(live):
    _, found = live
    assert found.mask([("granularity", "=", "verse")]) is None
    assert isinstance(lexical.choose(version_request(Scope(("public",), Filters(), (1, 1)), found), "WEB"),
                      lexical.MirrorIndex)
    assert isinstance(lexical.choose(version_request(Ungranular(("public",), Filters(), (1, 1)), found), "WEB"),
                      lexical.PostingsIndex)


def test_the_lexical_index_is_chosen_once_by_mirror_rows_and_layout(live):
    _, found = live
    public = Scope(("public",), Filters(), (1, 1))
    # Rows narrowed past the scope's conditions: the mirror cannot tell which, SQL reads them.
    narrowed = lexical.choose(version_request(public, found), "WEB", narrower=sql.SQL("granularity = 'verse'"))
    assert isinstance(narrowed, lexical.PostingsIndex) and narrowed.posting_filter is None
    # Without a mirror: postings where the version has them, the postings filtered in their own
    # columns when the scope names no others; a scan of every matching chunk before layout 7.
    unmirrored = lexical.choose(version_request(public, None), "WEB")
    assert isinstance(unmirrored, lexical.PostingsIndex) and unmirrored.posting_filter is unmirrored.rows.where
    old_testament = replace(public, given=Filters(testament="OT"))
    assert lexical.choose(version_request(old_testament, None), "WEB").posting_filter is None
    assert isinstance(lexical.choose(version_request(public, None, None), "WEB"), lexical.ScanIndex)
    assert isinstance(lexical.choose(version_request(public, None, 6), "WEB"), lexical.ScanIndex)


def bobs_note_first(conn, info, found) -> str:
    """Bob's note, which the mirror ranks first when nobody's ACL is asked."""
    weights = {word: w for word, w, _ in conn.execute(lexical._WORDS, {"query": BOBS_WORDS, "extra": "", "ew": 0.3})}
    scored = found.scores(weights, 1.2, 0.75, *info.bm25_corpus, every_set(found))
    first = found.chunk_ids[mirror.best(scored, 1).positions[0]]
    assert first.startswith("notes-bob")
    return first


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_a_private_chunk_the_mirror_ranks_first_reaches_no_one_else(conn, live, mode):
    info, found = live
    bobs = bobs_note_first(conn, info, found)
    assert search(conn, SearchRequest(BOBS_WORDS, k=5, principals=("public", "user:bob"),
                                      config=SearchConfig.from_options(mode=mode))).results[0].chunk_id == bobs
    for principals in (("public",), ("public", "user:alice"), ("group:staff",)):
        results = search(conn, SearchRequest(BOBS_WORDS, k=50, principals=principals,
                                             config=SearchConfig.from_options(mode=mode))).results
        assert bobs not in {r.chunk_id for r in results}


def recording(array: np.ndarray, read: list) -> np.ndarray:
    """`array`, noting in `read` every run a search slices from it."""
    class Recording(np.ndarray):
        def __getitem__(self, key):
            found = super().__getitem__(key)
            if isinstance(key, slice):
                read.append(np.array(found))
            return found
    return np.asarray(array).view(Recording)


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
@pytest.mark.parametrize("principals", [("public",), ("public", "user:alice"), ("group:staff",)])
def test_an_outsiders_search_reads_no_posting_of_a_chunk_it_may_not_see(conn, live, monkeypatch, mode, principals):
    """How long a search takes must tell nothing of private words: a search for Bob's words by
    anyone else reads the postings of what that caller may see, and never those of Bob's note,
    so his words cost it what words no chunk holds would."""
    info, found = live
    bobs = [i for i, chunk_id in enumerate(found.chunk_ids) if chunk_id.startswith("notes-bob")]
    read: list[np.ndarray] = []
    monkeypatch.setitem(found.arrays, "postings", recording(found.arrays["postings"], read))
    search(conn, SearchRequest(BOBS_WORDS, k=5, principals=principals, config=SearchConfig.from_options(mode=mode)))
    chunks = np.concatenate(read)
    assert bobs and len(chunks) and not np.isin(bobs, chunks).any()  # the query's public words read, Bob's never
    assert np.isin(found.arrays["acl"][chunks], found.sets((*principals, "public"))).all()  # every caller is public too


class Unmasked(mirror.Mirror):
    """A mirror whose ACLs are wrong (stale, or tampered with): it proposes every chunk to everyone."""

    def mask(self, conditions):
        return np.ones(len(self.chunk_ids), dtype=bool)

    def sets(self, principals):
        return every_set(self)


def every_set(found: mirror.Mirror) -> np.ndarray:
    """Every ACL set of the mirror: what it would read for a caller who shares every principal."""
    return np.arange(len(found.manifest["acl_sets"]))


@pytest.mark.parametrize("wanted", [1, 3, 100])
def test_row_level_security_drops_what_a_wrong_mirror_proposes_and_deeper_ones_replace_it(conn, live, wanted):
    info, found = live
    bobs = bobs_note_first(conn, info, found)
    wrong = Unmasked(found.path, found.manifest, found.arrays, found.chunk_ids, found.words, found.title_words)
    config = replace(SearchConfig(), candidates=wanted)
    mirrored, exhaustive = lexical_both_ways(conn, info, wrong, BOBS_WORDS, ("public", "user:alice"),
                                             Filters(kind="notes"), config)
    assert bobs not in {chunk_id for chunk_id, _ in mirrored}
    # Refilled from further down: the caller's own best, as SQL ranks what the caller may see.
    assert mirrored and ranked_alike(mirrored, exhaustive)


def test_a_first_read_that_rls_empties_reads_deeper(conn, live):
    info, found = live
    query = BOBS_WORDS + " propitiation wrath"  # Bob's note and one of Alice's lead
    weights = {word: w for word, w, _ in conn.execute(lexical._WORDS, {"query": query, "extra": "", "ew": 0.3})}
    leading = mirror.best(found.scores(weights, 1.2, 0.75, *info.bm25_corpus, every_set(found)), 2).positions
    assert all(found.chunk_ids[i].startswith("notes-") for i in leading)
    wrong = Unmasked(found.path, found.manifest, found.arrays, found.chunk_ids, found.words, found.title_words)
    mirrored, exhaustive = lexical_both_ways(conn, info, wrong, query, ("public",), Filters(),
                                             SearchConfig.from_options(candidates=1, expand_lexical=False))
    # The first two reads proposed only private chunks and returned nothing; a deeper one found the best public.
    assert not mirrored[0][0].startswith("notes-")
    assert ranked_alike(mirrored, exhaustive)


def test_a_revoked_versions_mirror_serves_nothing(conn, live, foreign_sources, fixture_sources):
    info, found = live
    allowed = revocation.allowed_acls(load_sources(fixture_sources))
    allowed.pop("notes-bob")  # as if Bob's notes were taken out of the sources file
    assert info.version in revocation.judge(conn, allowed).revoked
    revoked = versions.get_version(conn, info.version)
    assert (found.path / "manifest.json").is_file()  # the files are still there, and still refused
    assert mirror.ensure(conn, revoked) is None and mirror.load(revoked) is None
    response = search(conn, SearchRequest(BOBS_WORDS, principals=("public", "user:bob"), version=info.version,
                                          config=SearchConfig.from_options(mode="lexical")))
    assert response.results == [] and response.message == f"index version {info.version} is unavailable"
    # A process that loaded the mirror before the revocation gets nothing from it either: the
    # reader's read of the proposed rows is refused.
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        lexical_both_ways(conn, revoked, found, BOBS_WORDS, ("public", "user:bob"))
