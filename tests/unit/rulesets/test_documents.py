"""Documents (markdown, plain text, HTML): the document model and the chunks cut from it, on
fixture documents in tests/fixtures/documents/, with the real tokenizer and embedding model."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from lectio.rulesets import documents
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.sources import Source, SourceError
from lectio.rulesets.textsplit import pack, sentences

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "documents"
POLICY_TITLE = "Parish Bookshop Staff Policy"
HEADER_ROW = "Code | Title | Format | Price (£) | Staff note"


def source(path: Path, fmt: str, **metadata) -> Source:
    return Source(id=path.stem, kind="document", format=fmt, acl=("group:staff",), path=path, metadata=metadata)


def run(src: Source):
    document = documents.parse(src, documents.read(src))
    return document, documents.chunk(src, document)


def body(chunk) -> str:
    """The chunk's text after its breadcrumb line."""
    return chunk.text.split("\n\n", 1)[1]


def in_section(chunks, *path):
    return [c for c in chunks if c.granularity == "section" and tuple(c.metadata["section_path"]) == path]


@pytest.fixture(scope="module")
def policy():
    return run(source(FIXTURES / "bookshop_policy.md", "markdown", title=POLICY_TITLE))


@pytest.fixture(scope="module")
def rota():
    return run(source(FIXTURES / "volunteer_rota.txt", "text", title="Volunteer Rota Guidelines"))


@pytest.fixture(scope="module")
def hall():
    return run(source(FIXTURES / "hall_booking.html", "html"))


@pytest.fixture(scope="module")
def every_fixture(policy, rota, hall):
    return [policy, rota, hall]


# ---------------------------------------------------------------- tables, lists, exceptions


def test_row_45_of_the_80_row_price_table_carries_the_header_row(policy):
    document, chunks = policy
    (table,) = [u.block for s in document.sections for u in s.units if isinstance(u.block, documents.Table)]
    assert len(table.rows) == 80
    table_chunks = in_section(chunks, "Price list")
    assert len(table_chunks) > 1
    (row_45,) = [c for c in table_chunks if "\nBK-045 |" in c.text]
    lines = body(row_45).splitlines()
    assert lines[:2] == ["The following prices apply in every branch and include VAT:", HEADER_ROW]
    first, last = row_45.metadata["table_rows"]
    assert first <= 45 <= last and first > 1
    # Every chunk of the table starts with the header row, and every row is in exactly one.
    assert all(body(c).splitlines()[1] == HEADER_ROW for c in table_chunks)
    for number in range(1, 81):
        assert sum(f"\nBK-{number:03d} |" in c.text for c in table_chunks) == 1


def test_a_long_list_keeps_its_introducing_sentence_on_every_chunk(policy):
    _, chunks = policy
    pieces = in_section(chunks, "Opening the shop")
    assert len(pieces) >= 2
    intro = "Before the shop opens each morning, the first member of staff to arrive must do all of the following:"
    assert all(body(c).startswith(intro + "\n") for c in pieces)
    for number in range(1, 11):  # each item once, with its own number
        assert sum(bool(re.search(rf"^{number}\. ", body(c), re.M)) for c in pieces) == 1


def test_a_rule_and_its_exception_land_in_one_chunk(policy):
    document, chunks = policy
    rule = "Customers may return any item within fourteen days of purchase for a full refund"
    exception = "This does not apply to bespoke orders"
    (holder,) = [c for c in chunks if c.granularity == "section" and rule in c.text]
    assert exception in holder.text
    assert "exception" in holder.metadata["blocks"]
    # The fixture is built so that packing paragraphs greedily to the same target, as the first
    # ruleset did, would have put the exception in the next chunk.
    paragraphs = [documents._render(b) for u in in_section_units(document, "Refunds and exchanges") for b in (u.block, *u.exceptions)]
    greedy = pack(paragraphs, documents.RULES["pack_target_tokens"], joiner="\n\n")
    assert not any(rule in g and exception in g for g in greedy)


def in_section_units(document, *path):
    (section,) = [s for s in document.sections if s.path == path]
    return section.units


