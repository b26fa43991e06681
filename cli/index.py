"""`lectio index` (list versions, switch, roll back, prune, audit) and `lectio token` (a signed
principals token for reading as lectio_reader)."""

from __future__ import annotations

import sys

from cli.output import print_payload
from lectio.index import locks, revocation, schema, versions
from lectio.index.database import ensure_database
from lectio.settings import load_settings
from lectio.sources import load_sources


def index(args) -> int:
    settings = load_settings()
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        if args.action == "switch":
            if not args.version:
                raise ValueError("switch needs a VERSION")
            with locks.writer_lock(conn, "this switch"):
                revocation.switch_judged(conn, args.version, load_sources(settings.sources_file))
        elif args.action == "rollback":
            previous = versions.previous_version(conn)
            if not previous:
                print("no previous version to roll back to", file=sys.stderr)
                return 1
            with locks.writer_lock(conn, "this rollback"):
                revocation.switch_judged(conn, previous, load_sources(settings.sources_file))
        elif args.action == "prune":
            from lectio.index.retention import retain

            with locks.writer_lock(conn, "this prune"):  # never drop a candidate a migration is about to gate
                dropped = retain(conn, args.keep)
            if not args.json:
                print(f"dropped {', '.join(dropped)}" if dropped else "nothing to drop")
        elif args.action == "audit":
            with locks.writer_lock(conn, "this audit"):
                judgement = revocation.judge(conn, revocation.allowed_acls(load_sources(settings.sources_file)))
            if not args.json:
                print(judgement.describe() or "every version shows only what the sources file allows")
        versions.mark_abandoned_builds(conn)  # a build whose builder is gone is listed as abandoned
        listed = versions.list_versions(conn)
    pruned = {"dropped": dropped} if args.action == "prune" else {}
    if args.action == "audit":
        pruned = {"revoked": judgement.revoked, "reinstated": judgement.reinstated}
    payload = {
        "versions": [
            {"version": v.version, "ruleset": v.ruleset, "model": v.model_id, "rows": v.rows, "metrics": v.metrics,
             "live": v.live, "status": v.status, "sources": v.sources, "revoked_reason": v.revoked_reason}
            for v in listed
        ],
        **pruned,
    }
    # Why a version is revoked is told here, to the operator, and never to a search's caller.
    text = "\n".join(
        f"{'*' if v.live else ' '} {v.version:<6} {v.status:<9} {v.rows or 0:>8,} rows  {v.model_id}  {v.ruleset}"
        + _metrics_line(v.metrics) + (f"\n           revoked: {v.revoked_reason}" if v.revoked_reason else "")
        for v in listed
    )
    print_payload(args, payload, text or "no index versions yet")
    return 0


def _metrics_line(metrics: dict) -> str:
    """A version's stored scores and gate verdict, indented under its line."""
    parts = []
    for name, overall in (metrics or {}).get("evaluation", {}).get("query_sets", {}).items():
        scores = ", ".join(f"{m} {overall[m]:.3f}" for m in ("recall@20", "mrr", "budget_recall@1000")
                           if overall.get(m) is not None)
        parts.append(f"{name} (n={overall.get('n')}): {scores}")
    gate = (metrics or {}).get("gate")
    if gate:
        parts.append(f"gate vs {gate.get('against')}: {gate.get('decision')}")
    return "".join(f"\n           {p}" for p in parts)


def token(args) -> int:
    from lectio.index import security

    settings = load_settings()
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        signed = security.sign(conn, args.principal, args.seconds)
    print_payload(args, {"token": signed, "principals": args.principal, "seconds": args.seconds}, signed)
    return 0
