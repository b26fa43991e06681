"""Assets that learn from the corpus: the training pairs the live index's structure gives, and the
reranker and the adapted embedder trained on them. Outside the ingest and index jobs (the nightly
schedule never retrains), and refused in any run or backfill that also takes another group's
assets, as the landing lineage's Materialize all does. Materialising them again with nothing
changed reads the pairs back and finds the model by its id instead of training it again.

Unpartitioned, so declared once, here; their group, TRAINING_GROUP, is given as the module is
loaded (assets/__init__.py)."""

import base64

from dagster import AssetExecutionContext, Config, MetadataValue, asset

from lectio.index import versions
from lectio.training import workflow
from lectio.training.loop import loss_curve_png
from lectio.training.pairs import summary
from assets.names import EMBED_POOL
from assets.outcomes import refuse
from assets.source_assets import OWNERS
from resources import CorpusResource, DatabaseResource


TRAINING_GROUP = "training"
TRAINING_ASSETS = ("training_pairs", "reranker", "adapted_embedder")


def incidental_training(selected: set[str], name: str) -> str | None:
    """Why a run that trains `name` among assets of other groups (`selected`: the run's assets, or
    its backfill's) is refused, in one line, or None. The landing lineage's *Materialize all* takes
    every group, so one click meant to rebuild the index also trained a reranker and fine-tuned the
    embedder (minutes to hours of CPU, and a model nobody asked for)."""
    others = sorted(selected - set(TRAINING_ASSETS))
    if not others:
        return None
    named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return (f"refused: training is a deliberate act, and this run materializes {name} with {named} outside the "
            f"{TRAINING_GROUP} group; materialize the {TRAINING_GROUP} group on its own (its assets "
            f"{', '.join(TRAINING_ASSETS)}, or one of them)")


def _refuse_incidental_training(context: AssetExecutionContext, name: str) -> None:
    """Fails the step before anything trains when its run, or the backfill that launched it (the
    UI's *Materialize all* over partitioned and unpartitioned assets is a backfill, whose runs each
    hold part of its selection), takes assets outside the training group."""
    selected = set(context.job_def.asset_layer.selected_asset_keys)
    if backfill_id := context.run.tags.get("dagster/backfill"):
        backfill = context.instance.get_backfill(backfill_id)
        selected |= set(backfill.asset_selection or ()) if backfill is not None else set()
    if problem := incidental_training({key.to_user_string() for key in selected}, name):
        refuse(context, problem, f"materialize the {TRAINING_GROUP} group on its own")


class TrainingConfig(Config):
    # Left at None: the recipe's own (lectio.training.reranker.trainer.Recipe); fewer steps for a quick try.
    steps: int | None = None
    layers: int | None = None
    # As `lectio model train`: the trained reranker goes through the gate, which lets it into the
    # live version's searches or refuses it. False trains only (`--no-gate`): nothing searches
    # with it until `lectio model use ID` gates it.
    gate: bool = True


class AdaptConfig(Config):
    # Left at None: the recipe's own (lectio.training.embedder.adaptation.Recipe); fewer steps for a quick try.
    steps: int | None = None


@asset(deps=["search_index"], pool=EMBED_POOL, kinds={"python"}, owners=OWNERS)
def training_pairs(context: AssetExecutionContext, corpus: CorpusResource, database: DatabaseResource) -> dict:
    """Queries and their passages from the corpus's own structure (commentary entries and pericope titles → their
    verses, with hard negatives the vector retriever ranks close), mined from the live index. Never from Nave's, the
    Westminster Standards, any evaluation query or private text. Made again only when the live index's content
    changes; `mined from` names the version read."""
    _refuse_incidental_training(context, "training_pairs")
    with database.connect() as conn:
        mined = versions.live_version(conn)  # search_index's output is whatever version is live
        made, path, new = workflow.pairs_for(conn, database.home_path(), corpus.sources_path, mined)
    found = summary(made)
    context.add_output_metadata({
        "pairs": found["pairs"], "made now": new, "file": str(path), "mined from": mined or "none",
        "by origin": MetadataValue.json(found["by_origin"]), "by split": MetadataValue.json(found["by_split"]),
        "examples": MetadataValue.json(found["examples"])})
    return {"file": str(path), **found}


