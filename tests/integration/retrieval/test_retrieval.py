"""Retrieval strategies on a small real index: query expansion, pericope titles, the
cross-reference graph under row-level security, word studies with Strong's, filters, and the
collapse of hits that add no new verse."""

import json

import pytest

import pandas as pd
from psycopg import sql

from lectio.index import citations
from lectio.index import postings, security, tables, versions
from lectio.index import xrefs
from lectio.rulesets.chunk import chunks_frame
from lectio.embedding.cache import embed_chunks
from lectio.index.build import build_index
from lectio.rulesets.registry import run_source
from lectio.embedding.model import Embedder
from lectio.retrieval import evidence, lexical
from lectio.retrieval.filters import Filters
from lectio.retrieval.scope import Scope
from lectio.retrieval.expansion import expansion_words
from lectio.retrieval import SearchConfig, SearchRequest, search
from lectio.retrieval.word_study import detect
from lectio.retrieval.shape import SENTENCE, TOPIC, is_paragraph, query_shape

pytestmark = [pytest.mark.slow, pytest.mark.network]

SOURCES = """
sources:
  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb, translation: WEB,
     select: "Psalm 23; John 3; John 10; Romans 5", acl: [public]}
  - {id: mhcc, kind: commentary, format: sword-commentary, module: mhcc, select: "Psalm 23",
     title: Concise Commentary, author: Matthew Henry, tradition: Reformed, tier: classic, acl: [public]}
  - {id: notes-alice, kind: notes, format: notes-jsonl, path: alice.jsonl, title: Alice's notes,
     acl: ["user:alice"]}
  - {id: study-notes, kind: notes, format: notes-jsonl, path: study.jsonl, title: Study notes, acl: [public]}
  - {id: strongs-greek, kind: lexicon, format: sword-lexicon, module: StrongsGreek,
     select: "G25-G27; G4166", title: Strong's Greek Dictionary, acl: [public]}
"""
# Alice's note links the shepherd psalm to a verse no word of it shares: only the graph knows.
# Its last word is hers alone, to show that no shared table reveals it.
ALICE = {"id": "a1", "ref": "Psalm 23:1", "text": "The same care as in Romans 5:8, shown long before. Quillwort."}
# A second note of hers, on a verse of John 3 that no word of the note shares.
ALICE_WIND = {"id": "a2", "ref": "John 3:8", "text": "One word for breath and spirit here. Bellwort."}
# Public notes that keep returning to two verses, as commentators do with a topic's key texts.
STUDY = [{"id": f"s{n}", "ref": "John 10:11", "text": f"Note {n}: the shepherd of Psalm 23:1 who gives his life, as John 3:16 says."}
         for n in range(3)]


@pytest.fixture(scope="module")
def small_index(index_of):
    return index_of(SOURCES, ("web", "mhcc", "notes-alice", "study-notes", "strongs-greek"),
                    {"alice.jsonl": json.dumps(ALICE) + "\n" + json.dumps(ALICE_WIND) + "\n",
                     "study.jsonl": "".join(json.dumps(note) + "\n" for note in STUDY)})


def find(conn, small_index, query, k=20, vector_conn=None, **options):
    version, embedder = small_index
    return search(conn, SearchRequest(query, k=k, version=version, **options), embedder=embedder,
                  vector_conn=vector_conn)


def rank_of(results, ref):
    return next((r.rank for r in results if ref in r.refs and r.granularity == "verse"), None)


# ---------------------------------------------------------------- query expansion


def test_lexical_expansion_reaches_yahweh(conn, small_index):
    lexical = SearchConfig.from_options(mode="lexical", title_weight=0)
    plain = find(conn, small_index, "the Lord", config=lexical.but(expand_lexical=False)).results
    expanded = find(conn, small_index, "the Lord", config=lexical).results
    assert plain and all("lord" in r.text.lower() for r in plain)
    assert any("Yahweh" in r.text and "lord" not in r.text.lower() for r in expanded)


# ---------------------------------------------------------------- titles, collapse


