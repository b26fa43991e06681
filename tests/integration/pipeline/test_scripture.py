"""Scripture through the real SWORD reader on a few chapters: structure, verses and pericopes
(the modules downloaded on first use; the errors that need none:
tests/unit/rulesets/test_scripture_errors.py)."""

import pytest

from lectio.rulesets import scripture
from lectio.embedding.model import count_tokens
from lectio.sources import Source, SourceError

pytestmark = pytest.mark.network


def bible(select: str, module="engWEB2015eb", translation="WEB") -> Source:
    return Source(id=translation.lower(), kind="scripture", format="sword-bible", acl=("public", "group:staff"),
                  module=module, select=select, metadata={"translation": translation, "title": "Test Bible"})


@pytest.fixture(scope="module")
def philippians(settings):
    source = bible("Philippians")
    raw = scripture.read(source, settings.corpus_dir)
    structure = scripture.parse(source, raw)
    return source, raw, structure, scripture.chunk(source, structure)


def test_structure_has_every_verse_with_paragraph_starts(philippians):
    _, raw, structure, _ = philippians
    assert raw.units == len(structure) == 104  # 30 + 30 + 21 + 23
    assert structure.groupby("chapter").size().to_dict() == {1: 30, 2: 30, 3: 21, 4: 23}
    starts = structure[structure["paragraph_start"]]
    # Every chapter opens a paragraph, and WEB marks paragraphs inside chapters too.
    assert set(starts[starts["verse"] == 1]["chapter"]) == {1, 2, 3, 4}
    assert len(starts) > 4


def test_verse_chunks_carry_the_seed_fields(philippians):
    _, _, structure, chunks = philippians
    verses = {c.chunk_id: c for c in chunks if c.granularity == "verse"}
    assert len(verses) == len(structure)
    verse = verses["phil_4_6_web"]
    assert verse.refs == ("phil_4_6",)
    assert (verse.book, verse.chapter, verse.verse) == ("phil", 4, 6)
    assert verse.text.startswith("In nothing be anxious")
    assert (verse.testament, verse.genre, verse.translation) == ("new", "epistle", "WEB")
    assert verse.header == "Philippians 4:6 (WEB)"


def test_pericopes_partition_the_verses_and_parent_them(philippians):
    _, _, structure, chunks = philippians
    pericopes = {c.chunk_id: c for c in chunks if c.granularity == "pericope"}
    covered = [ref for p in pericopes.values() for ref in p.refs]
    assert sorted(covered) == sorted(structure["ref"])  # each verse in exactly one pericope
    anxious = next(p for p in pericopes.values() if "phil_4_6" in p.refs)
    assert anxious.chunk_id == f"{anxious.refs[0]}_{anxious.refs[-1].split('_')[-1]}_web"
    assert anxious.title and anxious.text.startswith(anxious.title)
    assert anxious.metadata["start_ref"] == anxious.refs[0] and anxious.metadata["end_ref"] == anxious.refs[-1]
    for chunk in chunks:
        if chunk.granularity == "verse":
            assert chunk.parent_id in pericopes and chunk.refs[0] in pericopes[chunk.parent_id].refs


def test_every_chunk_has_acl_ruleset_hash_and_real_token_count(philippians):
    source, _, _, chunks = philippians
    assert count_tokens([c.text for c in chunks]) == [c.tokens for c in chunks]
    for chunk in chunks:
        assert chunk.acl == source.acl
        assert chunk.ruleset == scripture.RULESET
        assert len(chunk.content_hash) == 64


def test_chunk_ids_are_stable(philippians, settings):
    source, raw, _, chunks = philippians
    again = scripture.chunk(source, scripture.parse(source, scripture.read(source, settings.corpus_dir)))
    assert [c.chunk_id for c in again] == [c.chunk_id for c in chunks]
    assert scripture.read(source, settings.corpus_dir).content_hash == raw.content_hash


def test_empty_verse_slots_are_reported_not_dropped(settings):
    source = bible("Acts 8")
    structure = scripture.parse(source, scripture.read(source, settings.corpus_dir))
    assert scripture.empty_verses(structure) == ["acts_8_37"]
    chunks = scripture.chunk(source, structure)
    verse_ids = {c.chunk_id for c in chunks if c.granularity == "verse"}
    # Count in = count out: every slot is either a verse chunk or a reported empty verse.
    assert len(verse_ids) + 1 == len(structure) == 40
    assert "acts_8_37_web" not in verse_ids


def test_the_glossary_after_revelation_22_21_is_cut_off(settings):
    source = bible("Revelation 22")
    structure = scripture.parse(source, scripture.read(source, settings.corpus_dir)).set_index("ref")
    assert len(structure.loc["rev_22_21", "text"]) < 200
    assert structure.loc["rev_22_21", "dropped_chars"] > 10_000


def test_kjv_uses_its_own_ids_and_pilcrows(settings):
    source = bible("Philippians 4", module="engKJV2006eb", translation="KJV")
    structure = scripture.parse(source, scripture.read(source, settings.corpus_dir))
    chunks = scripture.chunk(source, structure)
    assert "phil_4_6_kjv" in {c.chunk_id for c in chunks}
    assert not structure["text"].str.contains("¶").any()


def test_select_that_is_not_a_passage_is_a_source_error(settings):
    with pytest.raises(SourceError, match="'select'"):
        scripture.read(bible("the good bits"), settings.corpus_dir)


