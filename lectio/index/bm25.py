"""BM25's terms, defined once: Lucene's idf, ATIRE's term-frequency saturation and the length
normalisation inside it. Every scorer uses these functions: the lexical mirror and the baselines
call them on numbers and numpy arrays, and the SQL scorers (lectio.retrieval.lexical, postings
built by lectio.index.postings) call them on `Sql` operands, which write the same arithmetic out
as a SQL expression.

A term's score is `weight * tf * (k1 + 1) / (tf + norm)`, `weight` being the query word's weight
times its idf. The operations run in the order written, in float8 (double) throughout, so the SQL
and the numpy forms give the same bits for the same operands.
"""

from __future__ import annotations

import math

# BM25's usual constants; postings' impacts are computed with them. A search may score with
# others, which then only order the postings read slightly differently.
K1 = 1.2
B = 0.75


def idf(n, df, ln=math.log):
    """A word's inverse document frequency among `n` documents, `df` of which hold it (Lucene's:
    never negative, however common the word). `ln` is the logarithm of the operands' kind."""
    return ln(1 + (n - df + 0.5) / (df + 0.5))


def length_norm(length, avgdl, k1: float, b: float):
    """How much a document of `length` words, against the mean `avgdl`, damps its term frequencies."""
    return k1 * (1 - b + b * length / avgdl)


def saturation(tf, norm, k1: float, weight=None):
    """A word's score in a document where it occurs `tf` times (`norm`: length_norm), times
    `weight` where given (the query word's weight times its idf), multiplied in before the rest as
    the scorers always have: without it, the word's impact in the document (postings)."""
    top = tf if weight is None else weight * tf
    return top * (k1 + 1) / (tf + norm)


class Sql:
    """A SQL expression as an operand of the functions above: arithmetic on it writes SQL, each
    operation parenthesised so PostgreSQL evaluates in Python's order. A Python float becomes a
    float8 constant, an int an integer one (as a SQL integer, it turns float8 beside a float8)."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    def _op(self, op: str, other, reflected: bool = False) -> "Sql":
        left, right = (_sql(other), self.text) if reflected else (self.text, _sql(other))
        return Sql(f"({left} {op} {right})")


def _arithmetic(op: str):
    """The operator `op` on an Sql, and on an Sql to its right (1 + Sql(...))."""
    return (lambda self, other: self._op(op, other)), (lambda self, other: self._op(op, other, True))


Sql.__add__, Sql.__radd__ = _arithmetic("+")
Sql.__sub__, Sql.__rsub__ = _arithmetic("-")
Sql.__mul__, Sql.__rmul__ = _arithmetic("*")
Sql.__truediv__, Sql.__rtruediv__ = _arithmetic("/")


def ln(operand: Sql) -> Sql:
    """The natural logarithm in SQL, for idf(..., ln=ln)."""
    return Sql(f"ln({operand})")


def _sql(value) -> str:
    if isinstance(value, Sql):
        return value.text
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a BM25 operand must be a number or Sql, not {type(value).__name__}")
    if isinstance(value, int):
        return str(value)
    return f"'{float(value)!r}'::float8"  # repr round-trips: the same double PostgreSQL parses
