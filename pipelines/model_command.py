"""`lectio model show | measure`: the embedding runtime this home chose and the evidence for it;
`measure` measures this machine again (on a quiet machine) and says what a change means."""

from __future__ import annotations

import json

from lectio.embedding import backends
from lectio.embedding.model import MODEL_NAME, release_of


def model_command(args) -> int:
    before = backends.recorded(MODEL_NAME, release_of(MODEL_NAME))
    record = backends.measured(MODEL_NAME, release_of(MODEL_NAME), again=args.action == "measure")
    if args.json:
        print(json.dumps(record, indent=2, default=str))
        return 0
    print(describe(record))
    if before and (before["backend"], before.get("precision", "fp32")) != (record["backend"], record["precision"]):
        print(f"the new choice gives other vectors than the {before['backend']}/{before.get('precision', 'fp32')} "
              "this home's index was built with: `lectio migrate` builds it beside the live one and gates it")
    return 0


def describe(record: dict) -> str:
    machine = record["machine"]
    lines = [f"{machine['cpu']}, {machine['cores']} cores (onnxruntime {machine['onnxruntime']}, torch {machine['torch']})",
             f"ingest: {record['backend']}/{record.get('precision', 'fp32')}; queries: "
             f"{'/'.join(backends.query_runtime_of(record) or (record['backend'], record.get('precision', 'fp32')))}; "
             f"measured {record.get('measured_at', '?')} on {record.get('texts', '?')} texts, "
             f"{'a quiet machine' if record.get('quiet', True) else 'a machine that was not quiet'}"]
    query = record.get("query") or {}
    if query.get("backend") == "onnx":
        # A record from before the query session was measured has no threads: it runs one.
        lines.append(f"  query session: {query.get('threads', 1)} intra-op thread(s)"
                     f"{', spinning within a run' if query.get('spin') else ''}")
    for name, found in (record.get("candidates") or {}).items():
        if "reason" in found:
            lines.append(f"  {name}: cannot run here ({found['reason']})")
            continue
        same = found["equivalence"]
        speed = (f"{found['texts_per_second']} texts/s (spread {found['spread']:.0%}), query p50 "
                 f"{found['query_ms']['p50']} / p95 {found['query_ms']['p95']} ms; " if "seconds" in found else "")
        lines.append(f"  {name}: {speed}{same['relation']} (min cosine {same['min_cosine']}, "
                     f"10-neighbour overlap {same['neighbour_overlap']:.1%})")
    return "\n".join(lines)
