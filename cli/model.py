"""`lectio model show | measure | train`: the embedding runtime this home chose and the evidence for
it, and the rerankers trained here; `measure` measures this machine again and
says what a change means; `train` trains a reranker on the live index's training pairs."""

from __future__ import annotations

import argparse
import json

from lectio.embedding import runtime_choice, runtime_record
from lectio.embedding.model import MODEL_NAME, release_of


def model_options(model: argparse.ArgumentParser) -> None:
    model.add_argument("action", choices=["show", "measure", "train", "use", "adapt", "rank"],
                       help="measure: measure this machine again; train: train a reranker on the index's training "
                            "pairs, then gate it; use: gate a trained reranker (or 'none') for this home's searches; "
                            "adapt: fine-tune the embedding model on the same pairs (`lectio migrate --embedder` "
                            "moves the index to it); rank: train the learned ranker on the query sets' dev parts, "
                            "cross-validated by query (`--set stages.learned_rank.model=ID` searches with it)")
    model.add_argument("reranker", nargs="?", help="use: a trained reranker's id, 'latest', or 'none'")
    model.add_argument("--queries", nargs="+", help="train, use: the query sets the gate scores (default: every set "
                       "under data/queries)")
    model.add_argument("--part", choices=["dev", "test", "all"], default="dev",
                       help="train, use: the part of each set the gate scores (default dev: defaults are chosen on it)")
    model.add_argument("--force", action="store_true", help="use: switch even if the gate refuses")
    model.add_argument("--no-gate", action="store_true", help="train, rank: train only; `lectio model use` gates later")
    model.add_argument("--index", help="train: the index version whose corpus makes the pairs (default: the live one)")
    model.add_argument("--steps", type=int, help="train, adapt: training steps (default 600; adapt 400)")
    model.add_argument("--layers", type=int, help="train: MiniLM layers the reranker keeps (default 3)")
    model.add_argument("--depth", type=int, default=100, help="rank: the first fused hits it orders again (default 100)")
    model.add_argument("--limit", type=int, help="rank: at most this many dev queries of each set (default: all)")
    model.add_argument("--ranker", action="store_true",
                       help="use: 'latest' or 'none' of the learned ranker (a ranker's own id says so itself)")


def model_command(args) -> int:
    if args.action == "train":
        return train_command(args)
    if args.action == "use":
        return use_command(args)
    if args.action == "adapt":
        return adapt_command(args)
    if args.action == "rank":
        return rank_command(args)
    before = runtime_record.recorded(MODEL_NAME, release_of(MODEL_NAME))
    # Showing only reads: a home with no record, or one that does not parse, is said so, not
    # measured (a measurement takes minutes; `measure` and the next run that needs one do it).
    record = before if args.action == "show" else runtime_choice.measured(MODEL_NAME, release_of(MODEL_NAME),
                                                                          again=True)
    chosen = _live_choices()
    rerankers, embedders, rankers = trained_rerankers(), adapted_embedders(), trained_rankers(chosen)
    if args.json:
        shown = record or {"recorded": None, "why": _unrecorded()}
        print(json.dumps(shown | {"rerankers": rerankers, "adapted_embedders": embedders, "rankers": rankers},
                         indent=2, default=str))
        return 0
    print(describe(record) if record else _unrecorded())
    print(describe_rerankers(rerankers))
    print(describe_rankers(rankers))
    for line in _chosen_in_the_home(chosen):
        print(line)
    print(describe_embedders(embedders))
    if before and (before["backend"], before.get("precision", "fp32")) != (record["backend"], record["precision"]):
        print(f"the new choice gives other vectors than the {before['backend']}/{before.get('precision', 'fp32')} "
              "this home's index was built with: `lectio migrate` builds it beside the live one and gates it")
    return 0