def test_exceptions_after_a_list_and_after_a_table_stay_with_their_last_chunk(policy):
    _, chunks = policy
    last_step = in_section(chunks, "Opening the shop")[-1].text
    assert "10. Unlock the front door" in last_step and "Unless the duty manager has arranged otherwise" in last_step
    last_rows = in_section(chunks, "Price list")[-1].text
    assert "BK-080 |" in last_rows and "Except during the Advent sale" in last_rows and HEADER_ROW in last_rows


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Except for bespoke orders, refunds are made within fourteen days.", True),
        ("Exception: in an emergency, telephone the coordinator.", True),
        ("**Exceptions.** Gift vouchers are never refunded.", True),
        ("However, no booking is accepted for political campaigning.", True),
        ("Unless the manager agrees, the shop opens at half past nine.", True),
        ("This does not apply to bespoke orders.", True),
        ("Notwithstanding the above, clergy may order on account.", True),
        ("The only exception is the Advent sale.", True),
        ("With the exception of candles, all stock is zero-rated.", True),
        ("However you arrange the chairs, leave the fire exit clear.", False),  # no comma: not a qualifier
        ("Exceptional service is expected of every volunteer.", False),
        ("Customers may return any item within fourteen days.", False),
    ],
)
def test_exception_openers(text, expected):
    assert documents.is_exception(text) is expected


def test_an_exception_too_long_to_share_a_chunk_repeats_the_rule_before_it(tmp_path):
    rule = " ".join(
        f"Rule sentence {n} says that a volunteer who keeps the keys on day {n} must lock the side door, "
        "check the back windows and set the alarm before leaving." for n in range(1, 8)
    )
    exception = ("Unless a later event is booked in the hall, in which case the volunteer hands the keys to the "
                 "event organiser, who then becomes responsible for locking up. " * 2).strip()
    path = tmp_path / "keys.md"
    path.write_text(f"# Keys\n\n{rule}\n\n{exception}\n")
    _, chunks = run(source(path, "markdown", title="Key Policy"))
    assert count_tokens([rule + exception])[0] > MAX_TEXT_TOKENS  # they cannot share one chunk
    (holder,) = [c for c in chunks if exception in c.text]
    assert sentences(rule)[-1] in holder.text  # the rule's last sentence travels with its exception
    assert all(c.tokens <= MAX_TEXT_TOKENS for c in chunks)


# ---------------------------------------------------------------- prose: paragraphs and topics


def test_an_oversized_section_is_split_where_the_topic_turns_from_refunds_to_shipping(policy):
    document, chunks = policy
    paragraphs = [u.block.text for u in in_section_units(document, "Orders by post")]
    turn = next(k for k, p in enumerate(paragraphs) if p.startswith("Parcels leave the shop"))
    pieces = in_section(chunks, "Orders by post")
    assert all(c.metadata["split"] == "semantic" for c in pieces)
    # The topic change is a chunk boundary: no chunk holds both a refund and a shipping paragraph.
    for chunk in pieces:
        held = [k for k, p in enumerate(paragraphs) if p in chunk.text]
        assert held and (max(held) < turn or min(held) >= turn)
    assert any(body(c).startswith("Parcels leave the shop") for c in pieces)
    # Sizes alone would have cut elsewhere: the boundary came from the embeddings.
    sizes = count_tokens(paragraphs)
    budget = MAX_TEXT_TOKENS - count_tokens([pieces[0].breadcrumb])[0]
    by_size = documents._even_groups(sizes, budget)
    assert [g[0] for g in by_size[1:]] != [turn]


def test_a_paragraph_longer_than_the_model_splits_at_sentences_and_nowhere_else(rota):
    document, chunks = rota
    (paragraph,) = [u.block.text for u in in_section_units(document, "3. How the rota began")]
    assert count_tokens([paragraph])[0] > MAX_TEXT_TOKENS
    pieces = in_section(chunks, "3. How the rota began")
    assert len(pieces) >= 2
    assert " ".join(body(c) for c in pieces) == " ".join(sentences(paragraph))
    whole_sentences = set(sentences(paragraph))
    assert all(set(sentences(body(c))) <= whole_sentences for c in pieces)


def test_no_paragraph_that_fits_is_ever_split(every_fixture):
    for document, chunks in every_fixture:
        section_texts = [c.text for c in chunks if c.granularity == "section"]
        for section in document.sections:
            for unit in section.units:
                for block in (unit.block, *unit.exceptions):
                    if isinstance(block, documents.Paragraph) and count_tokens([block.text])[0] < MAX_TEXT_TOKENS - 40:
                        assert any(block.text in t for t in section_texts), block.text[:60]


def test_no_chunk_spans_two_sections(every_fixture):
    for document, chunks in every_fixture:
        rendered = {s.path: "\n\n".join(documents._render_unit(u) for u in s.units) for s in document.sections}
        for chunk in chunks:
            if chunk.granularity != "section":
                continue
            own = rendered[tuple(chunk.metadata["section_path"])]
            own_sentences = {s for line in own.splitlines() for s in [line, *sentences(line)]}
            for line in body(chunk).splitlines():
                assert not line or line in own or line in own_sentences, (chunk.chunk_id, line)


