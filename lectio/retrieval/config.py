"""The knobs of a ranked search, in one frozen value: evaluation and migrations compare versions
under the same configuration, and the CLI's options each set one field."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lectio.index.postings import BM25_B, BM25_K1


@dataclass(frozen=True)
class SearchConfig:
    """How a non-reference query is answered. Lexical matching catches what
    vectors blur (names, rare words), vectors catch paraphrase; RRF fuses the two rankings."""

    mode: str = "hybrid"  # hybrid | vector | lexical
    candidates: int = 100  # taken from each side before fusion
    rrf_k: int = 60
    # Each list's share of a hybrid's fusion is scaled by (score / that list's best) ** this power
    # (lectio.retrieval.candidates.fuse); 0 fuses by ranks alone. By ranks alone the citation
    # prior lifted much-cited passages over a quoted verse both sides put first (near-quotation
    # dev MRR .784). 1.5 was chosen on the dev parts over 0.5, 1 and 2: near-quotation MRR .953,
    # theology and Nave's within noise of ranks alone (docs/results.md).
    fusion_score_power: float = 1.5
    vector_weight: float = 1.0
    lexical_weight: float = 1.0
    # The vector side takes `candidates` (100) rows from HNSW. ef_search 100 finds 95.5 % of the
    # exact top 100 (one query only 75 %), 400 finds 99.5 %. 200 was chosen on the dev parts of
    # all three query sets, where every metric stayed within noise of 400 (and of 150): the HNSW
    # walk is the longest step a hybrid search must wait for (benchmarks/search_latency.py).
    ef_search: int = 200
    return_parents: bool = False  # replace child hits by their parent chunk, collapsing duplicates
    bm25_k1: float = BM25_K1
    bm25_b: float = BM25_B
    # BM25 on versions with postings (lectio.index.postings): each query word's best
    # `lexical_depth` postings are read and the best `lexical_rescored` chunks among them scored in
    # full. Chosen by fidelity to scoring every matching chunk, on the theology dev part
    # (benchmarks/search_latency.py reports the overlap), not by any retrieval score.
    lexical_depth: int = 4000
    lexical_rescored: int = 400
    # BM25 from the version's lexical mirror (lectio.index.mirror): every matching chunk scored
    # in process, the best confirmed under row-level security. Off, or where the mirror cannot
    # apply a filter, the postings above are read in SQL.
    lexical_mirror: bool = True
    # Query expansion from the translations' renderings of the same Strong's numbers
    # (lectio.retrieval.expansion); expansion words weigh less than the query's own. A rendering
    # counts when seen `expansion_min_count` times and it carries `expansion_min_share` of the
    # query word's numbers; at most `expansion_max_terms` words are added for each query word.
    expand_lexical: bool = True
    expand_vector: bool = False
    # 0.3 was chosen on the theology set's dev part over 0.5 and 0.2; the count, share and terms
    # limits over looser ones (see docs/results.md).
    expansion_weight: float = 0.3
    expansion_min_count: int = 5
    expansion_min_share: float = 0.1
    expansion_max_terms: int = 3
    # Named passages ("the Lord's Prayer", "crossing the Red Sea") match pericope titles: most of
    # the title's words are in the query, and at least `title_query_share` of the query's words are
    # in the title. At a half, one common word of two ("son" of "the prodigal son") matched a
    # title ("Aaron's Sons") and outranked the story; 0.6 was chosen on the theology set's dev part
    # over 0.5, 0.75 and 1 (see docs/results.md).
    title_weight: float = 1.0
    title_query_share: float = 0.6
    # A short topic (at most `topic_words` content words, no question, its best hit not a whole
    # pericope; see lectio.retrieval.shape) is ranked again: over `topic_rows` only ("verses":
    # scripture verses, "verses+other": verses and the other kinds), or, with "all", over the same
    # candidates fused again with BM25 weighing `topic_lexical_weight`. A one-word topic is a word
    # the verses use: BM25 finds them where the query's vector, one word's, is vague. One word,
    # rows "all" and weight 3 were chosen on the dev parts over 1.5, 2 and 4 and two words: Nave's
    # recall@20 .313 -> .352, budget recall .280 -> .304, theology and near-quotations within
    # noise (two words, or weight 2, cost theology beyond it). Verse rows cost Nave's recall@20
    # (the paragraphs hold a topic's neighbouring verses); see docs/results.md.
    topic_words: int = 1
    topic_rows: str = "all"
    topic_lexical_weight: float = 3.0
    # A one-word topic is often a word of another translation's vocabulary ("plummet" and
    # "moderation" are the KJV's alone; the WEB says "plumb line" and "gentleness"), and many
    # readers' words are the KJV's. In a topic's second fusion, BM25 over the
    # other translations' scripture proposes, weighing this much, the chunk of the same verses in
    # the search's translation (lectio.retrieval.candidates.twins); 0 turns it off. 3, the
    # topic's own BM25 weight, was chosen on the dev parts over 1 and 2: Nave's recall@20 .352 ->
    # .390, budget recall .311 -> .351, theology and near-quotations within noise. Every query
    # (weight 1, not only topics) cost theology budget recall beyond noise; see docs/results.md.
    topic_other_translations_weight: float = 3.0
    # A hit whose verses are all covered by better-ranked hits adds nothing new: drop it. One of
    # which less than `min_new_share` of its verses is new follows the others (0: none does; 0.5
    # and 0.9 moved no dev metric beyond noise but theology recall@20, which 0.9 cost). With
    # `commentary_later`, a commentary (or other non-scripture) hit on verses already listed
    # follows the others: its text is worth reading, so it stays, but it spent a page on verses the
    # page had. On the dev parts it gained a little everywhere and lost nowhere (Nave's budget
    # recall .280 -> .284).
    collapse_covered: bool = True
    min_new_share: float = 0.0
    commentary_later: bool = True
    # The first `query_share_depth` fused hits re-ordered by how much of the query's content words
    # each one's own text holds (lectio.retrieval.rerank.by_query_share). Hybrid mode only. 0.2
    # was chosen on the dev parts over 0.5 and 1: the only weight that gained beyond noise
    # (Nave's MRR) and lost nowhere; 1 lifted near-quotation MRR within noise and cost budget.
    query_share_weight: float = 0.2
    query_share_depth: int = 10
    # A hit longer than `long_passage_tokens` word pieces among the first k follows the shorter
    # ones (lectio.retrieval.rerank.long_passages_last); with `long_passage_parts`, the best
    # smaller scripture hit inside it (a verse or paragraph further down) takes its place. Hybrid
    # mode only; 0 turns it off. A 46-verse pericope ranked first spent a whole 1,000-word-piece
    # page on the one verse a quotation asked for. 1000 (a page) with parts was chosen on the dev
    # parts over 500, 700, 850 and 1500 and over no parts: near-quotation budget recall .985 ->
    # 1.000, theology .499 -> .507, recall@20 unchanged everywhere, MRR within noise (parts
    # off cost theology MRR; 500 cost it beyond noise); see docs/results.md.
    long_passage_tokens: int = 1000
    long_passage_parts: bool = True
    # The page a caller takes from the top holds `long_passage_tokens` word pieces: with
    # `pack_page`, a hit of the first k that would pass what is left of it follows the hits that
    # still fit (lectio.retrieval.rerank.pack_page), so one long paragraph does not end the page
    # for the verses after it; off, only hits longer than the whole page follow. Chosen on the dev
    # parts: budget recall theology .506 -> .524, Nave's .304 -> .311, recall@20 unchanged (the
    # same k hits), theology nDCG@10 .420 -> .411 within noise.
    pack_page: bool = True
    # Cross-reference expansion: verses the corpus links to the best hits' passages,
    # within `xref_depth` steps, ranked by their similarity to the query plus a boost for the link.
    # Off by default: on the theology set it left recall@20 where it was (.615 → .614 at weight
    # 0.3, .616 at 1.0) and cost precision@5 (.394 → .377, .343); see the README.
    xref_weight: float = 0.0
    xref_seeds: int = 10  # best fused hits whose verses seed the traversal
    xref_depth: int = 2
    xref_boost: float = 0.15
    xref_max_linked: int = 200
    # A query about a Greek or Hebrew word gets its Strong's entry and the verses that use it.
    word_study: bool = True
    # Passages the corpus's commentators cite often rank higher among equally close hits: a
    # scripture hit's fused score is multiplied by 1 + weight * ln(1 + citations of its most cited
    # verse) (lectio.index.citations). Hybrid mode only, so vector and lexical stay plain baselines.
    # 0.2 was chosen on the theology set's dev part over 0.1 and 0 (MRR and nDCG@10 gained beyond
    # noise, the other metrics moved within it); see docs/results.md.
    prominence_weight: float = 0.2
    # One prolific commentary (Spurgeon's 21,700 passages on the Psalms) can fill a first page:
    # past this many hits from one non-scripture source, its further hits follow all the others.
    # Hybrid mode, and only when no kind is asked for; None turns it off.
    per_source: int | None = 2
    # Maximal marginal relevance (a crowded theme returns near-duplicate verses): each
    # next hit maximises lambda * relevance - (1 - lambda) * its similarity to the hits already
    # taken. None keeps the ranking as fused.
    mmr_lambda: float | None = None


def configured(assignments: list[str], **fields) -> SearchConfig:
    """A SearchConfig from `fields` and FIELD=VALUE strings (`lectio eval --set`), each value read
    as its field's type; a ValueError naming the assignment for an unknown field or a bad value."""
    types = {f.name: f.type for f in dataclasses.fields(SearchConfig)}
    values = dict(fields)
    for item in assignments:
        name, sep, raw = (part.strip() for part in item.partition("="))
        if not sep or name not in types:
            raise ValueError(f"--set {item!r}: expected FIELD=VALUE, FIELD one of {', '.join(types)}")
        values[name] = _value(raw, str(types[name]), item)
    return SearchConfig(**values)


def _value(raw: str, kind: str, item: str):
    if "None" in kind and raw.lower() in ("none", "off"):
        return None
    try:
        if kind.startswith("bool"):
            return {"true": True, "on": True, "1": True, "false": False, "off": False, "0": False}[raw.lower()]
        if kind.startswith("int"):
            return int(raw)
        if kind.startswith("float"):
            return float(raw)
    except (KeyError, ValueError):
        raise ValueError(f"--set {item!r}: {raw!r} is not of type {kind}") from None
    return raw