def test_a_named_passage_finds_its_pericope(conn, small_index):
    results = find(conn, small_index, "the good shepherd", k=3, config=SearchConfig.from_options(mode="lexical")).results
    assert results[0].granularity == "pericope"
    assert results[0].refs[0] == "john_10_1"


def test_query_shapes():
    assert query_shape("shepherd", 2) == TOPIC
    assert query_shape("the good shepherd", 2) == TOPIC  # a name, told apart by the ranking
    assert query_shape("how should we pray", 2) == SENTENCE  # a question
    assert query_shape("peace?", 2) == SENTENCE
    assert query_shape("peace with God through faith", 2) == SENTENCE
    assert query_shape("shepherd", 0) == SENTENCE  # routing off
    assert is_paragraph(SHEPHERD_PARAGRAPH, 30) and not is_paragraph("peace with God through faith", 30)
    assert not is_paragraph(SHEPHERD_PARAGRAPH, 0)  # routing off


# A comment of the kind a study tool sends with "which scripture supports this?" (36 words).
SHEPHERD_PARAGRAPH = ("The shepherd enters by the door and calls his own sheep by name, and they follow him, for "
                      "they know his voice. A stranger they will not follow, and the hireling flees when he sees "
                      "the wolf coming.")


def test_a_paragraph_is_answered_by_its_whole_passage(conn, small_index):
    # Passages past 200 word pieces follow the shorter hits of a sentence's page; a paragraph
    # comments on a passage and keeps it where it ranks.
    short_page = SearchConfig.from_options(long_passage_tokens=200)
    whole = find(conn, small_index, SHEPHERD_PARAGRAPH, k=5, config=short_page).results
    assert whole[0].granularity == "pericope" and whole[0].refs[0] == "john_10_1"
    as_sentence = find(conn, small_index, SHEPHERD_PARAGRAPH, k=5,
                       config=short_page.but(["paragraphs.words=0"])).results
    assert as_sentence[0].granularity != "pericope"


def test_a_short_topic_is_answered_with_verses(conn, small_index):
    routed = SearchConfig.from_options(topic_words=2, topic_rows="verses")
    assert any(r.granularity != "verse" for r in find(conn, small_index, "sheep").results)  # not routed by default
    topic = find(conn, small_index, "sheep", config=routed).results
    assert topic and all(r.granularity == "verse" for r in topic)
    mixed = find(conn, small_index, "tribulation", config=routed.but(topic_rows="verses+other")).results
    assert {r.granularity for r in mixed if r.kind == "scripture"} == {"verse"}
    assert any(r.kind != "scripture" for r in mixed)  # the commentary stays
    # Not routed: a sentence, and a short query whose best answer is a whole passage.
    sentence = find(conn, small_index, "the Lord is my shepherd, I shall lack nothing", config=routed).results
    assert any(r.granularity != "verse" for r in sentence)
    assert find(conn, small_index, "Nicodemus", config=routed).results[0].granularity == "pericope"


def test_a_short_topic_is_fused_again_with_its_words_weighing_more(conn, small_index):
    def first(query, weight, mode="hybrid"):
        config = SearchConfig.from_options(mode=mode, topic_words=1, topic_rows="all", topic_lexical_weight=weight,
                                           per_source=None, query_share_weight=0, long_passage_tokens=0)
        return find(conn, small_index, query, config=config).results[0].chunk_id

    lexical = first("sheep", 1, mode="lexical")
    assert first("sheep", 1) != lexical  # the vector side has its say at an even weight
    assert first("sheep", 100) == lexical  # a topic's words decide where they weigh most
    sentence = "the good shepherd lays down his life for the sheep"
    assert first(sentence, 100) == first(sentence, 1)  # a sentence is fused once, as it was


