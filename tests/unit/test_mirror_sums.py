"""The lexical mirror's per-query work (lectio.index.mirror.Mirror.scores, titles, best) reads only
the query words' postings in the ACL sets asked for, yet gives the bits, matches and ranking that
summing into an array of every chunk and sweeping it gave: the reference below is that way,
written out from each word's chunks as drawn. Both ways the mirror sums (sorting the postings, or
adding them into an array when they are many) are checked."""

from pathlib import Path

import numpy as np
import pytest

from lectio.index import bm25, mirror

CHUNKS, WORDS, TITLE_WORDS, SETS = 5000, 60, 25, 3
N, AVGDL, K1, B = 4800.0, 41.73, 1.2, 0.75
EVERY_SET = np.arange(SETS)


def drawn(rng, words: int, most: int) -> list[np.ndarray]:
    """Each word's chunks, ascending and without repeats."""
    return [np.sort(rng.choice(CHUNKS, rng.integers(1, most), replace=False)) for _ in range(words)]


def grouped(chosen: list[np.ndarray], acl: np.ndarray) -> tuple[np.ndarray, dict]:
    """The words' chunks as a build stores them: the order of their postings, and the runs table."""
    word = np.concatenate([np.full(len(run), w) for w, run in enumerate(chosen)])
    chunk = np.concatenate(chosen)
    return mirror.runs(acl[chunk], word, chunk, SETS)


@pytest.fixture(scope="module")
def reference():
    """What the mirror below is built from: each chunk's ACL set, each word's chunks and their
    term frequencies (aligned), each title word's pericopes; common and rare words, lengths and
    term frequencies drawn from few values so many chunks tie."""
    rng = np.random.default_rng(39)
    chosen, titles = drawn(rng, WORDS, 2500), drawn(rng, TITLE_WORDS, 300)
    return {"acl": rng.integers(0, SETS, CHUNKS).astype(np.int32), "words": chosen, "titles": titles,
            "tf": [rng.integers(1, 4, len(run)).astype(np.int32) for run in chosen]}


@pytest.fixture(scope="module")
def mirrored(reference):
    rng = np.random.default_rng(40)
    acl = reference["acl"]
    order, table = grouped(reference["words"], acl)
    title_order, title_table = grouped(reference["titles"], acl)
    arrays = {"postings": np.concatenate(reference["words"])[order].astype(np.int32),
              "tf": np.concatenate(reference["tf"])[order], **table, "acl": acl,
              "ndoc": rng.integers(1, 3000, WORDS), "length": rng.choice([12, 40, 41, 90], CHUNKS).astype(np.int32),
              "title_postings": np.concatenate(reference["titles"])[title_order].astype(np.int32),
              **{f"title_{name}": array for name, array in title_table.items()},
              "title_length": rng.integers(1, 6, CHUNKS).astype(np.int32)}
    # Words whose bytewise order is not their order as str, and one no chunk holds.
    words = {word: i for i, word in enumerate([f"w{i}" for i in range(WORDS - 2)] + ["zeta", "\u00e9pe"])}
    titles = {f"t{i}": i for i in range(TITLE_WORDS)}
    return mirror.Mirror(Path("/nonexistent"), {"acl_sets": [[f"user:{i}"] for i in range(SETS)]}, arrays,
                         [f"c{i:05d}" for i in range(CHUNKS)], words, titles)


@pytest.fixture(params=["sorted", "dense"])
def way(request, monkeypatch):
    """Each of the two ways postings are summed, whatever share of the chunks they are."""
    monkeypatch.setattr(mirror, "DENSE_SHARE", float("inf") if request.param == "sorted" else 0.0)


def dense_scores(found: mirror.Mirror, reference: dict, weights: dict[str, float], sets=EVERY_SET):
    """BM25 summed word by word (bytewise order) into a total per chunk, and which chunks of the
    ACL `sets` hold a word."""
    total, held = np.zeros(CHUNKS), np.zeros(CHUNKS, dtype=bool)
    norm = bm25.length_norm(found.arrays["length"].astype(np.float64), AVGDL, K1, B)
    for word in sorted(weights, key=lambda w: w.encode()):
        if (w := found.words.get(word)) is None:
            continue
        keep = np.isin(reference["acl"][reference["words"][w]], sets)
        rows, tf = reference["words"][w][keep], reference["tf"][w][keep].astype(np.float64)
        total[rows] += bm25.saturation(tf, norm[rows], K1, weights[word] * bm25.idf(N, int(found.arrays["ndoc"][w])))
        held[rows] = True
    return total, held


