"""How a caller asks one search to be ranked, and the one reading of it every door shares: the
CLI's options, the HTTP service's query parameters and the client that sends one to the other
name the same fields, with the same defaults, and refuse the same values. Each option sets one
search setting (lectio.retrieval.config) by its path."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from lectio.retrieval import bounds
from lectio.retrieval.config import SearchConfig, setting_types
from lectio.retrieval.modes import Mode

# The most results one search returns, at every door.
MAX_K = 100

# Each option's help, in the order the CLI lists them; the names are SearchOptions' fields.
OPTION_HELP = {
    "k": f"how many results (1 to {MAX_K}; default 10)",
    "mode": "hybrid (both retrievers fused, the default), vector or lexical (one alone)",
    "parents": "return each hit's parent (a verse's pericope), once",
    "xrefs": "fuse verses the corpus cross-references from the best hits, at this weight (e.g. 0.3)",
    "prominence": "weight of how often the corpus cites a passage (default 0.2; 0 turns it off; a query of "
                  "30 words or more is a paragraph, without the prior)",
    "mmr": "diversify the results by maximal marginal relevance, at this lambda (1 = relevance only)",
}
# The setting each option sets, where it is given.
_SETTING = {"mode": "mode", "parents": "stages.return_parents", "xrefs": "xrefs.weight",
            "prominence": "fusion.prominence_weight", "mmr": "stages.mmr_lambda"}
_NUMBERS = ("xrefs", "prominence", "mmr")  # the options whose settings are numbers (None: not given)


@dataclass(frozen=True)
class SearchOptions:
    """What a caller may ask of one search's ranking besides its query and filters. None is an
    option not given: the search's own setting stands."""

    k: int = 10
    mode: Mode = Mode.HYBRID
    parents: bool = False
    xrefs: float | None = None
    prominence: float | None = None
    mmr: float | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> SearchOptions:
        """The options among `values` (parsed CLI options), other keys and None ignored."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if values.get(f.name) is not None})

    def given(self) -> dict[str, Any]:
        """The options as query parameters: k and mode always, the others where given."""
        sent = {"k": self.k, "mode": str(self.mode), "parents": "true" if self.parents else None,
                "xrefs": self.xrefs, "prominence": self.prominence, "mmr": self.mmr}
        return {name: value for name, value in sent.items() if value is not None}

    def problem(self) -> str | None:
        """The first value no search can mean, as "<option> must be …"; None when all are usable.
        An option's range is its setting's (lectio.retrieval.bounds), named as the caller named it."""
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= MAX_K:
            return f"k must be an integer from 1 to {MAX_K}, not {self.k!r}"
        types = setting_types()
        for name in _NUMBERS:
            value = getattr(self, name)
            if value is not None and (found := bounds.problem(_SETTING[name], types[_SETTING[name]], value, name)):
                return found
        return None

    def config(self, assignments: tuple[str, ...] | list[str] = ()) -> SearchConfig:
        """The search settings these options ask for; NAME=VALUE `assignments` (the CLI's `--set`)
        after them."""
        values = {_SETTING[name]: getattr(self, name) for name in _SETTING if getattr(self, name) is not None}
        return SearchConfig().with_settings(values).but(assignments)