def test_hits_that_add_no_new_verse_are_collapsed(conn, small_index):
    for query in ("God so loved the world", "the Lord is my shepherd", "peace with God through faith"):
        collapsed = find(conn, small_index, query).results
        seen: set[str] = set()
        for r in collapsed:
            if r.kind == "scripture":
                assert not set(r.refs) <= seen, (query, r.chunk_id)
                seen |= set(r.refs)
    kept = find(conn, small_index, "the Lord is my shepherd",
                config=SearchConfig.from_options(collapse_covered=False)).results
    assert len(kept) == 20  # without collapsing, redundant hits fill the list


def test_a_paragraph_answers_with_its_own_verses_not_its_neighbours(conn, small_index):
    version, _ = small_index
    table = sql.Identifier(versions.get_version(conn, version).table_name)
    verse_text = dict(conn.execute(sql.SQL("SELECT refs[1], text FROM {} WHERE granularity = 'verse'").format(table)).fetchall())
    paragraphs = [r for query in ("do not be anxious about anything", "the Lord is my shepherd")
                  for r in find(conn, small_index, query, config=SearchConfig.from_options(mode="vector")).results
                  if r.granularity == "paragraph"]
    assert paragraphs
    for hit in paragraphs:
        header, own = hit.text.split("\n", 1)
        assert header.startswith(("Philippians", "Psalm", "Romans", "John")), header
        assert own == " ".join(verse_text[ref] for ref in hit.refs), hit.chunk_id
    # What was embedded and indexed still holds the neighbouring sentences that found it.
    stored = conn.execute(sql.SQL("SELECT text FROM {} WHERE chunk_id = %s").format(table), [paragraphs[0].chunk_id]).fetchone()[0]
    assert len(stored) > len(paragraphs[0].text.split("\n", 1)[1])


def test_a_version_is_searched_with_the_model_that_embedded_it(conn, small_index, tmp_path, settings):
    from lectio.embedding.model import MODEL_NAME, ModelChoice

    sources = tmp_path / "sources.yaml"
    sources.write_text(SOURCES)
    frame = chunks_frame(run_source(sources, "web", settings.corpus_dir)[1])
    int8 = Embedder(choice=ModelChoice(MODEL_NAME, "int8"))
    embed_chunks(conn, frame, int8)
    version = build_index(conn, frame, int8.model_id, [], switch_live=False).version
    assert versions.get_version(conn, version).model_id == int8.model_id != small_index[1].model_id
    vector = SearchConfig.from_options(mode="vector")
    query = "the Lord is my shepherd"
    # This process embeds in fp32; the version's own model embeds the query all the same.
    as_configured = search(conn, SearchRequest(query, version=version, config=vector), embedder=small_index[1]).results
    as_built = search(conn, SearchRequest(query, version=version, config=vector), embedder=int8).results
    assert as_configured and [(r.chunk_id, r.score) for r in as_configured] == [(r.chunk_id, r.score) for r in as_built]
    unknown = versions.get_version(conn, version)
    conn.execute("UPDATE index_versions SET model_id = 'e5-small@1.0' WHERE version = %s", [version])
    try:
        response = search(conn, SearchRequest(query, version=version, config=vector), embedder=small_index[1])
        reference = search(conn, SearchRequest("Romans 5:1", version=version))  # looked up, not embedded
    finally:
        conn.execute("UPDATE index_versions SET model_id = %s WHERE version = %s", [unknown.model_id, version])
    assert not response.results and "'e5-small@1.0' is not one this lectio can load" in response.message
    assert reference.mode == "reference" and reference.results[0].refs == ["rom_5_1"]


# ---------------------------------------------------------------- cross-references


def test_the_graph_links_what_the_corpus_cites(conn, small_index):
    version, _ = small_index
    table = versions.get_version(conn, version).table_name
    with conn.transaction():
        security.act_as_reader(conn, ("public", "user:alice"))
        as_alice = xrefs.linked(conn, table, ["ps_23_1"], depth=1)
    with conn.transaction():
        security.act_as_reader(conn, ("public",))
        as_public = xrefs.linked(conn, table, ["ps_23_1"], depth=1)
    assert as_alice["rom_5_8"] == (1, 1)
    assert "rom_5_8" not in as_public  # a private note's link is as private as the note


