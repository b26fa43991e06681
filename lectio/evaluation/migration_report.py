"""A migration gate's result in words: plain text for the CLI and Markdown tables for the
Dagster UI (the metrics side by side, the queries whose scores moved)."""

from __future__ import annotations

from lectio.evaluation.migration_gate import GateResult


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def metrics_markdown(result: GateResult) -> str:
    """The metrics of live and candidate side by side, one table per query set."""
    parts = []
    for name, rows in result.metrics.items():
        lines = [f"**{name}**", "", f"| metric | {result.live} (live) | {result.candidate} (candidate) | delta | tolerance |",
                 "|---|---:|---:|---:|---:|"]
        for metric, row in rows.items():
            flag = "" if row["ok"] else " ✗"
            delta = "–" if row["delta"] is None else f"{row['delta']:+.3f}"
            lines.append(f"| {metric} | {_fmt(row['live'])} | {_fmt(row['candidate'])} | {delta}{flag} "
                         f"| {_fmt(row['tolerance'])} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) or "no live version to compare with"


def differences_markdown(result: GateResult, limit: int = 50) -> str:
    if not result.differences:
        return "no query changed"
    lines = ["| set | query | metric | live | candidate |", "|---|---|---|---:|---:|"]
    for d in result.differences[:limit]:
        for metric, change in d["changes"].items():
            lines.append(f"| {d['query_set']} | {d['id']}: {d['query'][:60]} | {metric} | {_fmt(change['live'])} "
                         f"| {_fmt(change['candidate'])} |")
    if len(result.differences) > limit:
        lines.append(f"\n… and {len(result.differences) - limit} more queries")
    return "\n".join(lines)


def describe(result: GateResult, limit: int = 20) -> str:
    """Plain text for the CLI: decision, metrics side by side, the queries that moved."""
    lines = [f"{result.decision.upper()}: {result.reason}"]
    for name, rows in result.metrics.items():
        lines.append(f"\n{name}: {'metric':<20} {str(result.live):>9} {result.candidate:>9} {'delta':>8}")
        for metric, row in rows.items():
            mark = "  ✗ over tolerance" if not row["ok"] else ""
            delta = "–" if row["delta"] is None else f"{row['delta']:+.3f}"
            lines.append(f"  {'':<{len(name)}}{metric:<20} {_fmt(row['live']):>9} {_fmt(row['candidate']):>9} "
                         f"{delta:>8}{mark}")
    if result.differences:
        lines.append(f"\n{len(result.differences)} queries changed (largest losses first):")
        for d in result.differences[:limit]:
            changes = ", ".join(f"{m} {_fmt(c['live'])} → {_fmt(c['candidate'])}" for m, c in d["changes"].items())
            lines.append(f"  {d['query_set']}/{d['id']} {d['query'][:50]!r}: {changes}")
        if len(result.differences) > limit:
            lines.append(f"  … and {len(result.differences) - limit} more (--json lists all)")
    if result.switched:
        lines.append(f"\n{result.candidate} is live; `lectio index rollback` restores {result.live}")
    if result.retired:
        lines.append(f"retention dropped {', '.join(result.retired)}")
    return "\n".join(lines)
