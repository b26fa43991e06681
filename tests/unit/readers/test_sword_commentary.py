"""A commentary entry's OSIS markup as blocks: titles, and paragraphs that keep a list with its
introduction and drop editors' notes."""

from lectio.readers.sword_commentary import Paragraph, Title, parse_blocks


def test_markup_blocks_keep_lists_with_their_introduction_and_drop_notes():
    markup = (
        '<title type="x-s">Heading</title><div sID="p1" type="x-p"/><hi type="bold">grace</hi> '
        'is named three ways:<div eID="p1" type="x-p"/> <list><item>(1) <reference osisRef="Eph.2.8">Eph 2:8</reference>;</item>'
        "<item>(2) a gift<note>an editor's aside</note>.</item></list>"
        '<div sID="p2" type="x-p"/>Plain <hi type="italic">closing</hi> words.<div eID="p2" type="x-p"/>'
    )
    assert parse_blocks(markup) == [
        Title("x-s", "Heading"),
        Paragraph("grace is named three ways:\n(1) Eph 2:8;\n(2) a gift.", "grace", ("Eph.2.8",)),
        Paragraph("Plain closing words."),
    ]
