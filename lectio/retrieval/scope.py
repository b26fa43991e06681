"""What one search may read, in the two forms that apply it: a SQL WHERE clause and the
(column, test, value) conditions the lexical mirror (lectio.index.mirror) filters by."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from lectio.retrieval.filters import Filters

_TESTAMENTS = {"ot": "old", "old": "old", "nt": "new", "new": "new"}


@dataclass(frozen=True)
class Scope:
    """The rows one search may read: the caller's principals and Filters, as a WHERE clause and as
    the conditions the lexical mirror applies, with BM25's counts of the version."""

    principals: tuple[str, ...]
    given: Filters
    # BM25's corpus size and mean length (public chunks', whoever asks: IndexVersion.bm25_corpus),
    # read from the version's record as the owner and handed to the lexical side as values.
    corpus: tuple[float, float] | None = None

    @property
    def translation(self) -> str | None:
        return self.given.translation

    def conditions(self, translation: str | None, others: bool = False) -> list[tuple[str, str, object]]:
        """What where() asks of a row, as (column, test, value): the one list both the SQL and the
        lexical mirror (lectio.index.mirror) filter by. Tests: '&&' (shares a principal), '=',
        '<>', 'null-or-=' (NULL, or equal); tradition and tier are keys of the metadata. With
        `others`, the rows of every translation but `translation` (only scripture has one)
        instead of its own and the rows without one."""
        found: list[tuple[str, str, object]] = [("acl", "&&", list(self.principals))]
        if not self.given.kind:
            # Dictionary entries answer word studies (lectio.retrieval.word_study), not topical questions.
            found.append(("kind", "<>", "lexicon"))
        for column in ("kind", "testament", "genre", "tradition", "tier"):
            value = getattr(self.given, column)
            if column == "testament" and value:
                value = _TESTAMENTS.get(value.lower(), value)
            if value:
                found.append((column, "=", value))
        if translation:
            found.append(("translation", "<>" if others else "null-or-=", translation))
        return found

    def where(self, translation: str | None, others: bool = False) -> tuple[sql.Composable, dict]:
        """A WHERE clause with named placeholders (f_*), and its parameters (`others` as in
        conditions())."""
        clauses, params = [], {}
        for column, test, value in self.conditions(translation, others):
            placeholder = sql.Placeholder(f"f_{column}")
            field_sql = (sql.SQL("metadata ->> {}").format(sql.Literal(column)) if column in ("tradition", "tier")
                         else sql.Identifier(column))
            if test == "<>":  # a constant the planner can use as it stands
                clauses.append(sql.SQL("{} <> {}").format(field_sql, sql.Literal(value)))
                continue
            params[f"f_{column}"] = value
            clauses.append(sql.SQL({"&&": "{0} && {1}", "=": "{0} = {1}",
                                    "null-or-=": "({0} IS NULL OR {0} = {1})"}[test]).format(field_sql, placeholder))
        if self.corpus is not None:
            params["bm25_n"], params["bm25_avgdl"] = self.corpus
        return sql.SQL(" AND ").join(clauses), params

    @property
    def on_postings(self) -> bool:
        """Whether where() names only columns BM25 postings carry (lectio.index.postings)."""
        given = self.given
        return not (given.testament or given.genre or given.tradition or given.tier)
