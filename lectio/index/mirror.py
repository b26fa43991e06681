"""A version's BM25 words mirrored into arrays in the home, so a search scores every chunk that
holds a query word in the search process instead of asking PostgreSQL to.

An index version never changes once built, so its words are read once (as the owner, past
row-level security: every chunk, private ones too) and kept under
$LECTIO_HOME/mirrors/<version>/ as .npy files, memory-mapped and loaded once per process. They
hold, for every word, the chunks that hold it and how often (the term frequency the chunk's
tsvector gives: the number of its positions), each chunk's length in words, and the document
frequencies of the version's lexicon: the same numbers the SQL scoring reads, so the scores are
the same. Postings are grouped by the chunks' ACL first and by word within it, and a search reads
only the groups of ACLs its caller shares a principal with: its work then depends on nothing the
caller may not see, so a word only private chunks hold costs an outsider's search exactly what a
word no chunk holds costs, and the time the mirror takes tells nothing of private words. Beside
them, each pericope's title words (the words the SQL title match reads), so titles are matched
here too, and each scripture chunk's citation count (its most cited verse's,
lectio.index.citations: public chunks' citations only), so the citation prior needs no query. A
mirror also knows each chunk's ACL and the columns of the usual filters, so it can narrow to what
a caller may see before ranking; it only proposes chunk ids.
What a caller gets is read under row-level security as that caller (lectio.retrieval.lexical).

A mirror is served only for a version that is ready: a revoked version's never, whatever files
are left in the home. Nor is one whose files do not check out (an array of the wrong length or
dtype, a posting past the last chunk, a manifest of another version): it is built again, or the
search scores in SQL. Files are never rewritten where they lie: a build writes a new folder,
fsyncs it and renames it into place, so a process that has the old files mapped keeps reading
them (writing into a mapped file that shrinks kills its readers with SIGBUS). Dropping a version
(lectio.index.versions.drop_version) removes its mirror.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import psycopg
from psycopg import sql

from lectio.index import bm25, citations, tables
from lectio.settings import load_settings

log = logging.getLogger(__name__)
# Bump when the files change, so an older mirror is built again rather than misread.
FORMAT = 4
# Filter columns a mirror holds besides the ACL: a condition on any other sends the search to SQL.
# tradition and tier are a commentary's, read from the chunk's metadata as the filters read them.
COLUMNS = {"kind": "kind", "translation": "translation", "testament": "testament", "genre": "genre",
           "tradition": "metadata ->> 'tradition'", "tier": "metadata ->> 'tier'"}
# Each inverted index ("" for the words, "title_" for pericope titles) is a table of runs: run j
# holds postings run_starts[j]:run_starts[j + 1] of word run_words[j], and the runs of ACL set s
# (a code into the manifest's acl_sets) are set_runs[s]:set_runs[s + 1], ascending by word.
_RUNS = ("run_words", "run_starts", "set_runs")
_ARRAYS = ("postings", "tf", *_RUNS, "length", "ndoc", "acl", "title_postings",
           *(f"title_{name}" for name in _RUNS), "title_length", "cited", *COLUMNS)
# Masks kept per mirror (one per set of principals and filters seen, 133 KB each on the full
# corpus): past this many the oldest are dropped.
_MASKS_KEPT = 64

# Postings, as a share of the version's chunks, from which a query's are summed into an array of
# every chunk rather than sorted (measured on 1M rows: 1M postings sort and sum in about twice
# the time they add into an array).
DENSE_SHARE = 0.25

# A mirror's folder (v<N>) and a build's staging or retired folder (.v<N>-…): what the mirrors
# folder holds, and all that remove() and sweep() delete.
_NAME = re.compile(r"\.?(v\d+)(-.*)?")

_loaded: dict[tuple[Path, str], "Mirror"] = {}
_building: dict[tuple[Path, str], threading.Lock] = {}
_guard = threading.Lock()


def folder(home: Path, version: str) -> Path:
    return home / "mirrors" / version


def ensure(conn: psycopg.Connection, info, home: Path | None = None) -> "Mirror | None":
    """The mirror of `info` (an IndexVersion), built first if the home lacks it; `conn` must be the
    owner's. None for a version that is not ready, or when it cannot be built (the search then
    scores in SQL)."""
    home = home or load_settings().home
    if info is None or info.status != "ready":
        forget(home, info.version if info else None)
        return None
    found = load(info, home)
    if found is not None:
        return found
    lock = _lock(home, info.version)
    # One thread builds; a service's other searches meanwhile score in SQL rather than wait.
    if not lock.acquire(blocking=False):
        return None
    try:
        found = load(info, home)  # another thread may have just built it
        if found is None:
            build(conn, info, home)
            found = load(info, home)
    except (OSError, ValueError, psycopg.Error) as exc:
        log.warning("no lexical mirror for %s, BM25 runs in SQL: %s", info.version, exc)
        return None
    finally:
        lock.release()
    return found


def load(info, home: Path | None = None) -> "Mirror | None":
    """The mirror of `info` as built in the home, or None (not built, built for another version of
    that name, or the version is not ready)."""
    home = home or load_settings().home
    key = (home, info.version)
    if info.status != "ready":
        forget(home, info.version)
        return None
    found = _loaded.get(key)
    if found is not None and found.matches(info):
        return found
    manifest = folder(home, info.version) / "manifest.json"
    if not manifest.is_file():
        return None
    try:
        if json.loads(manifest.read_text()).get("format") != FORMAT:
            return None  # an older format's files: built again by ensure()
        found = Mirror.read(manifest.parent)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # damaged: built again by ensure()
        log.warning("the lexical mirror of %s is damaged and is not served: %s", info.version, exc)
        return None
    if not found.matches(info):
        return None
    _loaded[key] = found
    return found


def forget(home: Path, version: str | None) -> None:
    """Drop a version's mirror from this process (its files stay: a version served again later,
    once the sources file allows all it shows, has the same words)."""
    _loaded.pop((home, version), None)


def remove(home: Path, version: str) -> None:
    """Delete a version's mirror from the home, with what a build of it left half done: private
    chunks' words and ids are in there. A process that has it mapped keeps its copy until it asks
    for the version again."""
    forget(home, version)
    parent = folder(home, version).parent
    for path in parent.glob("*") if parent.is_dir() else ():
        found = _NAME.fullmatch(path.name)
        if found and found.group(1) == version:
            shutil.rmtree(path, ignore_errors=True)


def sweep(home: Path, registered: set[str]) -> list[str]:
    """Delete the mirrors of versions the database no longer lists (dropped before their mirror
    went with them), and what their builds left; returns those versions."""
    parent = home / "mirrors"
    found = {match.group(1) for match in map(_NAME.fullmatch, (path.name for path in parent.glob("*")))
             if match} if parent.is_dir() else set()
    gone = sorted(found - registered)
    for version in gone:
        remove(home, version)
    return gone


def _lock(home: Path, version: str) -> threading.Lock:
    with _guard:
        return _building.setdefault((home, version), threading.Lock())


def build(conn: psycopg.Connection, info, home: Path) -> Path:
    """Read the version as the owner and write its mirror; written aside and renamed into place,
    so a reader never meets half a mirror."""
    chunks, words, ndoc, titles = _read(conn, info)
    arrays, manifest = _arrays(chunks, words, ndoc)
    arrays.update(_title_arrays(titles, arrays["acl"], manifest))
    # The prior's own query, once for every chunk, so its counts are the ones SQL would give.
    cited = citations.most_cited(conn, info.table_name, manifest["chunk_ids"], info.layout)
    arrays["cited"] = np.array([cited.get(chunk_id, 0) for chunk_id in manifest["chunk_ids"]], dtype=np.int32)
    manifest.update(format=FORMAT, version=info.version, table=info.table_name, fingerprint=info.fingerprint,
                    rows=info.rows)
    target = folder(home, info.version)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Private chunks' words and ids are in here: as closed as the home's stored outputs.
    target.parent.chmod(0o700)
    staging = Path(tempfile.mkdtemp(prefix=f".{info.version}-", dir=target.parent))
    try:
        for name, array in arrays.items():
            _write(staging / f"{name}.npy", lambda file, array=array: np.save(file, array))
        _write(staging / "manifest.json", lambda file: file.write(json.dumps(manifest).encode()))
        _fsync(staging)
        _replace(staging, target)  # an older format's, a damaged one, or another database's v<N>
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _write(path: Path, write) -> None:
    """A new file at `path`, on disk before it is renamed into place (never one opened before)."""
    with open(path, "xb") as file:
        write(file)
        file.flush()
        os.fsync(file.fileno())


def _fsync(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _replace(staging: Path, target: Path) -> None:
    """Put the folder `staging` where `target` is. A folder cannot be renamed over one that holds
    files, so the old one is first renamed aside (readers that have its files mapped keep them:
    they are unlinked, not truncated), then deleted."""
    retired = None
    if target.exists():
        retired = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        os.rename(target, retired)  # onto an empty folder, which rename replaces
    try:
        os.rename(staging, target)
        _fsync(target.parent)
    finally:
        if retired is not None:
            shutil.rmtree(retired, ignore_errors=True)


def _read(conn: psycopg.Connection, info) -> tuple[list[tuple], pd.DataFrame, dict[str, int], list[tuple]]:
    """Every chunk in chunk id order (the order SQL breaks ties in), every (chunk, word, tf) of their
    tsvectors, the lexicon's document frequencies, and (chunk, title words) of every pericope."""
    table = sql.Identifier(info.table_name)
    columns = sql.SQL(", ").join(sql.SQL(expression) for expression in COLUMNS.values())
    with conn.transaction():
        chunks = conn.execute(sql.SQL("SELECT chunk_id, length(tsv), acl, {} FROM {} ORDER BY chunk_id")
                              .format(columns, table)).fetchall()
        words = _copy_csv(conn, sql.SQL(
            "COPY (SELECT c.i, u.lexeme, coalesce(array_length(u.positions, 1), 1) "
            "FROM (SELECT (row_number() OVER (ORDER BY chunk_id) - 1)::int4 AS i, tsv FROM {}) c "
            "CROSS JOIN LATERAL unnest(c.tsv) u) TO STDOUT (FORMAT csv)").format(table))
        ndoc = dict(conn.execute(sql.SQL("SELECT word, ndoc FROM {}").format(
            sql.Identifier(tables.lexicon_table(info.table_name)))).fetchall())
        titles = conn.execute(sql.SQL(
            "SELECT i, words FROM (SELECT (row_number() OVER (ORDER BY chunk_id) - 1)::int4 AS i, granularity, "
            "{} AS words FROM {}) c WHERE granularity = 'pericope'").format(tables.title_words(info.layout), table)).fetchall()
    return chunks, words, ndoc, titles


