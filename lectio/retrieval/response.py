"""What a search answers: its results in rank order, the mode that answered, the version read and,
where nothing may be shown, why."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from lectio.retrieval.hits import Hit


@dataclass(frozen=True)
class Result:
    rank: int
    chunk_id: str
    kind: str
    refs: list[str]
    source_id: str
    breadcrumb: str | None
    text: str  # what a caller hands to a model: the context header, then the chunk's own text
    score: float
    granularity: str
    translation: str | None


@dataclass
class SearchResponse:
    query: str
    mode: str  # "reference", "word-study", "none", or the SearchConfig mode that answered
    index_version: str | None
    results: list[Result] = field(default_factory=list)
    message: str | None = None

    def to_json(self) -> dict:
        return {
            "query": self.query,
            "mode": self.mode,
            "index_version": self.index_version,
            "message": self.message,
            "results": [asdict(r) for r in self.results],
        }


def results(hits: list[Hit]) -> list[Result]:
    """The hits as a caller reads them, ranked from 1."""
    return [Result(rank, hit.chunk_id, hit.kind, list(hit.refs), hit.source_id, hit.breadcrumb, hit.result_text,
                   round(float(hit.score), 4), hit.granularity, hit.translation)
            for rank, hit in enumerate(hits, start=1)]
