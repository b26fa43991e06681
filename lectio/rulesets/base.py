"""The contract every ruleset keeps: read → parse → chunk, a name and version, the granularities
it cuts and the size its chunks may reach.

A ruleset states these and the registry holds it to them once, after chunking, for every
source (lectio.rulesets.registry.hold_to_contract): a new content type writes its own rules and
none of the checks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, ClassVar, Generic, TypeVar

from lectio.embedding.model import MAX_TEXT_TOKENS
from lectio.readers.raw import RawText
from lectio.rulesets.chunk import Chunk
from lectio.sources import Source

S = TypeVar("S")  # the parsed structure a ruleset's parse makes and its chunk takes


class Ruleset(ABC, Generic[S]):
    name: ClassVar[str]
    # Named rulesets → their versions (scripture's baselines are several); most have one.
    versions: ClassVar[dict[str, str]]
    granularities: ClassVar[frozenset[str]]
    # The most word pieces a chunk's text may hold: the model's window, since a text it would
    # cut is a defect.
    max_tokens: ClassVar[int] = MAX_TEXT_TOKENS
    # Granularities longer than the model's window by design (scripture's pericopes, chapters and
    # fixed windows): the embedder embeds such a text as the mean of its windows, so max_tokens
    # does not bound them, and the quality check counts them instead.
    window_embedded: ClassVar[frozenset[str]] = frozenset()
    # Whether a source may override the ruleset's rules with `rules:` in the sources file (the
    # ruleset checks the names and values itself); elsewhere the key would be ignored silently,
    # so it is refused.
    tunable: ClassVar[bool] = False

    @classmethod
    def fits(cls, granularity: str, tokens: int) -> bool:
        """Whether a chunk of `granularity` holding `tokens` word pieces keeps to the ruleset's cap:
        the one statement of the policy, which chunking enforces and the quality check reports."""
        return granularity in cls.window_embedded or tokens <= cls.max_tokens

    def __init_subclass__(cls, **stages: Callable):
        """`class Notes(Ruleset[...], read=read, parse=parse, chunk=chunk)`: a ruleset whose
        stages are its module's functions."""
        for name in ("read", "parse", "chunk"):
            if name in stages:
                setattr(cls, name, staticmethod(stages.pop(name)))
        super().__init_subclass__(**stages)

    @property
    def version(self) -> str:
        """What a source's fingerprint records: every named ruleset's version, so a change to
        any of them re-chunks the sources this ruleset reads."""
        return ",".join(sorted(self.versions.values()))

    @abstractmethod
    def read(self, source: Source, corpus_dir: Path | None) -> RawText: ...

    @abstractmethod
    def parse(self, source: Source, raw: RawText) -> S: ...

    @abstractmethod
    def chunk(self, source: Source, structure: S) -> list[Chunk]: ...

    def facts(self, structure: S) -> dict[str, Any]:
        """What the parsed-structure stage shows about a source (Dagster metadata): by default
        how many structural units it has."""
        return {"structural_units": self.units(structure)}

    def units(self, structure: S) -> int:
        return len(structure)  # type: ignore[arg-type]  # a structure that is a list of units
