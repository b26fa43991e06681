"""What a data-quality check says: passed or not, whether a failure blocks the index, counts,
a few failing ids and, where great-expectations ran, its per-expectation results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXAMPLES = 10  # failing chunk ids kept per check: enough to find the pattern, short in a UI


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    blocking: bool  # a failure keeps the source out of any index
    description: str
    counts: dict[str, int] = field(default_factory=dict)
    examples: tuple[str, ...] = ()  # failing chunk ids, at most EXAMPLES
    severity: str = "error"  # "warn": worth an alert, not a stop
    expectations: list[dict[str, Any]] = field(default_factory=list)  # great-expectations results
    details: dict[str, Any] = field(default_factory=dict)


def result_of(name: str, blocking: bool, failing: dict[str, list[str]], ok: str, **extra) -> CheckResult:
    """A result from failing chunk ids per problem (an empty list: no such problem)."""
    problems = {k: v for k, v in failing.items() if v}
    examples = tuple(dict.fromkeys(i for ids in problems.values() for i in ids))[:EXAMPLES]
    if problems:
        description = "; ".join(f"{len(ids)} {problem}" for problem, ids in problems.items())
    else:
        description = ok
    return CheckResult(name, not problems, blocking, description, {k: len(v) for k, v in failing.items()},
                       examples, **extra)