def _copy_csv(conn: psycopg.Connection, statement: sql.Composable) -> pd.DataFrame:
    # Millions of rows: CSV parsed in C, words kept as text ("nan" and "null" are words here).
    buffer = io.BytesIO()
    with conn.cursor().copy(statement) as copy:
        for data in copy:
            buffer.write(data)
    buffer.seek(0)
    return pd.read_csv(buffer, header=None, names=["chunk", "word", "tf"], keep_default_na=False, na_filter=False,
                       dtype={"chunk": np.int32, "word": str, "tf": np.int32})


def _arrays(chunks: list[tuple], words: pd.DataFrame, ndoc: dict[str, int]) -> tuple[dict, dict]:
    """The postings in runs by ACL set and word (runs()), and the chunk columns as codes into the
    manifest's lists of values (-1 for NULL)."""
    acl_sets = sorted({tuple(row[2] or ()) for row in chunks})
    acl = _codes([tuple(row[2] or ()) for row in chunks], acl_sets)
    codes, vocabulary = pd.factorize(words["word"])
    chunk = words["chunk"].to_numpy()
    order, table = runs(acl[chunk], codes, chunk, len(acl_sets))
    arrays = {
        "postings": chunk[order].astype(np.int32),
        "tf": words["tf"].to_numpy()[order].astype(np.int32),
        **table,
        "length": np.array([row[1] for row in chunks], dtype=np.int32),
        # A word no public chunk holds is missing from the lexicon; SQL counts it as in one chunk.
        "ndoc": np.array([ndoc.get(word, 1) for word in vocabulary], dtype=np.int64),
        "acl": acl,
    }
    values = {}
    for position, name in enumerate(COLUMNS, start=3):
        column = [row[position] for row in chunks]
        values[name] = sorted({value for value in column if value is not None})
        arrays[name] = _codes(column, values[name])
    manifest = {"chunk_ids": [row[0] for row in chunks], "words": list(vocabulary),
                "acl_sets": [list(acl) for acl in acl_sets], "values": values}
    return arrays, manifest