def test_a_linked_verse_rises_only_for_who_may_see_the_link(conn, small_index):
    query = "Yahweh is my shepherd, I shall lack nothing"
    xref = SearchConfig.from_options(xref_weight=1.0)
    with_link = find(conn, small_index, query, k=100, principals=("public", "user:alice"), config=xref).results
    without = find(conn, small_index, query, k=100, principals=("public",), config=xref).results
    linked, unlinked = rank_of(with_link, "rom_5_8"), rank_of(without, "rom_5_8")
    assert linked is not None and (unlinked is None or linked < unlinked)
    assert linked <= 20  # raised into a first page, not merely present
    off = find(conn, small_index, query, k=100, principals=("public", "user:alice")).results  # off by default
    assert rank_of(off, "rom_5_8") == rank_of(without, "rom_5_8")


# ---------------------------------------------------------------- other kinds speak for scripture

SCRIPTURE = Filters(kind="scripture")
# Neither the evidence nor feedback from the unfiltered first page: the other kinds say nothing.
NO_EVIDENCE = SearchConfig.from_options(["evidence.weight=0", "feedback.weight=0"])


@pytest.fixture(params=["one connection", "two connections"])
def second(request, database):
    """None, or a second connection: a service reads a filtered search's evidence on it, beside
    the filtered ranking."""
    if request.param == "one connection":
        yield None
        return
    with database.connect() as connection:
        yield connection


def test_a_note_the_caller_may_read_speaks_for_its_verse_under_a_scripture_filter(conn, small_index, second):
    # Only Alice's note says "bellwort"; no verse does. Asked for scripture, she gets the verse her
    # note is on first; without the evidence, that verse is not first.
    alice = ("public", "user:alice")
    assert find(conn, small_index, "bellwort", principals=alice).results[0].source_id == "notes-alice"
    spoken = find(conn, small_index, "bellwort", principals=alice, filters=SCRIPTURE, vector_conn=second).results
    assert all(r.kind == "scripture" for r in spoken)
    assert spoken[0].refs == ["john_3_8"]
    silent = find(conn, small_index, "bellwort", principals=alice, filters=SCRIPTURE, config=NO_EVIDENCE,
                  vector_conn=second).results
    assert silent[0].refs != ["john_3_8"]


@pytest.mark.parametrize("principals", [("public",), ("public", "user:bob")])
def test_a_note_speaks_for_no_caller_its_acl_does_not_name(conn, small_index, second, principals):
    # The wider search runs as the same caller: for anyone else the note does not exist, so the
    # verse it is on gains nothing from it.
    spoken = find(conn, small_index, "bellwort", principals=principals, filters=SCRIPTURE, vector_conn=second).results
    assert spoken and spoken[0].refs != ["john_3_8"]
    unfiltered = find(conn, small_index, "bellwort", principals=principals).results
    assert "notes-alice" not in {r.source_id for r in unfiltered}


@pytest.mark.parametrize("query", ["the Lord is my shepherd", "bellwort", "sheep"])
def test_a_scripture_search_ranks_the_same_on_one_connection_or_two(conn, small_index, database, query):
    alice = ("public", "user:alice")
    alone = find(conn, small_index, query, principals=alice, filters=SCRIPTURE).results
    with database.connect() as second:
        beside = find(conn, small_index, query, principals=alice, filters=SCRIPTURE, vector_conn=second).results
    assert alone and [(r.chunk_id, r.score) for r in beside] == [(r.chunk_id, r.score) for r in alone]


