"""Ordinary documents in markdown, plain text or HTML, lexed into the same blocks of the
document model (`lectio.readers.document_model`): headings, paragraphs, lists and tables. Markdown's
front matter and HTML's <title> are returned beside the blocks, for the model to take the
document's title and metadata from.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import yaml

from lectio.readers.document_model import Heading, ItemList, Paragraph, Table
from lectio.sources import Source, SourceError, strict_yaml


def lex(source: Source, text: str) -> tuple[str | None, dict, list]:
    """Text of any of the three formats → (title hint, front matter, blocks in order)."""
    text = text.lstrip("\ufeff")
    front: dict = {}
    if source.format == "html" or (source.path is not None and source.path.suffix.lower() in (".html", ".htm")):
        title_hint, events = _lex_html(text)
    elif source.format == "markdown":
        front, text = _front_matter(source, text)
        title_hint, events = None, _lex_markdown(text)
    else:
        title_hint, events = None, _lex_text(text)
    return title_hint, front, events


def _front_matter(source: Source, text: str) -> tuple[dict, str]:
    """A leading `---` YAML block (title, effective_date, scope) is metadata, not text."""
    match = re.match(r"---[ \t]*\n(.*?)\n---[ \t]*(?:\n|$)", text, re.DOTALL)
    if not match:
        return {}, text
    try:
        # As strict as the sources file: an alias bomb in a document's header would otherwise
        # expand before anything could refuse it, and of a key written twice the last would win.
        data = strict_yaml(match.group(1))
    except yaml.YAMLError as exc:
        raise SourceError(source.id, f"front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        return {}, text
    return {k: str(v) for k, v in data.items() if v is not None}, text[match.end() :]


# ---------------------------------------------------------------- markdown


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MD_ITEM = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")


def _inline(text: str) -> str:
    """Markdown inline markup costs word pieces and means nothing to the model: keep the words."""
    text = _LINK.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\2", text)
    return re.sub(r"[ \t]+", " ", text.replace("`", "")).strip()


def _cells(line: str) -> tuple[str, ...]:
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return tuple(_inline(c.replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", line))


def _lex_markdown(text: str) -> list:
    lines = text.splitlines()
    events: list = []
    paragraph: list[str] = []

    def flush():
        if paragraph:
            events.append(Paragraph(_inline(" ".join(paragraph))))
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
        elif line.lstrip().startswith("<!--"):
            flush()
            while i < len(lines) and "-->" not in lines[i]:
                i += 1
            i += 1
        elif fence := _FENCE.match(line):
            flush()
            code, i = [], i + 1
            while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
                code.append(lines[i])
                i += 1
            if code:
                events.append(Paragraph("\n".join(code).strip()))
            i += 1
        elif atx := _ATX.match(line):
            flush()
            if atx.group(2):
                events.append(Heading(len(atx.group(1)), _inline(atx.group(2))))
            i += 1
        elif paragraph and (setext := _SETEXT.match(line)):
            heading = _inline(" ".join(paragraph))
            paragraph.clear()
            events.append(Heading(1 if setext.group(1)[0] == "=" else 2, heading))
            i += 1
        elif _BREAK.match(line):
            flush()
            i += 1
        elif "|" in line and i + 1 < len(lines) and "|" in lines[i + 1] and _TABLE_RULE.match(lines[i + 1]):
            flush()
            header, rows, i = _cells(line), [], i + 2
            while i < len(lines) and lines[i].strip() and "|" in lines[i]:
                row = _cells(lines[i])
                rows.append((row + ("",) * len(header))[: max(len(header), len(row))])
                i += 1
            events.append(Table(header, tuple(rows)))
        elif _MD_ITEM.match(line):
            flush()
            item_list, i = _lex_list(lines, i, _MD_ITEM)
            events.append(item_list)
        else:
            paragraph.append(line.strip().lstrip(">").strip())
            i += 1
    flush()
    return events


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _lex_list(lines: list[str], i: int, item_pattern: re.Pattern) -> tuple[ItemList, int]:
    """Items from line i on; continuation lines and nested items stay with their item."""
    first = item_pattern.match(lines[i])
    base = len(first.group(1).expandtabs(4))
    marker = first.group(2)
    start = int(marker[:-1]) if marker[:-1].isdigit() else None
    items: list[list[str]] = []
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            following = next((j for j in range(i + 1, len(lines)) if lines[j].strip()), None)
            if following is not None and (
                _indent(lines[following]) > base
                or ((m := item_pattern.match(lines[following])) and len(m.group(1).expandtabs(4)) <= base + 1)
            ):
                i = following
                continue
            break
        item = item_pattern.match(line)
        if item and len(item.group(1).expandtabs(4)) <= base + 1:
            items.append([_inline(item.group(3))])
        elif item:
            items[-1].append("\n  - " + _inline(item.group(3)))
        elif _ATX.match(line) or _FENCE.match(line) or _BREAK.match(line) or (_indent(line) <= base and "|" in line):
            break
        else:
            items[-1].append(" " + _inline(line))
        i += 1
    return ItemList(tuple("".join(parts).strip() for parts in items), start=start), i


# ---------------------------------------------------------------- plain text


_TEXT_ITEM = re.compile(r"^([ \t]*)([-*+•–]|\d{1,3}[.)]|[a-z][.)])[ \t]+(.*)$")
_NUMBERED_HEADING = re.compile(r"^(\d{1,3}(?:\.\d{1,3})*)\.?[ \t]+([A-Z][^\n]*)$")
_ENDS_A_SENTENCE = re.compile(r"[.!?:;,]$")


def _lex_text(text: str) -> list:
    """Blank lines separate blocks. A heading is a line standing alone that is in capitals or
    numbered ("2. Swapping shifts", "2.1 …") and does not end like a sentence, or a line
    underlined with === or ---. Heading levels go by style in order of first use, as in
    reStructuredText, so a document decides its own hierarchy. Lines starting with a bullet or
    number form a list, even straight after lines of text (which introduce it if they end in
    ':'); a single standing numbered line is a heading, not a one-item list."""
    events: list = []
    styles: list[str] = []

    def heading(style: str, words: str) -> Heading:
        if style not in styles:
            styles.append(style)
        return Heading(styles.index(style) + 1, words.strip())

    for block in re.split(r"\n[ \t]*\n", text.strip()):
        lines = [line.rstrip() for line in block.strip("\n").splitlines() if line.strip()]
        if not lines:
            continue
        first = lines[0].strip()
        if len(lines) == 2 and _SETEXT.match(lines[1]):
            events.append(heading(lines[1].strip()[0], first))
        elif len(lines) == 1 and len(first) <= 80 and not _ENDS_A_SENTENCE.search(first):
            numbered = _NUMBERED_HEADING.match(first)
            if first.upper() == first and any(c.isalpha() for c in first):
                events.append(heading("caps", first))
            elif numbered:
                events.append(heading(f"number{numbered.group(1).count('.') + 1}", first))
            else:
                events.append(Paragraph(first))
        else:
            starts = next((k for k, line in enumerate(lines) if _TEXT_ITEM.match(line)), None)
            if starts is not None:
                if starts:
                    events.append(Paragraph(" ".join(line.strip() for line in lines[:starts])))
                item_list, end = _lex_list(lines, starts, _TEXT_ITEM)
                events.append(item_list)
                if end < len(lines):
                    events.append(Paragraph(" ".join(line.strip() for line in lines[end:])))
            else:
                events.append(Paragraph(" ".join(line.strip() for line in lines)))
    return events


# ---------------------------------------------------------------- HTML


def _lex_html(text: str) -> tuple[str | None, list]:
    lexer = _HtmlLexer()
    lexer.feed(text)
    lexer.close()
    lexer.flush()
    return lexer.title, lexer.events


class _HtmlLexer(HTMLParser):
    """Headings, paragraphs, lists and tables from HTML; scripts, styles and markup dropped."""

    _SKIP = {"script", "style", "template", "noscript", "head"}
    _BLOCKS = {"p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote",
               "pre", "dd", "dt", "figure", "figcaption", "address", "nav", "body", "hr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.events: list = []
        self.title: str | None = None
        self.text: list[str] = []  # inline text of whatever is being read
        self.skip = 0
        self.in_title = False
        self.heading: int | None = None
        self.lists: list[dict] = []  # open lists, innermost last
        self.table: dict | None = None
        self.row: list[str] | None = None
        self.row_is_header = False

    def _words(self) -> str:
        words = re.sub(r"\s+", " ", "".join(self.text)).strip()
        self.text.clear()
        return words

    def flush(self):
        if words := self._words():
            self.events.append(Paragraph(words))

    def _in_block_context(self) -> bool:
        return bool(self.lists) or self.table is not None or self.heading is not None

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self.in_title = True
        elif tag in self._SKIP:
            self.skip += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self.heading = int(tag[1])
        elif tag in ("ul", "ol"):
            if self.lists:  # a nested list: what came before it is its parent item's text
                self.lists[-1]["parts"].append(self._words())
            else:
                self.flush()
            start = dict(attrs).get("start") or "1"
            self.lists.append({"items": [], "parts": [], "start": int(start) if tag == "ol" and start.isdigit() else None})
        elif tag == "li" and self.lists:
            self._close_item()
        elif tag == "table":
            self.flush()
            self.table = {"header": None, "rows": [], "caption": None}
        elif tag == "tr" and self.table is not None:
            self.row, self.row_is_header = [], True
        elif tag in ("td", "th", "caption") and self.table is not None:
            self._words()
            self.row_is_header &= tag != "td"
        elif tag == "br":
            self.text.append(" ")
        elif tag in self._BLOCKS and not self._in_block_context():
            self.flush()

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        elif tag in self._SKIP:
            self.skip = max(0, self.skip - 1)
        elif re.fullmatch(r"h[1-6]", tag) and self.heading is not None:
            if words := self._words():
                self.events.append(Heading(self.heading, words))
            self.heading = None
        elif tag == "li" and self.lists:
            self._close_item()
        elif tag in ("ul", "ol") and self.lists:
            self._close_item()
            closed = self.lists.pop()
            if self.lists:
                self.lists[-1]["parts"].extend(f"\n  - {item}" for item in closed["items"])
            elif closed["items"]:
                self.events.append(ItemList(tuple(closed["items"]), start=closed["start"]))
        elif tag == "caption" and self.table is not None:
            self.table["caption"] = self._words()
        elif tag in ("td", "th") and self.row is not None:
            self.row.append(self._words())
        elif tag == "tr" and self.row is not None and self.table is not None:
            if self.row_is_header and self.table["header"] is None and not self.table["rows"]:
                self.table["header"] = tuple(self.row)
            elif any(self.row):
                self.table["rows"].append(tuple(self.row))
            self.row = None
        elif tag == "table" and self.table is not None:
            table, self.table = self.table, None
            rows = list(table["rows"])
            header = table["header"] or (rows.pop(0) if rows else ())
            if header or rows:
                self.events.append(Table(tuple(header), tuple(rows), table["caption"] or None))
        elif tag in self._BLOCKS and not self._in_block_context():
            self.flush()

    def _close_item(self):
        current = self.lists[-1]
        words = re.sub(r"[ \t]+", " ", " ".join([*current["parts"], self._words()])).strip()
        if words:
            current["items"].append(re.sub(r" ?\n ?", "\n", words).replace("\n-", "\n  -"))
        current["parts"] = []

    def handle_data(self, data):
        if self.in_title:
            self.title = ((self.title or "") + data).strip()
        elif not self.skip:
            self.text.append(data)