def test_small_units_of_a_long_section_are_packed_up_to_the_target(tmp_path):
    rows = "\n".join(f"| Room {n} | {n * 3} chairs | available on weekday evenings |" for n in range(1, 40))
    path = tmp_path / "rooms.md"
    path.write_text(
        "# Rooms\n\nThe parish has several rooms for meetings.\n\n"
        "Each booking needs:\n\n- a named organiser\n- a telephone number\n\n"
        "Keys are collected from the office.\n\nHowever, the office is closed on Mondays.\n\n"
        f"| Room | Seats | Notes |\n|---|---|---|\n{rows}\n"
    )
    _, chunks = run(source(path, "markdown", title="Rooms Guide"))
    first = in_section(chunks, "Rooms")[0]
    for fragment in ("several rooms", "- a named organiser", "collected from the office", "closed on Mondays"):
        assert fragment in first.text
    assert first.tokens <= documents.RULES["pack_target_tokens"]
    assert "Room | Seats | Notes" not in first.text


def test_a_section_that_fits_the_model_is_one_chunk_even_past_the_packing_target(tmp_path):
    text = (
        "# Sacristy\n\n"
        "The sacristy is where the vestments, the altar linen and the vessels for communion are kept, and it is "
        "locked at all times when no service or preparation is taking place in the church. Only sacristans, "
        "servers on the rota and the clergy hold keys, and a key is never lent to anyone else for any reason.\n\n"
        "Before each Sunday service the sacristan on duty must:\n\n"
        "- lay out the vestments in the colour of the season, checking the calendar on the door;\n"
        "- fill the cruets with water and wine, and set out the wafers in the ciborium;\n"
        "- light the candles on the altar ten minutes before the service begins.\n\n"
        "After the service the linen is taken home for washing by the sacristan on duty and returned, "
        "ironed, by the following Saturday morning at the latest. Stains of wine or wax are reported to the head "
        "sacristan, who keeps the list of linen sent away for specialist cleaning and of vestments needing repair.\n"
    )
    path = tmp_path / "sacristy.md"
    path.write_text(text)
    _, chunks = run(source(path, "markdown", title="Sacristy Guide"))
    (only,) = chunks
    assert documents.RULES["pack_target_tokens"] < only.tokens <= MAX_TEXT_TOKENS
    assert only.metadata["split"] == "section"


# ---------------------------------------------------------------- breadcrumb, metadata, ids


def test_the_breadcrumb_is_the_first_line_and_the_metadata(policy):
    _, chunks = policy
    (volunteers,) = in_section(chunks, "Staff discounts", "Volunteers")
    crumb = f"{POLICY_TITLE} › Staff discounts › Volunteers | effective 2026-03-01 | scope: all branches"
    assert volunteers.breadcrumb == crumb and volunteers.text.startswith(crumb + "\n\n")
    assert volunteers.metadata["effective_date"] == "2026-03-01" and volunteers.metadata["scope"] == "all branches"
    assert volunteers.title == POLICY_TITLE
    for chunk in chunks:
        assert chunk.text.splitlines()[0] == chunk.breadcrumb
        json.dumps(chunk.metadata)
    # The document's own "# Parish Bookshop Staff Policy" is its title, not a section.
    assert in_section(chunks)[0].breadcrumb.startswith(f"{POLICY_TITLE} | effective")


def test_source_metadata_overrides_front_matter():
    src = source(FIXTURES / "bookshop_policy.md", "markdown", title="Bookshop Policy", effective_date="2026-09-01", scope="Durham branch")
    document = documents.parse(src, documents.read(src))
    assert document.title == "Bookshop Policy"
    assert document.metadata == {"effective_date": "2026-09-01", "scope": "Durham branch"}


def test_every_chunk_fits_the_model_and_carries_the_source_fields(every_fixture):
    for document, chunks in every_fixture:
        assert len({c.chunk_id for c in chunks}) == len(chunks)
        assert [c.tokens for c in chunks] == count_tokens([c.text for c in chunks])
        for chunk in chunks:
            assert chunk.tokens <= MAX_TEXT_TOKENS
            assert chunk.acl == ("group:staff",) and chunk.kind == "document"
            assert chunk.ruleset == documents.RULESET and chunk.breadcrumb