def test_a_hit_is_given_as_the_passage_that_best_matches_its_verses(conn, small_index):
    version, _ = small_index
    table = versions.get_version(conn, version).table_name
    rows = conn.execute(sql.SQL("SELECT chunk_id, refs FROM {} WHERE source_id IN ('mhcc', 'study-notes') "
                                "OR chunk_id = 'ps_23_4_web' ORDER BY chunk_id").format(sql.Identifier(table))).fetchall()
    scripture = conn.execute(sql.SQL("SELECT chunk_id, refs FROM {} WHERE kind = 'scripture' AND translation = 'WEB'")
                             .format(sql.Identifier(table))).fetchall()
    ranked = [(chunk_id, 1.0 / rank) for rank, (chunk_id, _) in enumerate(rows, start=1)]
    where, params = Scope(("public",), SCRIPTURE).where("WEB")
    page = [(chunk_id, refs, 1.0 / rank) for rank, (chunk_id, refs) in enumerate(rows, start=1)]
    spoken = dict(evidence.covered_passages(conn, table, page, where, params, max_verses=20))
    assert spoken.get("ps_23_4_web") == 1.0 / (1 + [c for c, _ in rows].index("ps_23_4_web"))  # itself
    for chunk_id, refs in rows:
        if chunk_id == "ps_23_4_web" or not refs or len(refs) > 20:
            continue

        def jaccard(other):
            return len(set(refs) & set(other)) / len(set(refs) | set(other))

        best = max(jaccard(other) for _, other in scripture)
        assert best > 0
        given = [c for c, score in spoken.items() if score == dict(ranked)[chunk_id]]
        assert len(given) <= 1 and (not given or jaccard(dict(scripture)[given[0]]) == best), chunk_id
    assert all(c in dict(scripture) for c in spoken)


def test_word_statistics_reveal_no_private_word(conn, small_index, database):
    import psycopg

    table = versions.get_version(conn, small_index[0]).table_name
    with psycopg.connect(database.reader_url(security.READER_ROLE), autocommit=True) as reader:
        with reader.transaction():
            reader.execute("SELECT set_config('lectio.principals', %s, true)",
                           (security.sign(conn, ["public", "user:alice"]),))
            assert reader.execute(f"SELECT count(*) FROM {tables.lexicon_table(table)} WHERE word = 'quillwort'").fetchone()[0] == 0
            # The postings hold private words too, and show them only to whom the chunk's ACL names.
            assert reader.execute(f"SELECT count(*) FROM {postings.table_name(table)} WHERE term = 'quillwort'").fetchone()[0] == 1
        with reader.transaction():
            reader.execute("SELECT set_config('lectio.principals', %s, true)", (security.sign(conn, ["public"]),))
            assert reader.execute(f"SELECT count(*) FROM {postings.table_name(table)} WHERE term = 'quillwort'").fetchone()[0] == 0
            assert reader.execute(f"SELECT count(*) FROM {postings.table_name(table)} WHERE term = 'shepherd'").fetchone()[0] > 0
    # Its owner still finds the note by that word.
    mine = find(conn, small_index, "quillwort", k=3, principals=("public", "user:alice"),
                config=SearchConfig.from_options(mode="lexical")).results
    assert mine and mine[0].source_id == "notes-alice"


# ---------------------------------------------------------------- BM25 postings


def lexical_both_ways(conn, small_index, query, principals=("public",), filters=Filters(), config=SearchConfig()):
    """BM25 candidates read from the postings, and by scoring every chunk that holds a query word."""
    info = versions.get_version(conn, small_index[0])
    table = info.table_name
    chosen = Scope(principals, filters, info.bm25_corpus)
    where, params = chosen.where("WEB")
    extra = expansion_words(query, config.expansion)
    with conn.transaction():
        security.act_as_reader(conn, principals)
        read = lexical.PostingsIndex(lexical.Rows(conn, table, where, params, 7),
                                     where if chosen.on_postings else None).words(query, extra, config)
        scanned = lexical.ScanIndex(lexical.Rows(conn, table, where, params)).words(query, extra, config)
    return read, scanned


@pytest.mark.parametrize("query, principals, filters", [
    ("the Lord is my shepherd", ("public",), Filters()),
    ("justified by faith we have peace with God", ("public",), Filters(kind="scripture")),
    ("God's care for his flock", ("public",), Filters(testament="OT")),  # a filter postings cannot apply
    ("quillwort care", ("public", "user:alice"), Filters()),
])
def test_postings_find_what_scoring_every_chunk_finds(conn, small_index, query, principals, filters):
    read, scanned = lexical_both_ways(conn, small_index, query, principals, filters)
    assert read and [chunk_id for chunk_id, _ in read] == [chunk_id for chunk_id, _ in scanned]
    # The same sums, added in another order.
    assert [score for _, score in read] == pytest.approx([score for _, score in scanned], rel=1e-12)