def _unrecorded() -> str:
    """Why there is no runtime to show, in one line: no record yet, or one that does not parse."""
    path = runtime_record.record_file(MODEL_NAME, release_of(MODEL_NAME))
    state = "does not parse as a runtime record and is ignored" if path.exists() else "is not there yet"
    return (f"embedding runtime: {path} {state}; the next run that needs it measures "
            "(or `lectio model measure` now)")


def describe(record: dict) -> str:
    machine = record["machine"]
    # Another machine's record may name less of it: shown as far as it goes.
    lines = [f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores (onnxruntime {machine.get('onnxruntime', '?')}, "
             f"torch {machine.get('torch', '?')})",
             f"ingest: {record['backend']}/{record.get('precision', 'fp32')}; queries: "
             f"{'/'.join(runtime_choice.query_runtime_of(record) or (record['backend'], record.get('precision', 'fp32')))}; "
             + ("" if record.get("provisional") else
                f"measured {record.get('measured_at', '?')} on {record.get('texts', '?')} texts, ")
             + runtime_record.rounds_told(record)
             + ("; the first run whose sources reach it measures, as does `lectio model measure`"
                if record.get("provisional") else "")]
    query = record.get("query") or {}
    if query.get("backend") == "onnx":
        # A record from before the query session was measured has no threads: it runs one.
        lines.append(f"  query session: {query.get('threads', 1)} intra-op thread(s)"
                     f"{', spinning within a run' if query.get('spin') else ''}")
    for name, found in (record.get("candidates") or {}).items():
        if "reason" in found:
            lines.append(f"  {name}: cannot run here ({found['reason']})")
            continue
        same = found.get("equivalence")
        if same is None:  # recorded before its vectors were compared
            lines.append(f"  {name}: not compared with torch fp32")
            continue
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


def trained_rankers(chosen: dict[str, str]) -> list[dict]:
    """The learned rankers trained in this home, each marked whether the live version's searches
    read it (`chosen`, its record's rankers)."""
    from lectio.ranker.model import REGISTRY
    from lectio.settings import load_settings
    from lectio.training.ranker.gate import RANKER

    active = chosen.get(RANKER.setting)
    return [record | {"active": record.get("id") == active} for record in REGISTRY.trained(load_settings().home)]


def _live_choices() -> dict[str, str]:
    """The trained models the live version's searches read ({} before there is one). A home with
    no database yet has none, and showing does not create one."""
    from lectio.index import schema, versions
    from lectio.index.database import ensure_database
    from lectio.settings import load_settings

    settings = load_settings()
    if not settings.database_url and not (settings.home / "pgdata").is_dir():
        return {}
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        live = versions.get_version(conn, None)
    return live.rankers if live else {}


def _chosen_in_the_home(chosen: dict[str, str]) -> list[str]:
    """A line for each model a home's file still names from before the choice moved onto the
    index versions, where the live version reads another: nothing searches with it until gated."""
    from lectio.settings import load_settings
    from lectio.training.ranker.gate import RANKER
    from lectio.training.reranker.gate import RERANKER

    home, lines = load_settings().home, []
    for registry, setting in ((wing.registry, wing.setting) for wing in (RERANKER, RANKER)):
        named = registry.chosen_in_the_home(home)
        if named and chosen.get(setting) != named:
            lines.append(f"{named} was chosen in {registry.models_dir(home)}/ACTIVE.json, which searches no longer "
                         f"read (the live version holds its {registry.what}): `lectio model use {named}` gates it again")
    return lines


def describe_rankers(records: list[dict]) -> str:
    if not records:
        return "learned rankers: none trained (lectio model rank)"
    lines = ["learned rankers (newest first; * the one the gate let in):"]
    for r in records:
        judged = r.get("cross_validated") or {}
        lines.append(f"{'*' if r.get('active') else ' '} {r.get('id')}: {r.get('queries')} dev queries of "
                     f"{', '.join(r.get('query_sets') or {})}; out of fold: {judged.get('decision', '-')}, "
                     f"{judged.get('reason', 'not cross-validated')}")
    return "\n".join(lines)


def adapted_embedders() -> list[dict]:
    from lectio.settings import load_settings
    from lectio.training.embedder.registry import trained

    return trained(load_settings().home)


def describe_embedders(records: list[dict]) -> str:
    if not records:
        return "adapted embedders: none (lectio model adapt)"
    lines = ["adapted embedders (newest first):"]
    for r in records:
        best, untrained = r.get("best") or {}, r.get("untrained") or {}
        lines.append(f"  {r['id']}: from {r['base']}, {r['recipe']['steps']} steps on {r['train_pairs']:,} pairs "
                     f"(pairs {r['pairs']}, seed {r['seed']}, {r['precision']}); validation MRR {untrained.get('mrr', '-')} "
                     f"untrained -> {best.get('mrr', '-')} at step {best.get('step', '-')}; {r['seconds']:.0f} s on {r['cpu']}")
    return "\n".join(lines)


def adapt_command(args) -> int:
    """Fine-tune the embedding model on the live index's training pairs; moving the index to it is
    a migration, gated like any other."""
    from tqdm import tqdm

    from lectio.index import schema
    from lectio.index.database import ensure_database
    from lectio.settings import load_settings
    from lectio.training import workflow

    settings = load_settings()
    recipe = workflow.adapt_recipe(args.steps)
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        made, path, new = workflow.pairs_for(conn, settings.home, settings.sources_file, args.index)
    if not args.json:
        print(f"training pairs {'made' if new else 'read back'}: {path}")
    with tqdm(total=recipe.steps, desc="adapting the embedder", unit="step", disable=args.json) as bar:
        record = workflow.adapt(made, settings.home, recipe,
                                lambda step, total, loss: (bar.update(1), bar.set_postfix(loss=f"{loss:.3f}")))
    _print(args, record, describe_embedders([record]) + (" (already adapted: reused)" if record.get("reused") else "")
           + f"\nmove the index to it, gated: lectio migrate --embedder {record['id']}")
    return 0


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
    if not args.json:
        print(describe_rerankers([record]) + (" (already trained: reused)" if record.get("reused") else ""))
    if args.no_gate:
        _print(args, record | {"pairs_summary": summary}, f"gate it: lectio model use {record['id']}")
        return 0
    args.reranker = record["id"]
    return use_command(args, {"trained": record, "pairs_summary": summary})


def rank_command(args) -> int:
    """Train the learned ranker on the dev parts of the query sets, cross-validated by query."""
    from tqdm import tqdm

    from lectio.evaluation.migration_gate import load_query_sets
    from lectio.evaluation.querysets import select_part
    from lectio.index import schema, versions
    from lectio.index.database import ensure_database
    from lectio.retrieval import setting_problem
    from lectio.settings import load_settings
    from lectio.training.guard import QUERY_SETS
    from lectio.training.ranker import trainer

    if args.part != "dev":
        raise ValueError("rank learns from the dev parts only: the test parts are what report it")
    if problem := setting_problem("stages.learned_rank.depth", "int", args.depth, "--depth") or (
            args.limit is not None and setting_problem("k", "int", args.limit, "--limit")):
        raise ValueError(problem)
    settings = load_settings()
    sets = load_query_sets(args.queries or [path for path in sorted(QUERY_SETS.glob("*.jsonl"))
                                             if path.stem not in trainer.NOT_LEARNED_FROM])
    sets = {name: select_part(queries, "dev")[:args.limit] for name, queries in sets.items()}
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        live = versions.live_version(conn)
        with tqdm(total=sum(map(len, sets.values())), desc="recording the dev queries' pages", unit="query",
                  disable=args.json) as bar:
            pages = trainer.record(conn, sets, args.depth, progress=bar.update)
        about = {"query_sets": {name: len(queries) for name, queries in sets.items()}, "part": "dev",
                 "depth": args.depth, "index_version": live}
        trained = trainer.train(settings.home, pages, about, unseen=_unseen(conn, args))
    if args.no_gate:
        _print(args, trained, describe_ranker(trained) + f"\ngate it: lectio model use {trained['id']}")
        return 0
    args.reranker = trained["id"]
    return use_command(args, {"trained": trained}, describe_ranker(trained) + "\n")


def _unseen(conn, args):
    """The dev parts of the project's sets the ranker does not learn from (a query of 30 words or
    more reads the paragraph settings), scored as searched without and with it: out of its
    sample whole, so the gate sees what it does to the shapes it never learned."""
    from lectio.evaluation.metrics import evaluate_index
    from lectio.evaluation.migration_gate import load_query_sets
    from lectio.evaluation.querysets import select_part
    from lectio.retrieval import SearchConfig
    from lectio.training.guard import QUERY_SETS
    from lectio.training.ranker import trainer

    if args.queries:
        return None
    sets = load_query_sets([QUERY_SETS / f"{name}.jsonl" for name in trainer.NOT_LEARNED_FROM])
    sets = {name: select_part(queries, "dev")[:args.limit] for name, queries in sets.items()}

    def scored(model_id: str) -> tuple[dict, dict]:
        configs = [SearchConfig().with_settings({"stages.learned_rank.model": model}) for model in ("", model_id)]
        return tuple({name: evaluate_index(conn, queries, config=config) for name, queries in sets.items()}
                     for config in configs)

    return scored


def describe_ranker(record: dict) -> str:
    lines = [f"ranker {record['id']}: {record['queries']} dev queries, {record['folds']}-fold cross-validated by "
             "query (fused order -> the trees' order, out of fold; 95 % paired interval):"]
    for name, rows in ((record.get("cross_validated") or {}).get("metrics") or {}).items():
        shown = ", ".join(f"{m} {row['live']} -> {row['candidate']} {row['ci95']}" for m, row in rows.items() if m != "n")
        lines.append(f"  {name} (n={rows['n']['live']}): {shown}")
    return "\n".join(lines)


def use_command(args, before: dict | None = None, said: str = "") -> int:
    """Gate a reranker or a learned ranker (its id says which; `--ranker` for 'latest' or 'none'
    of the learned ranker) for this home's searches; exit 1 when the gate refuses."""
    from lectio.index import schema
    from lectio.index.database import ensure_database
    from lectio.settings import load_settings
    from lectio.training import workflow
    from lectio.training.ranker.gate import gate_ranker

    if not args.reranker:
        raise ValueError("use needs a reranker: a trained id (lectio model show), 'latest' or 'none'")
    settings = load_settings()
    if args.ranker or args.reranker.startswith("trees-"):
        with ensure_database(settings).connect() as conn:
            schema.ensure_schema(conn)
            verdict = gate_ranker(conn, settings.home, None if args.reranker == "none" else args.reranker, args.force)
        return _verdict(args, before, said, verdict)
    sets = workflow.gate_sets(args.queries, args.part)
    candidate = None if args.reranker == "none" else args.reranker
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        verdict = workflow.gate_reranker(conn, settings.home, candidate, sets, force=args.force)
    return _verdict(args, before, said, verdict)


def _verdict(args, before: dict | None, said: str, verdict) -> int:
    text = f"{verdict.decision}: {verdict.candidate or 'none'} (was {verdict.before or 'none'}): {verdict.reason}"
    for name, rows in verdict.metrics.items():
        text += f"\n  {name}: " + ", ".join(f"{m} {rows[m]['live']} -> {rows[m]['candidate']}"
                                          for m in ("recall@20", "mrr", "ndcg@10", "budget_recall@1000"))
    _print(args, (before or {}) | {"gate": verdict.to_json()}, said + text)
    return 1 if verdict.decision == "refuse" else 0


def _print(args, payload: dict, text: str) -> None:
    print(json.dumps(payload, indent=2, default=str) if args.json else text)
