"""BM25's terms defined once (lectio.index.bm25): the SQL written out from them computes in
PostgreSQL the same bits as the form the mirror computes in numpy, and as the SQL the scorers
wrote by hand before (so no score moves)."""

import math

import numpy as np
import pytest

from lectio.index import bm25

Sql = bm25.Sql
N, AVGDL, K1, B = 133567.0, 41.73, 1.2, 0.75
# The SQL scoring's term and the postings' impact as they were written before bm25 existed.
HAND_WRITTEN_TERM = ("u.w * ln(1 + (s.n - u.df + 0.5::float8) / (u.df + 0.5::float8)) * u.tf * (1.2::float8 + 1) "
                     "/ (u.tf + 1.2::float8 * (1 - 0.75::float8 + 0.75::float8 * u.length / s.avgdl))")
HAND_WRITTEN_IMPACT = "(u.tf * (1.2 + 1) / (u.tf + 1.2 * (1 - 0.75 + 0.75 * u.length / s.avgdl)))::real"


@pytest.fixture(scope="module")
def terms():
    """Term frequencies, lengths, document frequencies and query-word weights of many terms."""
    rng = np.random.default_rng(38)
    size = 2000
    return (rng.integers(1, 40, size), rng.integers(1, 5000, size), rng.integers(1, 130000, size),
            rng.choice([1.0, 0.3, 0.55], size))


def in_postgres(conn, terms, *expressions):
    tf, length, df, w = terms
    rows = conn.execute(
        "SELECT " + ", ".join(str(e) for e in expressions) +
        " FROM unnest(%s::int4[], %s::int4[], %s::int8[], %s::float8[]) WITH ORDINALITY AS u(tf, length, df, w, i)"
        " CROSS JOIN (SELECT %s::float8 AS n, %s::float8 AS avgdl) s ORDER BY u.i",
        [tf.tolist(), length.tolist(), df.tolist(), w.tolist(), N, AVGDL]).fetchall()
    return [np.array(column) for column in zip(*rows)]


def test_the_sql_term_is_the_hand_written_one_and_the_mirrors_bit_for_bit(conn, terms):
    norm = bm25.length_norm(Sql("u.length"), Sql("s.avgdl"), K1, B)
    written = bm25.saturation(Sql("u.tf"), norm, K1, Sql("u.w") * bm25.idf(Sql("s.n"), Sql("u.df"), bm25.ln))
    generated, hand_written = in_postgres(conn, terms, written, HAND_WRITTEN_TERM)
    tf, length, df, w = terms
    # The mirror's way (lectio.index.mirror.Mirror.scores): a word's weight times idf in Python,
    # the rest over float64 arrays.
    mirrored = np.array([bm25.saturation(np.float64(t), bm25.length_norm(np.float64(d), AVGDL, K1, B), K1,
                                         float(v) * bm25.idf(N, int(f))) for t, d, f, v in zip(tf, length, df, w)])
    assert generated.tobytes() == hand_written.tobytes()
    assert generated.tobytes() == mirrored.tobytes()


def test_the_postings_impact_is_the_hand_written_one(conn, terms):
    impact = bm25.saturation(Sql("u.tf"), bm25.length_norm(Sql("u.length"), Sql("s.avgdl"), K1, B), K1)
    generated, hand_written = in_postgres(conn, terms, f"({impact})::real", HAND_WRITTEN_IMPACT)
    assert generated.tolist() == hand_written.tolist()


def test_the_baselines_numbers_are_python_floats_as_before():
    # lectio.evaluation.baselines scores in Python with these terms, as it did by hand.
    tf, length, df = 3, np.float32(17), 412
    idf = math.log(1 + (N - df + 0.5) / (df + 0.5))
    before = idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / AVGDL))
    assert bm25.saturation(tf, bm25.length_norm(length, AVGDL, K1, B), K1, bm25.idf(N, df)) == before


def test_an_operand_that_is_neither_a_number_nor_sql_is_refused():
    with pytest.raises(TypeError, match="a BM25 operand must be a number or Sql, not str"):
        bm25.length_norm(Sql("u.length"), "s.avgdl; DROP TABLE x", K1, B)