@pytest.mark.parametrize("query", ["the Lord is my shepherd", "do not be anxious about anything", "quillwort care"])
def test_the_vector_side_on_a_second_connection_ranks_the_same(conn, small_index, database, query):
    principals = ("public", "user:alice")
    alone = find(conn, small_index, query, principals=principals)
    with database.connect() as second:
        beside = find(conn, small_index, query, principals=principals, vector_conn=second)
    assert alone.results and [(r.chunk_id, r.score) for r in beside.results] == [(r.chunk_id, r.score) for r in alone.results]


def test_postings_read_deep_enough_score_as_before(conn, small_index):
    # Reading only each word's single best posting finds fewer chunks, each scored as before.
    shallow = SearchConfig.from_options(lexical_depth=1, lexical_rescored=3)
    read, scanned = lexical_both_ways(conn, small_index, "the good shepherd gives his life for the sheep", config=shallow)
    whole = dict(lexical_both_ways(conn, small_index, "the good shepherd gives his life for the sheep")[1])
    assert 0 < len(read) <= 3 < len(scanned)
    assert all(score == pytest.approx(whole[chunk_id]) for chunk_id, score in read)


def test_stored_title_words_match_as_the_titles_do(conn, small_index):
    table = versions.get_version(conn, small_index[0]).table_name
    where, params = Scope(("public",), Filters()).where("WEB")
    found = []
    for query in ("The Good Shepherd", "the Lord is my shepherd", "peace with God"):
        with conn.transaction():
            security.act_as_reader(conn, ("public",))
            stored = lexical.PostingsIndex(lexical.Rows(conn, table, where, params, 7)).titles(query, SearchConfig())
            read = lexical.ScanIndex(lexical.Rows(conn, table, where, params)).titles(query, SearchConfig())
        assert stored == read
        found += stored
    assert found


def test_a_title_matches_only_a_query_it_holds_most_of(conn, small_index):
    table = versions.get_version(conn, small_index[0]).table_name
    where, params = Scope(("public",), Filters()).where("WEB")

    def titled(query, config=SearchConfig()):
        with conn.transaction():
            security.act_as_reader(conn, ("public",))
            index = lexical.PostingsIndex(lexical.Rows(conn, table, where, params, 7))
            return [chunk_id for chunk_id, _ in index.titles(query, config)]

    assert titled("the good shepherd")[0].startswith("john_10_1_")
    # One word of two ("shepherd" of "the hired shepherd") is no name for "The Good Shepherd".
    assert titled("the hired shepherd") == []
    assert titled("the hired shepherd", SearchConfig.from_options(title_query_share=0.5))


# ---------------------------------------------------------------- citation prior


def test_citations_count_public_texts_once_each():
    frame = pd.DataFrame([
        {"kind": "commentary", "acl": ["public"], "text": "Compare Romans 5:8 and again Rom 5:8.", "metadata": {}},
        {"kind": "commentary", "acl": ["public"], "text": "See Romans 5:8.", "metadata": {"cross_refs": ["ps_23_1"]}},
        {"kind": "notes", "acl": ["user:alice"], "text": "John 3:16 is mine alone.", "metadata": {}},
        {"kind": "scripture", "acl": ["public"], "text": "as it is written in Romans 5:8", "metadata": {}},
        {"kind": "commentary", "acl": ["public"], "text": "All of Romans 5.", "metadata": {}},  # too long a span
    ])
    assert citations.citations(frame) == {"rom_5_8": 2, "ps_23_1": 1}