def dense_titles(found: mirror.Mirror, reference: dict, query_words: set[str], query_share: float):
    shared = np.zeros(CHUNKS)
    for word in query_words:
        if (w := found.title_words.get(word)) is not None:
            shared[reference["titles"][w]] += 1
    hit = np.flatnonzero(shared)
    of_title, of_query = shared[hit] / found.arrays["title_length"][hit], shared[hit] / len(query_words)
    keep = (of_title >= 0.5) & (of_query >= query_share)
    score = np.zeros(CHUNKS)
    score[hit[keep]] = of_title[keep] * of_query[keep]
    return score, score > 0


def dense_best(scores: np.ndarray, eligible: np.ndarray, m: int) -> np.ndarray:
    hit = np.flatnonzero(eligible)
    return hit[np.lexsort((hit, -scores[hit]))[:m]]


def queries(seed: int, count: int):
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(WORDS - 2)] + ["zeta", "\u00e9pe", "unheard"]
    for _ in range(count):
        words = rng.choice(vocabulary, rng.integers(1, 12), replace=False)
        yield {str(word): float(rng.choice([1.0, 0.3, 0.55])) for word in words}, rng.random(CHUNKS) < 0.7


def test_bm25_reads_only_the_query_words_postings_and_sums_the_same_bits(mirrored, reference, way):
    for weights, eligible in queries(1, 200):
        scored = mirrored.scores(weights, K1, B, N, AVGDL, EVERY_SET)
        total, held = dense_scores(mirrored, reference, weights)
        assert scored.positions.tolist() == np.flatnonzero(held).tolist()
        assert scored.scores.tobytes() == total[scored.positions].tobytes()
        mine = scored.within(eligible)
        assert mine.positions.tolist() == np.flatnonzero(held & eligible).tolist()
        for m in (0, 1, 20, 100, 5000):
            ranked = mirror.best(mine, m)
            expected = dense_best(total, held & eligible, m)
            assert ranked.positions.tolist() == expected.tolist()
            assert ranked.scores.tobytes() == total[expected].tobytes()


def test_ties_are_broken_by_chunk_id_as_before(mirrored, reference, way):
    weights = {"w0": 1.0, "w1": 1.0}
    scored = mirrored.scores(weights, K1, B, N, AVGDL, EVERY_SET)
    assert len(set(scored.scores.tolist())) < len(scored.scores) / 4  # many chunks share a score
    total, held = dense_scores(mirrored, reference, weights)
    assert mirror.best(scored, 300).positions.tolist() == dense_best(total, held, 300).tolist()


@pytest.mark.parametrize("share", [0.0, 0.3, 0.6])
def test_titles_match_and_score_as_before(mirrored, reference, share, way):
    rng = np.random.default_rng(2)
    matched = 0
    for _ in range(100):
        words = {str(word) for word in rng.choice([f"t{i}" for i in range(TITLE_WORDS)] + ["nothing"],
                                                  rng.integers(1, 5), replace=False)}
        found = mirrored.titles(words, share, EVERY_SET)
        score, match = dense_titles(mirrored, reference, words, share)
        assert found.positions.tolist() == np.flatnonzero(match).tolist()
        assert found.scores.tobytes() == score[found.positions].tobytes()
        matched += len(found.positions)
    assert matched  # the comparison was not of empty lists


def test_a_query_of_no_known_word_reaches_no_chunk(mirrored, way):
    scored = mirrored.scores({"unheard": 1.0}, K1, B, N, AVGDL, EVERY_SET)
    assert len(scored.positions) == 0 and len(mirror.best(scored.within(np.ones(CHUNKS, dtype=bool)), 5).positions) == 0
    assert len(mirrored.titles({"nothing"}, 0.3, EVERY_SET).positions) == 0


@pytest.mark.parametrize("sets", [[0], [1, 2], [2]])
def test_a_search_reads_only_the_postings_of_the_acl_sets_asked_for(mirrored, reference, sets, way):
    """What an outsider's search does must not depend on chunks it may not see: the postings it
    reads are its sets' alone, and the scores are those of the chunks in them, bit for bit."""
    read = []
    postings = mirrored.arrays["postings"]
    for weights, _ in queries(3, 50):
        ordered = sorted(weights, key=lambda w: w.encode())
        for _, start, end in mirrored._reach("", [mirrored.words.get(w, -1) for w in ordered], np.array(sets)):
            read.append(postings[start:end])
        scored = mirrored.scores(weights, K1, B, N, AVGDL, np.array(sets))
        total, held = dense_scores(mirrored, reference, weights, sets)
        assert scored.positions.tolist() == np.flatnonzero(held).tolist()
        assert scored.scores.tobytes() == total[scored.positions].tobytes()
    assert read and np.isin(reference["acl"][np.concatenate(read)], sets).all()