@asset(pool=EMBED_POOL, kinds={"pytorch"}, owners=OWNERS)
def reranker(context: AssetExecutionContext, config: TrainingConfig, database: DatabaseResource,
             training_pairs: dict) -> dict:
    """A cross-encoder trained from MiniLM's first layers on the training pairs, kept at its best validation MRR
    (books held out of training), stored in the home under its id (base, layers, pairs, recipe, seed), then gated as
    `lectio model train` gates it: the live version's searches read it only if the query sets' dev parts say it is
    no worse and better somewhere (config `gate: false` trains only)."""
    from lectio.training.pairs import read

    _refuse_incidental_training(context, "reranker")
    record = workflow.train(read(training_pairs["file"]), database.home_path(), workflow.recipe(config.steps, config.layers),
                            lambda step, total, loss: step % 50 == 0 and context.log.info(
                                f"step {step}/{total}: loss {loss:.3f}"))
    best = record.get("best") or {}
    png = base64.b64encode(loss_curve_png(record)).decode()
    metadata = {
        "model": record["id"], "reused": bool(record.get("reused")), "pairs fingerprint": record["pairs"],
        "validation mrr": float(best.get("mrr", 0.0)), "validation accuracy": float(best.get("accuracy", 0.0)),
        "best step": int(best.get("step", 0)), "seconds": float(record["seconds"]), "cpu": record["cpu"],
        "loss curve": MetadataValue.md(f"![loss curve](data:image/png;base64,{png})")}
    if config.gate:
        with database.connect() as conn:
            verdict = workflow.gate_reranker(conn, database.home_path(), record["id"])
        context.log.info(f"gate: {verdict.decision}: {verdict.reason}")
        metadata |= {"gate": f"{verdict.decision}: {verdict.reason}",
                     "searched with": verdict.candidate if verdict.decision == "switch" else (verdict.before or "none")}
    context.add_output_metadata(metadata)
    return record


@asset(pool=EMBED_POOL, kinds={"pytorch", "onnx"}, owners=OWNERS)
def adapted_embedder(context: AssetExecutionContext, config: AdaptConfig, database: DatabaseResource,
                     training_pairs: dict) -> dict:
    """The embedding model fine-tuned on the training pairs (in-batch and mined negatives, passages that may be right
    masked out), kept at its best validation MRR (books held out of training), stored in the home under its id (base,
    pairs, recipe, seed) and exported to ONNX. Moving the index to it is a migration: `lectio migrate --embedder`, or
    a backfill of the ingest_source job over every partition with the run tag lectio/embed_model set to its id (this
    asset's `model`), after which index_after_batch asks migrate_index with that tag; the gate decides."""
    from lectio.training.pairs import read

    _refuse_incidental_training(context, "adapted_embedder")
    record = workflow.adapt(read(training_pairs["file"]), database.home_path(), workflow.adapt_recipe(config.steps),
                            lambda step, total, loss: step % 50 == 0 and context.log.info(
                                f"step {step}/{total}: loss {loss:.3f}"))
    best, untrained = record.get("best") or {}, record.get("untrained") or {}
    png = base64.b64encode(loss_curve_png(record)).decode()
    context.add_output_metadata({
        "model": record["id"], "reused": bool(record.get("reused")), "pairs fingerprint": record["pairs"],
        "validation mrr": float(best.get("mrr", 0.0)), "validation mrr untrained": float(untrained.get("mrr", 0.0)),
        "validation recall@10": float(best.get("recall@10", 0.0)), "best step": int(best.get("step", 0)),
        "seconds": float(record["seconds"]), "cpu": record["cpu"],
        "loss curve": MetadataValue.md(f"![loss curve](data:image/png;base64,{png})")})
    return record