def test_often_cited_passages_rise_among_close_hits(conn, small_index):
    version, _ = small_index
    table = versions.get_version(conn, version).table_name
    counts = dict(conn.execute(f"SELECT ref, chunks FROM {citations.table_name(table)}").fetchall())
    assert counts == {"ps_23_1": 3, "john_3_16": 3}  # Alice's private citation of Romans 5:8 counts for nothing
    # John 3:15, 3:16 and 3:36 all promise eternal life; the verse the notes keep citing goes first.
    # The notes are on verses already listed: kept in their place, not moved after the others.
    plain = find(conn, small_index, "everlasting life",
                 config=SearchConfig.from_options(prominence_weight=0, commentary_later=False)).results
    weighed = find(conn, small_index, "everlasting life",
                   config=SearchConfig.from_options(prominence_weight=1.0, commentary_later=False)).results
    assert plain[0].chunk_id != "john_3_16_web"
    assert weighed[0].chunk_id == "john_3_16_web"
    # Only scripture is weighed: the notes themselves keep their place relative to each other.
    notes = [r.chunk_id for r in plain if r.source_id == "study-notes"]
    assert notes
    assert notes == [r.chunk_id for r in weighed if r.source_id == "study-notes"]


def _beyond_cap(results, cap=2):
    """Positions of each non-scripture source's hits past its first `cap`."""
    seen: dict[str, int] = {}
    beyond = []
    for position, r in enumerate(results):
        if r.kind != "scripture":
            seen[r.source_id] = seen.get(r.source_id, 0) + 1
            if seen[r.source_id] > cap:
                beyond.append(position)
    return beyond


def test_one_commentary_cannot_fill_the_first_page(conn, small_index):
    query = "the shepherd"
    # The fixture's notes are all on Psalm 23's verses: they would follow the verses as covered.
    plain = find(conn, small_index, query,
                 config=SearchConfig.from_options(per_source=None, commentary_later=False)).results
    spread = find(conn, small_index, query, config=SearchConfig.from_options(commentary_later=False)).results
    late = _beyond_cap(plain)
    assert late and late[0] < len(plain) - len(late)  # without the cap, a third note comes early
    moved = _beyond_cap(spread)
    assert moved == list(range(len(spread) - len(moved), len(spread)))  # with it, extras come last
    # Asking for one kind is asking for that kind's best, in order.
    notes = find(conn, small_index, query, filters=Filters(kind="notes")).results
    assert [r.chunk_id for r in notes] == [
        r.chunk_id for r in find(conn, small_index, query, filters=Filters(kind="notes"),
                                 config=SearchConfig.from_options(per_source=None)).results]


# ---------------------------------------------------------------- word studies


def test_word_study_queries_are_recognised():
    assert detect("G26").term == "G26"
    assert detect("g26").term == "G26"
    assert detect("what does H2617 mean").language == "Hebrew"
    assert detect("ἀγάπη").how == "script"
    assert detect("the Greek word for love") == detect("the greek word for love")
    assert detect("the Greek word for love").how == "meaning"
    assert detect("agape").how == "transliteration"
    assert detect("Abraham") is None  # a capitalised word is a name more often than a transliteration
    assert detect("Hebrew slaves in Egypt") is None  # naming a language is not asking for a word
    assert detect("how should Christians treat the poor") is None


@pytest.mark.parametrize("query", ["G25", "ἀγαπάω", "αγαπαω", "agapao", "the Greek word agapao"])
def test_a_word_gets_its_entry_then_the_verses_that_use_it(conn, small_index, query):
    response = find(conn, small_index, query, k=10)
    assert response.mode == "word-study"
    assert response.results[0].chunk_id == "strongs_g25"
    verses = [r for r in response.results[1:] if r.granularity == "verse"]
    assert verses and {r.translation for r in verses} == {"WEB"}
    table = versions.get_version(conn, small_index[0]).table_name
    tagged = conn.execute(
        f"SELECT count(*) FROM {table} WHERE chunk_id = ANY(%s) AND metadata -> 'strongs' ? 'G25'",
        [[r.chunk_id for r in verses]],
    ).fetchone()[0]
    assert tagged == len(verses)  # every verse returned uses the word
    assert "john_3_16" in {r.refs[0] for r in verses}