def test_chunk_ids_are_stable_and_local_to_their_section(tmp_path, policy):
    _, chunks = policy
    edited = tmp_path / "bookshop_policy.md"
    shutil.copy(FIXTURES / "bookshop_policy.md", edited)
    edited.write_text(edited.read_text().replace("the same day.", "the same day, and write down what was said."))
    _, again = run(source(edited, "markdown", title=POLICY_TITLE))
    before = {c.chunk_id: c.text for c in chunks}
    after = {c.chunk_id: c.text for c in again}
    assert before.keys() == after.keys()
    changed = [i for i in before if before[i] != after[i]]
    assert changed == ["bookshop_policy/safeguarding/1"]


def test_scripture_references_in_the_text_become_refs(rota):
    _, chunks = rota
    (signing_up,) = in_section(chunks, "1. Signing up")
    assert signing_up.refs == ("col_3_23", "col_3_24")
    assert signing_up.ordinal == 51_003_023


# ---------------------------------------------------------------- parents


def test_a_subtree_that_fits_is_also_a_parent_chunk(policy):
    _, chunks = policy
    (parent,) = [c for c in chunks if c.granularity == "document-section" and c.metadata["section_path"] == ["Staff discounts"]]
    children = [c for c in chunks if c.parent_id == parent.chunk_id]
    assert {tuple(c.metadata["section_path"]) for c in children} == {
        ("Staff discounts",), ("Staff discounts", "Volunteers"), ("Staff discounts", "Clergy and licensed lay ministers")
    }
    assert all(body(c) in parent.text for c in children)
    # Sections too large to have a parent within the model's window have none.
    assert all(c.parent_id is None for c in in_section(chunks, "Price list"))


def test_the_staff_guide_keeps_the_breadcrumb_the_pipeline_tests_rely_on():
    src = source(Path(__file__).resolve().parents[2] / "fixtures" / "staff_guide.md", "markdown", title="Study Group Leader Guide")
    _, chunks = run(src)
    (confidentiality,) = [c for c in chunks if c.granularity == "section" and "Confidentiality" in c.breadcrumb]
    assert confidentiality.text.startswith("Study Group Leader Guide › Leading a study group › Confidentiality")
    assert confidentiality.parent_id is not None


# ---------------------------------------------------------------- plain text and HTML


def test_plain_text_headings_lists_and_exceptions(rota):
    document, chunks = rota
    assert document.title == "Volunteer Rota Guidelines"
    assert [s.path for s in document.sections] == [(), ("1. Signing up",), ("2. Swapping shifts",), ("3. How the rota began",)]
    (item_list,) = [u.block for u in in_section_units(document, "1. Signing up") if isinstance(u.block, documents.ItemList)]
    assert item_list.intro == "Volunteers choose their shifts on the paper rota sheet behind the counter:"
    assert len(item_list.items) == 3
    (swap,) = in_section_units(document, "2. Swapping shifts")
    assert swap.exceptions and swap.exceptions[0].text.startswith("Exception: in an emergency")
    assert len(document) == 6  # blocks: what the parsed-structure asset reports


def test_html_gives_title_sections_lists_tables_and_no_script(hall):
    document, chunks = hall
    assert document.title == "Church Hall Booking Rules"
    assert [s.path for s in document.sections] == [(), ("Who may book",), ("Hire charges",), ("After your event",)]
    (who,) = in_section(chunks, "Who may book")
    assert body(who).startswith("Bookings are accepted from:\n- groups that belong to the parish")
    assert "However, no booking is accepted" in who.text
    (charges,) = in_section(chunks, "Hire charges")
    assert "Room | Parish groups | Charities | Private hire\nMain hall | free | £12 | £30" in charges.text
    assert "Hall hire charges, 2026" in charges.text
    assert all("console.log" not in c.text and "font-family" not in c.text for c in chunks)


def test_a_document_of_headings_only_is_refused(tmp_path):
    path = tmp_path / "empty.md"
    path.write_text("# Title\n\n## Nothing here\n")
    with pytest.raises(SourceError, match="no text to index"):
        run(source(path, "markdown"))


@pytest.mark.parametrize("header, problem", [
    ("\n".join([f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" if i else "l0: &l0 [lol]" for i in range(10)])
     + "\ntitle: *l9", "anchor"),
    ("title: Staff Policy\nscope: all\ntitle: Another", "duplicate key 'title'"),
])
def test_front_matter_takes_no_alias_and_no_key_twice(tmp_path, header, problem):
    path = tmp_path / "doc.md"
    path.write_text(f"---\n{header}\n---\n# Policy\n\nText.\n")
    src = source(path, "markdown")
    with pytest.raises(SourceError, match=problem) as refused:
        documents.parse(src, documents.read(src))
    assert "front matter" in str(refused.value) and "\n" not in str(refused.value)
