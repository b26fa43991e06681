"""The surface forms of a labelled query, for a suite that asks every set in the ways readers type.

A query set is written in one shape (Nave's topics Capitalised, quotations as printed, questions
as someone phrased them), and a search tuned on that shape can lose a large share of its answers
when the same thing is asked another way. Each form here changes only the surface, never what is
asked, so a search that reads queries by meaning should score every form alike:

* ``as_written``: the query as the set has it;
* ``lower`` / ``title``: in lower case, and with every word Capitalised;
* ``question``: wrapped in "What does the Bible say about …?" (a wrapper already there is taken
  off first, so a question is not asked twice);
* ``+kind``: the filter every relevant row satisfies, ``kind: scripture`` (a label is a verse id,
  so it always holds): a filter narrows which rows may answer and should cost nothing here;
* ``+narrow``: also the testament and genre, where every relevant verse shares one.

A query's own filters stay in every form: they are part of what it asks (a long passage asks for
scripture, not for the commentary it was cut from). The comparison (``compare``) reads the
reports of lectio.evaluation.metrics.evaluate for each form, with the paired interval of
lectio.evaluation.paired that every other comparison uses.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Mapping

from lectio.bible.books import book_by_id
from lectio.bible.refs import Ref
from lectio.evaluation.paired import paired_interval
from lectio.evaluation.querysets import Query
from lectio.retrieval import read_query as read

BASE = "as_written"
METRICS = ("recall@20", "mrr", "ndcg@10", "budget_recall@1000")
WRAPPER = "What does the Bible say about {subject}?"

# A word's letters: the first is raised and the rest lowered, so "beer-lahai-roi" reads
# "Beer-lahai-roi" and "god's" "God's" (str.title would write "Beer-Lahai-Roi" and "God'S").
_WORD = re.compile(r"(?<![\w'’-])([^\W\d_])([\w'’-]*)")


def title_case(text: str) -> str:
    return _WORD.sub(lambda m: m[1].upper() + m[2].lower(), text)


def question(text: str) -> str:
    """`text` asked as a question; its subject only, where it is one already."""
    return WRAPPER.format(subject=read(text).subject)


SURFACES: dict[str, Callable[[str], str]] = {
    "as_written": lambda text: text,
    "lower": str.lower,
    "title": title_case,
    "question": question,
}


def satisfied_filters(query: Query, narrow: bool = False) -> dict[str, str]:
    """The filters every relevant verse of `query` satisfies: `kind: scripture`, and with
    `narrow` the testament and genre they share (none where they differ). Empty for a query
    without relevant verses: nothing tells which rows it wants."""
    books = [book_by_id(Ref.from_id(ref).book) for ref in sorted(query.relevant_set)]
    if not books:
        return {}
    found = {"kind": "scripture"}
    if narrow:
        testaments = {book.testament for book in books}
        genres = {book.genre for book in books}
        if len(testaments) == 1:
            found["testament"] = {"old": "OT", "new": "NT"}[testaments.pop()]
        if len(genres) == 1:
            found["genre"] = genres.pop()
    return found


# Every form by name: (surface, filter level). The default suite: each surface bare and with
# `kind`, and the as-written query with every filter its verses share.
FORMS: dict[str, tuple[str, str | None]] = {
    **{surface: (surface, None) for surface in SURFACES},
    **{f"{surface}+kind": (surface, "kind") for surface in SURFACES},
    f"{BASE}+narrow": (BASE, "narrow"),
}


def form_of(query: Query, form: str) -> Query:
    """`query` in the named form (FORMS); its id unchanged, so forms pair query by query."""
    if form not in FORMS:
        raise ValueError(f"unknown query form {form!r}; forms: {', '.join(FORMS)}")
    surface, level = FORMS[form]
    filters = dict(query.filters)
    if level is not None:
        # The query's own filters win: they are what it asks, the added ones only narrow.
        filters = {**satisfied_filters(query, narrow=level == "narrow"), **filters}
    return replace(query, query=SURFACES[surface](query.query), filters=filters)


def forms_of(queries: list[Query], forms: list[str] | None = None) -> dict[str, list[Query]]:
    """Every query in each form (default: all of FORMS, the as-written one first)."""
    names = list(forms or FORMS)
    if BASE not in names:
        names.insert(0, BASE)
    return {name: [form_of(q, name) for q in queries] for name in names}


def bare_form(form: str) -> str | None:
    """The unfiltered form a filtered one narrows ("lower+kind" → "lower"); None for a bare one."""
    return form.split("+", 1)[0] if "+" in form else None


def compare(reports: Mapping[str, dict], metrics: tuple[str, ...] = METRICS) -> dict[str, dict]:
    """Per metric: each form's value, its gap to the best form, its paired interval against the
    as-written form and (a filtered form) against the same surface unfiltered, and the spread
    (best − worst) across forms. `reports` are metrics.evaluate's, by form name."""
    table: dict[str, dict] = {}
    for metric in metrics:
        values = {form: report["overall"].get(metric) for form, report in reports.items()}
        known = [v for v in values.values() if v is not None]
        best = max(known) if known else None
        rows = {}
        for form, value in values.items():
            bare = bare_form(form)
            rows[form] = {
                "value": value,
                "below_best": None if value is None else round(best - value, 4),
                "vs_as_written": None if form == BASE or BASE not in reports
                else paired_interval(reports[BASE]["queries"], reports[form]["queries"], metric),
                "vs_unfiltered": paired_interval(reports[bare]["queries"], reports[form]["queries"], metric)
                if bare in reports else None,
            }
        table[metric] = {"forms": rows, "spread": round(best - min(known), 4) if known else None}
    return table
