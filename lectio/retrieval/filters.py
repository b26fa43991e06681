"""What a caller narrows a search to, and the one reading of it that every way in shares: the
CLI's options, the HTTP service's query parameters and the query sets' `filters` all name the
same six fields and refuse the same values."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from lectio.sources import KINDS

# Each filter's help, in the order the CLI lists them; the names are Filters' fields.
FILTER_HELP = {
    "kind": ", ".join(KINDS),
    "translation": "a translation's code (e.g. KJV); verses of other translations are left out",
    "testament": "OT or NT",
    "genre": "law, history, wisdom, poetry, prophecy, gospel, epistle or apocalyptic",
    "tradition": "a commentary's tradition, as its source names it",
    "tier": "a commentary's tier, as its source names it",
}


@dataclass(frozen=True)
class Filters:
    """What a caller narrows a search to. Testament and genre are scripture's (chunks of other
    kinds carry the book's where they comment on one); tradition and tier are a commentary's."""

    kind: str | None = None
    translation: str | None = None
    testament: str | None = None  # OT | NT (or old | new, as chunks store it)
    genre: str | None = None
    tradition: str | None = None
    tier: str | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Filters:
        """The filters among `values` (parsed options, query parameters), other keys ignored."""
        return cls(**{f.name: values.get(f.name) for f in fields(cls)})

    def given(self) -> dict[str, str]:
        """The filters that are set, by name: what travels as query parameters."""
        return {name: value for name, value in asdict(self).items() if value is not None}

    def problem(self) -> str | None:
        """The first value no search can mean (not text, blank, or holding a control character),
        as "<field> must be …"; None when every value is usable. Every way in (CLI, service, query
        sets) asks this, so they refuse the same things."""
        for name, value in vars(self).items():
            if value is not None and (not isinstance(value, str) or not value.strip()
                                      or any(ord(c) < 32 for c in value)):
                return f"{name} must be a non-empty line of text, got {value!r}"
        return None