def _title_arrays(titles: list[tuple], acl: np.ndarray, manifest: dict) -> dict:
    """Each title word's pericopes in runs by ACL set and word (runs()), and each chunk's count of
    distinct title words (0 for all but pericopes); the words go in the manifest."""
    vocabulary: dict[str, int] = {}
    pairs = np.array([(vocabulary.setdefault(word, len(vocabulary)), i) for i, words in titles
                      for word in set(words or ())], dtype=np.int64).reshape(-1, 2)
    order, table = runs(acl[pairs[:, 1]], pairs[:, 0], pairs[:, 1], len(manifest["acl_sets"]))
    length = np.zeros(len(acl), dtype=np.int32)
    for i, words in titles:
        length[i] = len(set(words or ()))
    manifest["title_words"] = list(vocabulary)
    return {"title_postings": pairs[order, 1].astype(np.int32), "title_length": length,
            **{f"title_{name}": array for name, array in table.items()}}


def runs(sets: np.ndarray, words: np.ndarray, chunks: np.ndarray, set_count: int) -> tuple[np.ndarray, dict]:
    """The order that groups postings (each posting's ACL set, word and chunk) by set, then word,
    chunks ascending within; and the table of their runs (_RUNS)."""
    order = np.lexsort((chunks, words, sets))
    by_set, by_word = sets[order], words[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (by_set[1:] != by_set[:-1]) | (by_word[1:] != by_word[:-1])
    starts = np.flatnonzero(first)
    return order, {"run_words": by_word[starts].astype(np.int32),
                   "run_starts": np.append(starts, len(order)).astype(np.int64),
                   "set_runs": np.searchsorted(by_set[starts], np.arange(set_count + 1)).astype(np.int64)}


def _codes(column: list, values: list) -> np.ndarray:
    index = {value: code for code, value in enumerate(values)}
    return np.array([index.get(value, -1) if value is not None else -1 for value in column], dtype=np.int32)


@dataclass(eq=False)
class Mirror:
    """One version's mirror: `chunk_ids[i]` is chunk i; arrays as `_arrays` writes them."""

    path: Path
    manifest: dict
    arrays: dict[str, np.ndarray]
    chunk_ids: list[str]
    words: dict[str, int]
    title_words: dict[str, int]
    _masks: dict = field(default_factory=dict)
    _positions: dict[str, int] | None = None
    _norms: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def read(cls, path: Path) -> "Mirror":
        """The mirror in `path`; ValueError (or OSError, KeyError) when its files do not check out."""
        manifest = json.loads((path / "manifest.json").read_text())
        arrays = {name: np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _ARRAYS}
        found = cls(path, manifest, arrays, list(manifest.pop("chunk_ids")),
                    {word: i for i, word in enumerate(manifest.pop("words"))},
                    {word: i for i, word in enumerate(manifest.pop("title_words"))})
        found.check()
        return found

    def check(self) -> None:
        """Raise ValueError naming the first file that does not fit the manifest: a length or dtype
        other than build() writes, runs of postings that do not add up, a posting or a code past
        what it indexes. Once per process; a search then indexes by these arrays unchecked."""
        chunks = len(self.chunk_ids)
        if self.manifest.get("rows") != chunks:
            raise ValueError(f"manifest.json lists {chunks} chunks for a version of {self.manifest.get('rows')} rows")
        self._check_shapes(chunks)
        for prefix, held in (("", ("postings", "tf")), ("title_", ("title_postings",))):
            self._check_runs(prefix, held)
        self._check_bounds(chunks)

    def _check_runs(self, prefix: str, held: tuple[str, ...]) -> None:
        words, starts, bounds = (self.arrays[prefix + name] for name in _RUNS)
        for name, array, end in ((f"{prefix}run_starts", starts, len(self.arrays[held[0]])),
                                 (f"{prefix}set_runs", bounds, len(words))):
            if len(array) == 0 or array[0] != 0 or array[-1] != end or np.any(np.diff(array) < 0):
                raise ValueError(f"{name}.npy does not rise from 0 to {end}")
        if len(starts) != len(words) + 1:
            raise ValueError(f"{prefix}run_starts.npy holds {len(starts)} values, not {len(words) + 1}")
        for name in held[1:]:
            if len(self.arrays[name]) != len(self.arrays[held[0]]):
                raise ValueError(f"{name}.npy holds {len(self.arrays[name])} values, not {len(self.arrays[held[0]])}")
        # Within a set the words ascend (a search finds them by bisection); the next set starts again.
        rising = np.diff(words.astype(np.int64)) > 0
        restarts = bounds[1:-1][(bounds[1:-1] > 0) & (bounds[1:-1] < len(words))] - 1
        rising[restarts] = True
        if not rising.all():
            raise ValueError(f"{prefix}run_words.npy does not ascend within each ACL set")

    def _check_shapes(self, chunks: int) -> None:
        sets = len(self.manifest["acl_sets"]) + 1
        expected = {"ndoc": len(self.words), "set_runs": sets, "title_set_runs": sets, "length": chunks,
                    "acl": chunks, "title_length": chunks, "cited": chunks, **{name: chunks for name in COLUMNS}}
        for name in _ARRAYS:
            array = self.arrays[name]
            if array.ndim != 1 or array.dtype.kind != "i":
                raise ValueError(f"{name}.npy holds {array.dtype} of shape {array.shape}, not a row of integers")
            if name in expected and len(array) != expected[name]:
                raise ValueError(f"{name}.npy holds {len(array)} values, not {expected[name]}")

    def _check_bounds(self, chunks: int) -> None:
        # (lowest, past the highest) value each may hold; None: no upper bound.
        bounds = {"postings": (0, chunks), "title_postings": (0, chunks), "tf": (1, None), "ndoc": (1, None),
                  "run_words": (0, len(self.words)), "title_run_words": (0, len(self.title_words)),
                  "acl": (0, len(self.manifest["acl_sets"])),
                  **{name: (-1, len(self.manifest["values"][name])) for name in COLUMNS}}
        for name, (low, high) in bounds.items():
            array = self.arrays[name]
            if len(array) and (array.min() < low or (high is not None and array.max() >= high)):
                raise ValueError(f"{name}.npy holds values outside [{low}, {high if high is not None else 'any'})")

    def matches(self, info) -> bool:
        m = self.manifest
        return (m.get("format"), m.get("version"), m.get("table"), m.get("fingerprint"), m.get("rows")) == (
            FORMAT, info.version, info.table_name, info.fingerprint, info.rows)

    def mask(self, conditions: list[tuple[str, str, object]]) -> np.ndarray | None:
        """Which chunks pass every (column, test, value) (lectio.retrieval.scope.Scope.conditions),
        NULL failing as in SQL; None when a condition names a column the mirror lacks."""
        key = repr(conditions)
        if key not in self._masks:
            passed = np.ones(len(self.chunk_ids), dtype=bool)
            for column, test, value in conditions:
                one = self._acl(value) if (column, test) == ("acl", "&&") else self._test(column, test, value)
                if one is None:
                    return None
                passed &= one
            with self._lock:  # a service's searches share the mirror
                if len(self._masks) >= _MASKS_KEPT:
                    self._masks.pop(next(iter(self._masks)), None)
                self._masks[key] = passed
        return self._masks[key]

    def _acl(self, principals) -> np.ndarray:
        return np.isin(self.arrays["acl"], self.sets(principals))

    def sets(self, principals) -> np.ndarray:
        """The ACL sets (codes into the manifest's acl_sets) that share a principal with `principals`:
        the only postings a search by them reads."""
        return np.array([code for code, acl in enumerate(self.manifest["acl_sets"]) if set(acl) & set(principals)],
                        dtype=np.int64)

    def _test(self, column: str, test: str, value) -> np.ndarray | None:
        if column not in COLUMNS or test not in ("=", "<>", "null-or-="):
            return None
        codes, values = self.arrays[column], self.manifest["values"][column]
        code = values.index(value) if value in values else -2  # -2: no chunk has it
        if test == "=":
            return codes == code
        if test == "<>":
            return (codes != code) & (codes != -1)
        return (codes == -1) | (codes == code)

    def scores(self, weights: dict[str, float], k1: float, b: float, n: float, avgdl: float,
               sets: np.ndarray) -> "Scored":
        """Every chunk of the ACL `sets` (Mirror.sets) that holds a query word, with its BM25:
        `weights` maps each query word to its weight. Only the query words' postings in those sets
        are read, so a search's work grows with them, not with the version's rows. The arithmetic
        is the SQL scoring's (lectio.retrieval.lexical), both lectio.index.bm25's terms, operation
        for operation in float64; each chunk's words are summed in the order its tsvector lists
        them (bytewise). PostgreSQL sums them in whatever
        order its plan reads them, so a sum may differ in its last bits, and chunks whose scores
        differ only so may swap places."""
        norm = self._norm(k1, b, avgdl)
        postings, tf_all, ndoc = (self.arrays[name] for name in ("postings", "tf", "ndoc"))
        ordered = sorted(weights, key=lambda w: w.encode())
        ids = [self.words.get(word, -1) for word in ordered]
        runs, terms = [], []
        for k, start, end in self._reach("", ids, sets):
            rows = postings[start:end]
            tf = tf_all[start:end].astype(np.float64)
            runs.append(rows)
            terms.append(bm25.saturation(tf, norm[rows], k1, weights[ordered[k]] * bm25.idf(n, int(ndoc[ids[k]]))))
        return _summed(runs, terms, len(self.chunk_ids))

    def _reach(self, prefix: str, ids: list[int], sets: np.ndarray) -> list[tuple[int, int, int]]:
        """(k, start, end) for each run of word ids[k] in `sets`, in the order of `ids` (so each
        chunk's words are summed in that order: a chunk is in one set). A word the mirror lacks is
        -1, and is looked for like any other: what a search does follows only the sets it reads."""
        words, starts, bounds = (self.arrays[prefix + name] for name in _RUNS)
        wanted = np.asarray(ids, dtype=np.int64)
        found = []
        for s in sets:
            low, high = int(bounds[s]), int(bounds[s + 1])
            if low == high:
                continue
            at = low + np.searchsorted(words[low:high], wanted)
            hit = np.flatnonzero((at < high) & (words[np.minimum(at, high - 1)] == wanted))
            found += [(int(k), int(starts[at[k]]), int(starts[at[k] + 1])) for k in hit]
        return sorted(found, key=lambda run: run[0])

    def titles(self, query_words: set[str], query_share: float, sets: np.ndarray) -> "Scored":
        """The pericopes whose titles match, with their title scores: the SQL title match's
        (lectio.retrieval.lexical) arithmetic in float64. A pericope matches when at least half its
        title's words are query words and they are at least `query_share` of the query's; it
        scores the product of the two shares."""
        postings = self.arrays["title_postings"]
        ids = [self.title_words.get(word, -1) for word in query_words]
        runs = [postings[start:end] for _, start, end in self._reach("title_", ids, sets)]
        hit, shared = _summed(runs, [np.ones(len(run)) for run in runs], len(self.chunk_ids))
        of_title = shared / self.arrays["title_length"][hit]
        of_query = shared / len(query_words)
        keep = (of_title >= 0.5) & (of_query >= query_share)
        return Scored(hit[keep], of_title[keep] * of_query[keep])  # a match's shares are both above 0

    def most_cited(self, chunk_ids: list[str]) -> dict[str, int]:
        """chunk_id → citations of its most cited verse, for the scripture chunks among `chunk_ids`
        that have any (lectio.index.citations.most_cited's answer, without the query)."""
        if self._positions is None:
            self._positions = {chunk_id: i for i, chunk_id in enumerate(self.chunk_ids)}
        cited = self.arrays["cited"]
        found = ((chunk_id, int(cited[self._positions[chunk_id]])) for chunk_id in chunk_ids
                 if chunk_id in self._positions)
        return {chunk_id: count for chunk_id, count in found if count}

    def _norm(self, k1: float, b: float, avgdl: float) -> np.ndarray:
        key = (k1, b, avgdl)
        if key not in self._norms:
            self._norms[key] = bm25.length_norm(self.arrays["length"].astype(np.float64), avgdl, k1, b)
        return self._norms[key]


class Scored(NamedTuple):
    """Chunks a query reached: their positions, ascending (so in chunk id order), and their scores."""

    positions: np.ndarray
    scores: np.ndarray

    def within(self, eligible: np.ndarray) -> "Scored":
        """Those `eligible` marks (a mask over every chunk: Mirror.mask), read at these positions only."""
        keep = eligible[self.positions]
        return Scored(self.positions[keep], self.scores[keep])


def _summed(runs: list[np.ndarray], terms: list[np.ndarray], chunks: int) -> Scored:
    """Each chunk in `runs` (arrays of chunk positions, each ascending and without repeats) with
    the sum of its `terms` (aligned with the runs), added in the order of the runs: the bits
    adding each run into a total per chunk, from 0.0, give. `chunks`: how many the version holds."""
    if sum(len(run) for run in runs) >= chunks * DENSE_SHARE:
        return _summed_densely(runs, terms, chunks)
    if not runs:
        return Scored(np.zeros(0, dtype=np.int32), np.zeros(0))
    rows, values = np.concatenate(runs), np.concatenate(terms)
    # Stable, so a chunk's terms keep the runs' order; timsort merges the sorted runs cheaply.
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    first = np.ones(len(rows), dtype=bool)
    np.not_equal(rows[1:], rows[:-1], out=first[1:])
    # bincount adds its weights one at a time in input order onto 0.0: the order described above.
    return Scored(rows[first], np.bincount(np.cumsum(first) - 1, weights=values[order]))


def _summed_densely(runs: list[np.ndarray], terms: list[np.ndarray], chunks: int) -> Scored:
    """_summed by adding each run into a total per chunk: cheaper than sorting once the postings
    are a good share of the chunks (common words), and then still in proportion to them."""
    total, held = np.zeros(chunks), np.zeros(chunks, dtype=bool)
    for run, term in zip(runs, terms):
        total[run] += term
        held[run] = True
    positions = np.flatnonzero(held)
    return Scored(positions, total[positions])


def best(scored: Scored, m: int) -> Scored:
    """The `m` best of `scored` by (score desc, chunk id asc), best first."""
    scores = scored.scores
    if m <= 0:
        return Scored(scored.positions[:0], scores[:0])
    hit = np.arange(len(scores))
    if len(hit) > m:
        threshold = np.partition(scores, len(scores) - m)[len(scores) - m]
        hit = np.flatnonzero(scores >= threshold)
    # Positions ascend, so an index into them breaks ties as the chunk id does.
    ranked = hit[np.lexsort((hit, -scores[hit]))[:m]]
    return Scored(scored.positions[ranked], scores[ranked])
