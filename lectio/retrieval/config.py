"""The knobs of a ranked search, in one frozen value: evaluation and migrations compare versions
under the same configuration, and the CLI, the service and evaluation build it one way
(SearchConfig.from_options). Settings are grouped per retriever (each retriever's own, declared in
its module and gathered by lectio.retrieval.retrievers), for fusion and per stage (each stage's
own, declared in its module and gathered by lectio.retrieval.pipeline), and named by
their path: `vector.ef_search`, `fusion.rrf_k`, `stages.query_share.weight`; the flat names they
had before (ALIASES) still name them at the doors."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache

from lectio.retrieval import bounds
from lectio.retrieval.expansion import ExpansionSettings
from lectio.retrieval.modes import HYBRID_ONLY, MODES, Mode
from lectio.retrieval.pipeline import CHOSEN_BY_VERSION, GROUPS, StageSettings
from lectio.retrieval.retrievers import declared


@dataclass(frozen=True)
class TopicSettings:
    """A short topic (at most `words` content words, no question, its best hit not a whole
    pericope; see lectio.retrieval.shape) is ranked again: over `rows` only ("verses": scripture
    verses, "verses+other": verses and the other kinds), or, with "all", over the same candidates
    fused again with BM25 weighing `lexical_weight`."""

    # A one-word topic is a word the verses use: BM25 finds them where the query's vector, one
    # word's, is vague. One word, rows "all" and weight 3 were chosen on the dev parts over 1.5, 2
    # and 4 and two words: Nave's recall@20 .313 -> .352, budget recall .280 -> .304, theology and
    # near-quotations within noise (two words, or weight 2, cost theology beyond it). Verse rows
    # cost Nave's recall@20 (the paragraphs hold a topic's neighbouring verses); see
    # docs/results.md.
    words: int = 1
    rows: str = "all"
    lexical_weight: float = 3.0
    # A one-word topic is often a word of another translation's vocabulary ("plummet" and
    # "moderation" are the KJV's alone; the WEB says "plumb line" and "gentleness"), and many
    # readers' words are the KJV's. In a topic's second fusion, BM25 over the
    # other translations' scripture proposes, weighing this much, the chunk of the same verses in
    # the search's translation (lectio.retrieval.other_translations.twins); 0 turns it off. 3, the
    # topic's own BM25 weight, was chosen on the dev parts over 1 and 2: Nave's recall@20 .352 ->
    # .390, budget recall .311 -> .351, theology and near-quotations within noise. Every query
    # (weight 1, not only topics) cost theology budget recall beyond noise; see docs/results.md.
    other_translations_weight: float = 3.0


@dataclass(frozen=True)
class ParagraphSettings:
    """A query of at least `words` words (a doctrinal statement, a sermon point, a commentary
    passage: lectio.retrieval.shape) comments on a passage and asks for it: its page keeps whole
    passages where they rank (the long-passage stages, `long_passage_tokens`, stand at 0), and the
    citation prior weighs `prominence_weight`, its own words naming the passage better than fame
    does. 0 words turns it off."""

    # 30 is the shortest paragraph the long-passage set holds; no theology, Nave's or
    # near-quotation query reaches it but long quotations (18 of the quotations' dev part), whose
    # scores did not move. Passages kept whole and the prior at 0 were chosen on the long-passage
    # set's dev part (602 queries) over the prior at 0.1 and 0.2, over keeping the long-passage
    # stages, and over 200 candidates: against answering paragraphs as sentences, MRR .257 ->
    # .282 and nDCG@10 .104 -> .115 (both beyond noise), recall@20 .416 -> .422 and budget recall
    # .234 -> .232 (within it); see docs/results.md.
    words: int = 30
    long_passage_tokens: int = 0
    prominence_weight: float = 0.0
    # A paragraph's first page is the passage it comments on and its own neighbours: feedback toward
    # them cost the long passages' dev recall@20 .845 -> .553 (feedback.weight 1).
    feedback_weight: float = 0.0
    # The learned ranker learned from questions, topics and quotations: on the long passages' dev
    # part, which it never saw, it cost MRR .492 -> .444 and budget recall .491 -> .430 (both
    # beyond noise), so a paragraph's page is the fused order's unless this is on.
    learned_rank: bool = False


@dataclass(frozen=True)
class QuestionSettings:
    """A question ("What is faith?", "Is man a reasonable creature?", "Why did Jesus weep?") is
    ranked by its subject (lectio.retrieval.query_text.QueryText.question_subject) when
    `subject` is on: BM25 matches the subject's words, not the frame's ("mean" of "What does
    grace mean?"), and a question about one word takes a topic's path."""

    subject: bool = False
    # With `subject` on, whether the vector side embeds the subject too (else the question as
    # asked: on the readers' questions' dev part, embedding a question's content words alone
    # reached fewer relevant verses among the first 100, .297 against .342).
    embed_subject: bool = False


@dataclass(frozen=True)
class FusionSettings:
    rrf_k: int = 60
    # Each list's share of a hybrid's fusion is scaled by (score / that list's best) ** this power
    # (lectio.retrieval.fusion.fuse); 0 fuses by ranks alone. By ranks alone the citation
    # prior lifted much-cited passages over a quoted verse both sides put first (near-quotation
    # dev MRR .784). 1.5 was chosen on the dev parts over 0.5, 1 and 2: near-quotation MRR .953,
    # theology and Nave's within noise of ranks alone (docs/results.md).
    score_power: float = 1.5
    # Passages the corpus's commentators cite often rank higher among equally close hits: a
    # scripture hit's fused score is multiplied by 1 + weight * ln(1 + citations of its most cited
    # verse) (lectio.index.citations). Hybrid mode only, so vector and lexical stay plain baselines.
    # 0.2 was chosen on the theology set's dev part over 0.1 and 0 (MRR and nDCG@10 gained beyond
    # noise, the other metrics moved within it); see docs/results.md.
    prominence_weight: float = 0.2


def _with_retriever_settings(cls):
    """`cls` with a field for each settings group the retrievers declare, after `word_study`,
    before dataclass() reads its fields: a retriever's settings are its module's, never this one's."""
    annotations = {}
    for name, annotation in cls.__annotations__.items():
        annotations[name] = annotation
        if name == "word_study":
            for setting in declared():
                annotations[setting.name] = setting.annotation
                setattr(cls, setting.name, setting.field())
    cls.__annotations__ = annotations
    return cls


@dataclass(frozen=True)
@_with_retriever_settings
class SearchConfig:
    """How a non-reference query is answered. Lexical matching catches what
    vectors blur (names, rare words), vectors catch paraphrase; RRF fuses the two rankings."""

    mode: Mode = Mode.HYBRID
    # Taken from each retriever before fusion. 200 (every row the HNSW walk at ef_search 200 finds)
    # was tried on the dev parts and not kept: it lifted long passages' recall@20 (.425 -> .446,
    # within noise) and Nave's MRR and nDCG@10 (beyond it), but put theology asked with
    # `kind: scripture` further below the same queries unfiltered (recall@20 gap .022 -> .029,
    # beyond noise): more commentary on the relevant verses reaches the unfiltered page, which a
    # scripture filter rightly cannot show (docs/results.md).
    candidates: int = 100
    # A query about a Greek or Hebrew word gets its Strong's entry and the verses that use it.
    word_study: bool = True
    # Each retriever's settings (vector, lexical, titles, feedback, passages, evidence, xrefs:
    # lectio.retrieval.retrievers) come here, in the retrievers' order (_with_retriever_settings).
    expansion: ExpansionSettings = field(default_factory=ExpansionSettings)
    topics: TopicSettings = field(default_factory=TopicSettings)
    paragraphs: ParagraphSettings = field(default_factory=ParagraphSettings)
    questions: QuestionSettings = field(default_factory=QuestionSettings)
    fusion: FusionSettings = field(default_factory=FusionSettings)
    stages: StageSettings = field(default_factory=StageSettings)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        # A mode given as its word (the CLI, a settings file, a recorded report) is the Mode.
        object.__setattr__(self, "mode", Mode(self.mode))
        if problem := bounds.first_problem(self):  # every door builds its settings here
            raise ValueError(problem)

    @property
    def hybrid(self) -> bool:
        """Whether both retrievers run and are fused: the steps beyond the plain baselines
        (scores in fusion, cross-references, prominence, evidence, feedback, a topic fused again
        from all rows) run in this mode only (lectio.retrieval.modes.HYBRID_ONLY)."""
        return self.mode in HYBRID_ONLY

    @property
    def embeds(self) -> bool:
        """Whether the vector retriever runs (hybrid or vector)."""
        return self.mode != Mode.LEXICAL

    @property
    def matches_words(self) -> bool:
        """Whether the lexical retriever runs (hybrid or lexical)."""
        return self.mode != Mode.VECTOR

    @classmethod
    def from_options(cls, assignments: Iterable[str] = (), **options) -> SearchConfig:
        """The configuration the CLI, the service and evaluation search with: the defaults, then
        `options` (flat names, ALIASES), then NAME=VALUE strings (`lectio eval --set`), NAME a
        setting's dotted path or flat name. See `but`."""
        return cls().but(assignments, **options)

    def but(self, assignments: Iterable[str] = (), **options) -> SearchConfig:
        """This configuration with `options` and NAME=VALUE `assignments` set, each value read as
        its setting's type. An option of None for a setting that cannot be None is one not given
        (a CLI option left out). A ValueError naming the assignment for an unknown name or a bad
        value."""
        types = setting_types()
        given = {ALIASES.get(name, name): value for name, value in options.items()}
        config = self.with_settings({path: value for path, value in given.items()
                                     if value is not None or "None" in types.get(path, "None")})
        for item in assignments:
            name, sep, raw = (part.strip() for part in item.partition("="))
            path = ALIASES.get(name, name)
            if not sep or path not in types:
                raise ValueError(f"--set {item!r}: expected NAME=VALUE, NAME one of {', '.join(types)}")
            value = _value(raw, types[path], item)
            try:
                config = _set(config, path.split("."), value)
            except ValueError as exc:  # out of its range (lectio.retrieval.bounds)
                raise ValueError(f"--set {item!r}: {exc}") from None
        return config

    def with_settings(self, values: dict[str, object]) -> SearchConfig:
        """This configuration with each setting named by its dotted path set to its value: how
        lectio's own code asks for a variant (the flat names of ALIASES are for its doors)."""
        types = setting_types()
        config = self
        for path, value in values.items():
            if path not in types:
                raise ValueError(f"unknown search setting {path!r}")
            config = _set(config, path.split("."), value)
        return config

    def as_chosen_by(self, chosen: dict[str, str]) -> SearchConfig:
        """This configuration with each trained-model setting that says "active" naming the model
        `chosen` (a version's record) gives it, "" for none."""
        values = {path: chosen.get(path, "") for path in CHOSEN_BY_VERSION if _get(self, path) == "active"}
        return self.with_settings(values) if values else self

    def for_paragraphs(self) -> SearchConfig:
        """This configuration as a paragraph-length query is ranked under (ParagraphSettings)."""
        paragraphs = self.paragraphs
        learned = self.stages.learned_rank.model if paragraphs.learned_rank else ""
        return self.with_settings({"stages.long_passages.tokens": paragraphs.long_passage_tokens,
                                   "fusion.prominence_weight": paragraphs.prominence_weight,
                                   "feedback.weight": paragraphs.feedback_weight,
                                   "stages.learned_rank.model": learned})


@lru_cache(maxsize=None)
def setting_types(kind: type = SearchConfig, prefix: str = "") -> dict[str, str]:
    """Every setting's dotted path and its type, as written (walked once per class: a search asks
    for variants of its configuration on its own path; callers only read the mapping)."""
    found = {}
    for f in dataclasses.fields(kind):
        nested = _SETTINGS.get(str(f.type))
        if nested is not None:
            found.update(setting_types(nested, f"{prefix}{f.name}."))
        else:
            found[prefix + f.name] = str(f.type)
    return found


def _get(settings, path: str):
    for name in path.split("."):
        settings = getattr(settings, name)
    return settings


def _set(settings, path: list[str], value):
    head, *rest = path
    return replace(settings, **{head: _set(getattr(settings, head), rest, value) if rest else value})


_SETTINGS = {kind.__name__: kind for kind in (
    ExpansionSettings, TopicSettings, ParagraphSettings, QuestionSettings, FusionSettings, StageSettings,
    *(setting.kind for setting in declared()))} | GROUPS

# The flat names settings had before they were grouped: docs, commands and scripts still use them.
# They are read at the doors only (the CLI's options, `--set`, query sets, recorded reports, through
# `from_options` and `but`); lectio's own code names a setting by its path (`with_settings`).
ALIASES = {
    "fusion_score_power": "fusion.score_power", "rrf_k": "fusion.rrf_k", "prominence_weight": "fusion.prominence_weight",
    "vector_weight": "vector.weight", "ef_search": "vector.ef_search", "expand_vector": "vector.expand",
    "lexical_weight": "lexical.weight", "bm25_k1": "lexical.k1", "bm25_b": "lexical.b",
    "lexical_depth": "lexical.depth", "lexical_rescored": "lexical.rescored", "lexical_mirror": "lexical.mirror",
    "expand_lexical": "lexical.expand",
    "expansion_weight": "expansion.weight", "expansion_min_count": "expansion.min_count",
    "expansion_min_share": "expansion.min_share", "expansion_max_terms": "expansion.max_terms",
    "title_weight": "titles.weight", "title_query_share": "titles.query_share",
    "topic_words": "topics.words", "topic_rows": "topics.rows", "topic_lexical_weight": "topics.lexical_weight",
    "topic_other_translations_weight": "topics.other_translations_weight",
    "xref_weight": "xrefs.weight", "xref_seeds": "xrefs.seeds", "xref_depth": "xrefs.depth",
    "xref_boost": "xrefs.boost", "xref_max_linked": "xrefs.max_linked",
    "query_share_weight": "stages.query_share.weight", "query_share_depth": "stages.query_share.depth",
    "long_passage_tokens": "stages.long_passages.tokens", "long_passage_parts": "stages.long_passages.parts",
    "pack_page": "stages.long_passages.pack_page",
    "collapse_covered": "stages.collapse.on", "min_new_share": "stages.collapse.min_new_share",
    "commentary_later": "stages.collapse.commentary_later",
    "per_source": "stages.per_source", "mmr_lambda": "stages.mmr_lambda", "return_parents": "stages.return_parents",
}
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
