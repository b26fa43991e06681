"""`lectio model show | measure | train`: the embedding runtime this home chose and the evidence for
it, and the rerankers trained here; `measure` measures this machine again (on a quiet machine) and
says what a change means; `train` trains a reranker on the live index's training pairs."""

from __future__ import annotations

import json

from lectio.embedding import backends
from lectio.embedding.model import MODEL_NAME, release_of


def model_command(args) -> int:
    if args.action == "train":
        return train_command(args)
    before = backends.recorded(MODEL_NAME, release_of(MODEL_NAME))
    record = backends.measured(MODEL_NAME, release_of(MODEL_NAME), again=args.action == "measure")
    rerankers = trained_rerankers()
    if args.json:
        print(json.dumps(record | {"rerankers": rerankers}, indent=2, default=str))
        return 0
    print(describe(record))
    print(describe_rerankers(rerankers))
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


def trained_rerankers() -> list[dict]:
    from lectio.reranker.model import trained
    from lectio.settings import load_settings

    return trained(load_settings().home)


def describe_rerankers(records: list[dict]) -> str:
    if not records:
        return "rerankers: none trained (lectio model train)"
    lines = ["rerankers (newest first):"]
    for r in records:
        best = r.get("best") or {}
        lines.append(f"  {r['id']}: {r['recipe']['layers']} layers, {r['recipe']['steps']} steps on {r['train_pairs']:,} "
                     f"pairs (pairs {r['pairs']}, seed {r['seed']}, {r['precision']}); validation MRR "
                     f"{best.get('mrr', '-')} at step {best.get('step', '-')}; {r['seconds']:.0f} s on {r['cpu']}")
    return "\n".join(lines)


def train_command(args) -> int:
    from tqdm import tqdm

    from lectio.index import schema
    from lectio.index.database import ensure_database
    from lectio.settings import load_settings
    from lectio.training.pairs import summary as pairs_summary
    from lectio.training import workflow

    settings = load_settings()
    recipe = workflow.recipe(args.steps, args.layers)
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        made, path, new = workflow.pairs_for(conn, settings.home, settings.sources_file, args.index)
    summary = pairs_summary(made)
    if not args.json:
        print(f"training pairs {'made' if new else 'read back'}: {path} ({summary['by_origin']}, {summary['by_split']})")
    with tqdm(total=recipe.steps, desc="training the reranker", unit="step", disable=args.json) as bar:
        record = workflow.train(made, settings.home, recipe,
                                lambda step, total, loss: (bar.update(1), bar.set_postfix(loss=f"{loss:.3f}")))
    if args.json:
        print(json.dumps(record | {"pairs_summary": summary}, indent=2, default=str))
        return 0
    print(describe_rerankers([record]) + (" (already trained: reused)" if record.get("reused") else ""))
    print(f"use it: lectio search QUERY --set stages.rerank.model={record['id']}")
    return 0