def test_a_word_by_meaning_and_an_unknown_number(conn, small_index):
    by_meaning = find(conn, small_index, "the Greek word for shepherd", k=5).results
    assert by_meaning[0].chunk_id == "strongs_g4166"
    missing = find(conn, small_index, "G5000")
    assert missing.results == [] and "G5000" in missing.message


def test_a_word_study_ignores_filters_meant_for_verses(conn, small_index):
    response = find(conn, small_index, "G25", k=5, filters=Filters(testament="NT"))
    assert response.results[0].chunk_id == "strongs_g25"
    assert all(r.refs[0].startswith(("john_", "rom_")) for r in response.results[1:])


def test_bad_k_is_refused(conn, small_index):
    with pytest.raises(ValueError, match="k must be an integer from 1 to 1,000, not 0"):
        find(conn, small_index, "grace", k=0)


def test_odd_queries_get_an_answer_not_an_error(conn, small_index):
    assert find(conn, small_index, "   ").message == "empty query: nothing to search for"
    nul = find(conn, small_index, "the Lord is\x00 my shepherd").results  # NUL cannot reach PostgreSQL
    assert nul and nul[0].refs[0] == "ps_23_1"
    wide = find(conn, small_index, "the Lord is my shepherd", config=SearchConfig.from_options(candidates=1500)).results
    assert wide and wide[0].refs[0] == "ps_23_1"  # past pgvector's ef_search limit of 1,000



def test_topical_search_leaves_dictionary_entries_out(conn, small_index):
    results = find(conn, small_index, "love for the world", k=50).results
    assert results and all(r.kind != "lexicon" for r in results)


# ---------------------------------------------------------------- filters


def test_filters_narrow_without_starving(conn, small_index):
    # Psalm 23 is this corpus's only Old Testament text: six verses, their paragraphs, a pericope.
    old = find(conn, small_index, "God's care", k=5, filters=Filters(testament="OT")).results
    assert len(old) == 5 and all(r.refs[0].startswith("ps_") for r in old if r.refs)
    new = find(conn, small_index, "God's care", k=10, filters=Filters(testament="NT", kind="scripture")).results
    assert len(new) == 10 and all(r.refs[0].split("_")[0] in ("john", "rom") for r in new)
    reformed = find(conn, small_index, "God's care", k=5, filters=Filters(tradition="Reformed")).results
    assert reformed and {r.source_id for r in reformed} == {"mhcc"}
    assert find(conn, small_index, "God's care", filters=Filters(tradition="Lutheran")).results == []


def test_mmr_trades_near_duplicates_for_breadth(conn, small_index):
    query = "God so loved the world that he gave his Son"
    plain = find(conn, small_index, query, k=8).results
    diverse = find(conn, small_index, query, k=8, config=SearchConfig.from_options(mmr_lambda=0.5)).results
    assert plain[0].chunk_id == diverse[0].chunk_id  # the best hit stays first
    assert len(diverse) == 8 and [r.chunk_id for r in diverse] != [r.chunk_id for r in plain]
    relevance_only = find(conn, small_index, query, k=8, config=SearchConfig.from_options(mmr_lambda=1.0)).results
    assert [r.chunk_id for r in relevance_only] == [r.chunk_id for r in plain]


def test_a_dictionary_key_stored_twice_gives_one_entry(tmp_path, settings):
    # StrongsHebrew holds H2200 twice; chunk ids must stay unique (a blocking quality check).
    (tmp_path / "sources.yaml").write_text(
        "sources:\n  - {id: h, kind: lexicon, format: sword-lexicon, module: StrongsHebrew, select: H2199-H2200,"
        " acl: [public]}\n")
    sources = tmp_path / "sources.yaml"
    chunks = run_source(sources, "h", settings.corpus_dir)[1]
    assert [c.chunk_id for c in chunks] == ["strongs_h2199", "strongs_h2200"]
    assert chunks[1].metadata["language"] == "Hebrew" and chunks[1].metadata["lemma"]

