"""Reformation texts: the Westminster Standards from the real `westminster-standards-cli` data,
and numbered theses from a fixture disputation."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

import pytest

from lectio.rulesets import westminster
from lectio.rulesets import theses
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.sources import Source, SourceError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reformation"
STANDARDS = Path(str(importlib.resources.files("westminster_cli") / "data" / "standards.json"))


def standards_source(select=None, path=None, sid="westminster") -> Source:
    return Source(
        id=sid,
        kind="reformation",
        format="westminster-json",
        acl=("public",),
        path=path,
        module=None if path else "westminster-standards-cli",
        select=select,
        metadata={"author": "Westminster Assembly", "tradition": "Reformed"},
    )


def run(source: Source):
    raw = westminster.read(source, None)
    units = westminster.parse(source, raw)
    return raw, units, westminster.chunk(source, units)


@pytest.fixture(scope="module")
def standards():
    """Every chunk of the three documents, from the installed package's data."""
    return run(standards_source())


def by_id(chunks, suffix):
    found = [c for c in chunks if c.chunk_id == f"westminster/{suffix}"]
    assert len(found) == 1, suffix
    return found[0]


# ---------------------------------------------------------------- the Standards


def test_every_entry_of_the_three_documents_becomes_chunks(standards):
    raw, units, chunks = standards
    assert [d["id"] for d in raw.payload] == ["wcf", "wlc", "wsc"]
    assert raw.units == len(units) == 171 + 196 + 107
    covered = {
        (
            c.metadata["document"],
            c.metadata.get("chapter"),
            c.metadata.get("section"),
            c.metadata.get("question_number"),
        )
        for c in chunks
    }
    assert len(covered) == len(units)  # no section or question lost
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert {c.granularity for c in chunks} == {"section", "qa"}
    assert all(c.acl == ("public",) and c.kind == "reformation" and c.ruleset == westminster.RULESET for c in chunks)


def test_confession_section_has_its_chapter_heading_in_the_embedded_text(standards):
    section = by_id(standards[2], "wcf_11_1")
    assert section.text.startswith(
        "[Westminster Confession of Faith | Chapter 11: Of Justification | Section 1]\n\n"
        "Those whom God effectually calleth, he also freely justifieth"
    )
    assert section.granularity == "section"
    assert section.breadcrumb == "Westminster Confession of Faith › Chapter 11: Of Justification › Section 1"
    assert section.metadata["heading"] == "Of Justification"
    assert (section.metadata["chapter"], section.metadata["section"]) == (11, 1)
    assert section.header is None and section.title == "Westminster Confession of Faith"


def test_shorter_catechism_q1_is_one_chunk_with_question_and_answer(standards):
    q1 = [c for c in standards[2] if c.metadata["document"] == "wsc" and c.metadata.get("question_number") == 1]
    assert len(q1) == 1
    assert q1[0].text == (
        "[Westminster Shorter Catechism | Q. 1]\n\n"
        "Q. What is the chief end of man?\n"
        "A. Man's chief end is to glorify God, and to enjoy him forever."
    )
    assert q1[0].granularity == "qa" and q1[0].chunk_id == "westminster/wsc_q1"
    # Its proof texts (Ps. 86:9, Rom. 11:36, …) are a later edition's selection, not its refs.
    assert q1[0].refs == () and q1[0].ordinal is None


def test_no_chunk_exceeds_the_model_limit(standards):
    chunks = standards[2]
    assert max(c.tokens for c in chunks) <= MAX_TEXT_TOKENS
    assert [c.tokens for c in chunks] == count_tokens([c.text for c in chunks])


def test_a_long_answer_splits_at_clauses_keeping_header_and_question(standards):
    question = "What are the sins forbidden in the ninth commandment?"
    pieces = [c for c in standards[2] if c.chunk_id.startswith("westminster/wlc_q145_")]
    assert len(pieces) >= 2
    answer = next(
        e["answer"] for e in json.loads(STANDARDS.read_text())["documents"][1]["entries"] if e["ref"] == "145"
    )
    parts = []
    for part, piece in enumerate(pieces, start=1):
        head = f"[Westminster Larger Catechism | Q. 145 | Part {part} of {len(pieces)}]\n\nQ. {question}\nA. "
        assert piece.text.startswith(head)
        assert piece.metadata["part"] == part and piece.metadata["parts"] == len(pieces)
        parts.append(piece.text[len(head) :])
        assert parts[-1].endswith((";", ".")), "cut between clauses, not inside one"
    assert " ".join(parts) == answer  # nothing lost, nothing repeated


def test_no_proof_text_or_modern_edition_wording_leaks_in(standards):
    raw, _, chunks = standards
    source_text = STANDARDS.read_text()
    # Present in the file (proof selections; the modern edition's wording) …
    leaks = ["See Rom. 1:32-2:1", "Compared with 1 Cor. 8:4, 6", "without excuse", "predestined", "hellfire"]
    for text in leaks:
        assert text in source_text
    # … and nowhere in what lectio read or chunked.
    payload = json.dumps(raw.payload)
    everything = "\n".join(c.text + json.dumps(c.metadata) for c in chunks)
    for text in leaks:
        assert text not in payload and text not in everything, text
    assert "proofs" not in payload and "_mesv" not in payload
    assert "predestinated" in everything  # the original's own word for it is there