def test_paragraphs_carry_two_sentences_of_context_within_the_model_window(philippians):
    from lectio.embedding.model import MAX_TEXT_TOKENS
    from lectio.rulesets.textsplit import sentences

    _, _, structure, chunks = philippians
    paragraphs = [c for c in chunks if c.granularity == "paragraph"]
    covered = [ref for p in paragraphs for ref in p.refs]
    assert sorted(covered) == sorted(structure["ref"])  # each verse in exactly one paragraph piece
    assert all(p.tokens <= MAX_TEXT_TOKENS for p in paragraphs)
    text_of = dict(zip(structure["ref"], structure["text"]))
    second = paragraphs[1]
    previous = " ".join(text_of[r] for r in paragraphs[0].refs)
    # The paragraph's own verses are whole, preceded by the previous paragraph's last two sentences.
    assert " ".join(text_of[r] for r in second.refs) in second.text
    assert second.metadata["context_sentences"] == 2
    assert second.text.startswith(" ".join(sentences(previous)[-2:]))
    # An answer carries the paragraph's own verses only: the context is there to find it by.
    start, end = second.metadata["answer_span"]
    assert second.text[start:end] == " ".join(text_of[r] for r in second.refs)
    assert all(p.text[slice(*p.metadata["answer_span"])] == " ".join(text_of[r] for r in p.refs) for p in paragraphs)
    assert second.chunk_id.endswith("_web_para")


def test_baseline_rulesets(settings):
    from lectio.embedding.model import tokenizer

    chapters = bible("Philippians")
    chapters = Source(**{**chapters.__dict__, "chunking": "chapter"})
    structure = scripture.parse(chapters, scripture.read(chapters, settings.corpus_dir))
    by_chapter = scripture.chunk(chapters, structure)
    assert [c.chunk_id for c in by_chapter] == [f"phil_{n}_web_chapter" for n in (1, 2, 3, 4)]
    assert {c.ruleset for c in by_chapter} == {scripture.RULESETS["chapter"]} != {scripture.RULESET}

    fixed = Source(**{**chapters.__dict__, "chunking": "fixed-512"})
    windows = scripture.chunk(fixed, structure)
    sizes = [len(tokenizer().encode(w.text, add_special_tokens=False).ids) for w in windows]
    assert all(abs(n - 512) <= 2 for n in sizes[:-1]) and sizes[-1] <= 512
    # 64 tokens of overlap: the next window starts inside the previous one.
    assert windows[1].text[:40] in windows[0].text
    assert set(windows[0].refs) & set(windows[1].refs)
    with pytest.raises(SourceError, match="unknown scripture chunking 'sentences'"):
        scripture.chunk(Source(**{**chapters.__dict__, "chunking": "sentences"}), structure)



@pytest.fixture(scope="module")
def split_paragraph(settings):
    """Philippians 4's paragraph pieces with room for 96 tokens, too few for WEB's paragraph
    4:10-20, which is cut at verse boundaries; (verse texts, pieces of 4:10-20, all paragraphs)."""
    source = Source(**{**bible("Philippians 4").__dict__, "rules": {"paragraph_max_tokens": 96}})
    structure = scripture.parse(source, scripture.read(source, settings.corpus_dir))
    paragraphs = [c for c in scripture.chunk(source, structure) if c.granularity == "paragraph"]
    pieces = [p for p in paragraphs if 10 <= p.verse <= 20]
    assert [r for p in pieces for r in p.refs] == [f"phil_4_{n}" for n in range(10, 21)] and len(pieces) > 2
    return dict(zip(structure["ref"], structure["text"])), pieces, paragraphs


def test_a_split_paragraphs_pieces_carry_their_own_neighbours_as_context(split_paragraph):
    from lectio.rulesets.textsplit import sentences

    text_of, pieces, paragraphs = split_paragraph
    verses = lambda piece: " ".join(text_of[r] for r in piece.refs)  # noqa: E731
    outside_before, outside_after = paragraphs[paragraphs.index(pieces[0]) - 1], paragraphs[paragraphs.index(pieces[-1]) + 1]
    assert outside_before.refs[-1] == "phil_4_9" and outside_after.refs[0] == "phil_4_21"
    # Each piece: the text just before it (the previous piece, or 4:9's paragraph for the first)
    # and just after it (the next piece, or 4:21's paragraph for the last), as many sentences as fit.
    neighbours = [outside_before, *pieces, outside_after]
    for before, piece, after in zip(neighbours, neighbours[1:], neighbours[2:]):
        n = piece.metadata["context_sentences"]
        parts = [" ".join(sentences(verses(before))[-n:]) if n else "", verses(piece), " ".join(sentences(verses(after))[:n])]
        assert piece.text == "\n".join(t for t in parts if t), piece.chunk_id
    inner = pieces[len(pieces) // 2]
    assert inner.metadata["context_sentences"] >= 1
    assert "Finally, brothers" not in inner.text and "Greet every saint" not in inner.text  # 4:8, 4:21


def test_a_split_paragraphs_pieces_are_headed_by_their_own_verses(split_paragraph):
    _, pieces, _ = split_paragraph
    # A one-verse piece is headed by that verse ("Philippians 4:18", not "4:18-18"); its id
    # keeps the span's form.
    single = next(p for p in pieces if len(p.refs) == 1)
    assert single.header == f"Philippians 4:{single.verse} (WEB)"
    assert single.chunk_id == f"phil_4_{single.verse}_{single.verse}_web_para"
    for piece in pieces:
        last = piece.refs[-1].rsplit("_", 1)[1]
        assert piece.header == f"Philippians 4:{piece.verse}" + (f"-{last}" if len(piece.refs) > 1 else "") + " (WEB)"
        assert piece.metadata["start_ref"] == piece.refs[0] and piece.metadata["end_ref"] == piece.refs[-1]
