"""The range of every numeric search setting, checked wherever values become a SearchConfig: the
CLI's options and `--set`, the service's query parameters, evaluation and a library caller all
build one, so each meets the same refusal. A weight of `inf` or 1e308 made scores NaN (not JSON:
the service answered 500 with a traceback, the CLI printed `"score": NaN`); a value is finite and
in range here, or refused in one line naming the setting."""

from __future__ import annotations

import dataclasses

# A list, a prior or a boost weighing this much already decides a ranking alone (the tuned ones
# weigh at most 3), and scores stay finite however the weights multiply.
MAX_WEIGHT = 100
# Rows, steps or word pieces: ten times the deepest any search reads (lexical.depth, 4,000 postings).
MAX_COUNT = 100_000
# Settings whose meaning gives them a narrower range than a weight or a count.
RANGES: dict[str, tuple[int, int]] = {
    # A SearchRequest's k, as the library and evaluation ask (the CLI's and the service's search
    # take at most lectio.retrieval.options.MAX_K): budget recall reads 1,000 word pieces at most.
    "k": (1, 1000),
    "candidates": (1, MAX_COUNT),
    "vector.ef_search": (1, 1000),  # pgvector refuses more
    "lexical.b": (0, 1),  # BM25's length normalisation, a share
    "expansion.min_share": (0, 1),
    "titles.query_share": (0, 1),
    "stages.collapse.min_new_share": (0, 1),
    "stages.mmr_lambda": (0, 1),
    "stages.rerank.tokens": (1, 512),  # the reranker's MiniLM reads at most 512 word pieces
    "stages.learned_rank.depth": (0, 1000),  # the hits a ranker orders again: k at most
    "feedback.alpha": (0, 1),  # the query's own share of the moved vector
    "feedback.skip_above": (0, 1),  # a cosine
}


def first_problem(settings, prefix: str = "") -> str | None:
    """The first setting of `settings` (a SearchConfig or one of its groups) out of its range, as
    "<path> must be …"; None when all are."""
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if dataclasses.is_dataclass(value):
            found = first_problem(value, f"{prefix}{f.name}.")
        else:
            found = problem(prefix + f.name, str(f.type), value)
        if found:
            return found
    return None


def problem(path: str, kind: str, value, name: str | None = None) -> str | None:
    """Why `value` cannot be the setting at `path`, whose type is written `kind` ("float",
    "int | None"), as "<name> must be …" (`name`: what the caller called it, the path by default);
    None when it can, or when the setting is not a number."""
    number = kind.split("|")[0].strip()
    if number not in ("int", "float") or (value is None and "None" in kind):
        return None
    low, high = RANGES.get(path, (0, MAX_COUNT if number == "int" else MAX_WEIGHT))
    numbers = int if number == "int" else (int, float)
    # `not low <= value <= high` refuses NaN, which compares false with everything.
    if isinstance(value, bool) or not isinstance(value, numbers) or not low <= value <= high:
        return f"{name or path} must be {'an integer' if number == 'int' else 'a number'} from {low} to {high:,}, " \
               f"not {value!r}"
    return None