def test_select_takes_one_document_and_refuses_unknown_names():
    raw = westminster.read(standards_source(select="shorter"), None)
    assert [d["id"] for d in raw.payload] == ["wsc"] and raw.units == 107
    with pytest.raises(SourceError, match="'select' names no document 'heidelberg'"):
        westminster.read(standards_source(select="heidelberg"), None)
    with pytest.raises(SourceError, match="westminster-standards-cli"):
        westminster.read(Source("w", "reformation", "westminster-json", ("public",), module="other"), None)


def _standards_file(tmp_path, entries) -> Path:
    path = tmp_path / "standards.json"
    path.write_text(json.dumps({"documents": [{"id": "wcf", "title": "Test Confession", "entries": entries}]}))
    return path


def test_refs_come_from_the_original_text_only(tmp_path):
    path = _standards_file(
        tmp_path,
        [
            {
                "ref": "1.1",
                "kind": "section",
                "heading": "Of Providence",
                "text": "As the apostle teaches in Rom. 8:28-30, all things serve.",
                "proofs": [{"letter": "a", "references": ["Gen. 50:20"]}],
            },
            {
                "ref": "1.2",
                "kind": "section",
                "heading": "Of Providence",
                "text": "No reference here.",
                "proofs": [{"letter": "b", "references": ["John 3:16"]}],
            },
        ],
    )
    _, _, chunks = run(standards_source(path=path, sid="t"))
    assert chunks[0].refs == ("rom_8_28", "rom_8_29", "rom_8_30")
    assert chunks[0].ordinal == 45_008_028 and chunks[0].metadata["ref_ranges"] == ["Romans 8:28-30"]
    assert chunks[1].refs == ()


def test_an_entry_without_its_answer_fails_the_source_naming_it(tmp_path):
    path = _standards_file(tmp_path, [{"ref": "7", "kind": "qa", "question": "What is it?"}])
    source = standards_source(path=path, sid="t")
    with pytest.raises(SourceError, match=r"source 't': Test Confession, entry 1 \(ref '7'\): a question needs"):
        westminster.parse(source, westminster.read(source, None))


# ---------------------------------------------------------------- numbered theses

WORK, AUTHOR = "A Disputation on the Lamp of the Word", "Lectio fixture"


def disputation(path: Path, sid="lamp") -> Source:
    return Source(
        id=sid,
        kind="reformation",
        format="text",
        acl=("group:staff",),
        path=path,
        metadata={"title": WORK, "author": AUTHOR},
    )


def thesis_chunks(source: Source):
    return theses.chunk(source, theses.parse(source, theses.read(source, None)))


def test_each_thesis_is_one_chunk_with_header_thesis_and_proof():
    chunks = thesis_chunks(disputation(FIXTURES / "lamp_disputation.txt"))
    numbered = [c for c in chunks if c.granularity == "thesis"]
    assert [c.metadata["thesis_number"] for c in numbered] == list(range(1, 13))
    assert [c.chunk_id for c in numbered] == [f"lamp/thesis_{n}" for n in range(1, 13)]
    seventh = numbered[6]
    assert seventh.text.startswith(
        f"[{WORK} | {AUTHOR} | Thesis 7]\n\n"
        "The whole of Scripture speaks of Christ, and the reader who has not found him has not yet finished reading."
        "\n\nProof: Beginning with Moses"
    )
    assert seventh.metadata["thesis"].startswith("The whole of Scripture speaks of Christ")
    assert seventh.breadcrumb == f"{WORK} › Thesis 7" and seventh.acl == ("group:staff",)
    assert seventh.refs == ("luke_24_27",)
    assert numbered[5].refs == ("jas_1_23", "jas_1_24")
    # The protestation before thesis 1 is kept, not dropped.
    assert chunks[0].granularity == "preface" and "friendly disputation" in chunks[0].text
    assert all(c.tokens <= MAX_TEXT_TOKENS and c.ruleset == theses.RULESET for c in chunks)


def test_a_gap_in_the_numbering_fails_the_source(tmp_path):
    path = tmp_path / "gap.txt"
    path.write_text("1. First.\nProof: One.\n\n2. Second.\nProof: Two.\n\n4. Fourth.\nProof: Four.\n")
    source = disputation(path, sid="gap")
    with pytest.raises(SourceError, match="thesis 4 found where thesis 3 was expected"):
        theses.parse(source, theses.read(source, None))


def test_a_thesis_too_long_for_the_model_keeps_header_and_thesis_on_every_piece(tmp_path):
    proof = " ".join(
        f"Sentence {n} of the proof weighs the objection and answers it from the text at length." for n in range(40)
    )
    path = tmp_path / "long.txt"
    path.write_text(f"1. Grace precedes every good work.\nProof: {proof}\n")
    chunks = thesis_chunks(disputation(path, sid="long"))
    assert len(chunks) >= 3
    for part, piece in enumerate(chunks, start=1):
        assert piece.text.startswith(
            f"[{WORK} | {AUTHOR} | Thesis 1 | Part {part} of {len(chunks)}]\n\nGrace precedes every good work.\n\nProof: Sentence "
        )
        assert piece.tokens <= MAX_TEXT_TOKENS and piece.metadata["thesis_number"] == 1
    assert len({c.chunk_id for c in chunks}) == len(chunks)
