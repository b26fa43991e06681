"""Assets that learn from the corpus: the training pairs the live index's structure gives, and the
reranker and the adapted embedder trained on them. Outside the ingest and index jobs: the nightly schedule never retrains,
and materialising them again with nothing changed reads the pairs back and finds the model by its
id instead of training it again."""

import base64

from dagster import AssetExecutionContext, Config, MetadataValue, asset

from lectio.training import trainer, workflow
from lectio.training.pairs import summary
from assets.names import EMBED_POOL
from assets.source_assets import OWNERS
from resources import CorpusResource, DatabaseResource


class TrainingConfig(Config):
    # Left at None: the recipe's own (lectio.training.trainer.Recipe); fewer steps for a quick try.
    steps: int | None = None
    layers: int | None = None


class AdaptConfig(Config):
    # Left at None: the recipe's own (lectio.training.embedder.Recipe); fewer steps for a quick try.
    steps: int | None = None


def build_training_assets() -> list:
    @asset(deps=["search_index"], group_name="training", pool=EMBED_POOL, kinds={"python"}, owners=OWNERS)
    def training_pairs(context: AssetExecutionContext, corpus: CorpusResource, database: DatabaseResource) -> dict:
        """Queries and their passages from the corpus's own structure (commentary entries and pericope titles → their
        verses, with hard negatives the vector retriever ranks close), mined from the live index. Never from Nave's, the
        Westminster Standards, any evaluation query or private text. Made again only when the live index's content
        changes."""
        with database.connect() as conn:
            made, path, new = workflow.pairs_for(conn, database.home_path(), corpus.sources_path)
        found = summary(made)
        context.add_output_metadata({
            "pairs": found["pairs"], "made now": new, "file": str(path),
            "by origin": MetadataValue.json(found["by_origin"]), "by split": MetadataValue.json(found["by_split"]),
            "examples": MetadataValue.json(found["examples"])})
        return {"file": str(path), **found}

    @asset(group_name="training", pool=EMBED_POOL, kinds={"pytorch"}, owners=OWNERS)
    def reranker(context: AssetExecutionContext, config: TrainingConfig, database: DatabaseResource,
                 training_pairs: dict) -> dict:
        """A cross-encoder trained from MiniLM's first layers on the training pairs, kept at its best validation MRR
        (books held out of training), stored in the home under its id (base, layers, pairs, recipe, seed). Search uses
        it where `stages.rerank.model` names it."""
        from lectio.training.pairs import read

        record = workflow.train(read(training_pairs["file"]), database.home_path(), workflow.recipe(config.steps, config.layers),
                                lambda step, total, loss: step % 50 == 0 and context.log.info(
                                    f"step {step}/{total}: loss {loss:.3f}"))
        best = record.get("best") or {}
        png = base64.b64encode(trainer.loss_curve_png(record)).decode()
        context.add_output_metadata({
            "model": record["id"], "reused": bool(record.get("reused")), "pairs fingerprint": record["pairs"],
            "validation mrr": float(best.get("mrr", 0.0)), "validation accuracy": float(best.get("accuracy", 0.0)),
            "best step": int(best.get("step", 0)), "seconds": float(record["seconds"]), "cpu": record["cpu"],
            "loss curve": MetadataValue.md(f"![loss curve](data:image/png;base64,{png})")})
        return record

    @asset(group_name="training", pool=EMBED_POOL, kinds={"pytorch", "onnx"}, owners=OWNERS)
    def adapted_embedder(context: AssetExecutionContext, config: AdaptConfig, database: DatabaseResource,
                         training_pairs: dict) -> dict:
        """The embedding model fine-tuned on the training pairs (in-batch and mined negatives, passages that may be right
        masked out), kept at its best validation MRR (books held out of training), stored in the home under its id (base,
        pairs, recipe, seed) and exported to ONNX. Moving the index to it is a migration: `lectio migrate --embedder`, or
        the migrate_index job with LECTIO_EMBED_MODEL naming it; the gate decides."""
        from lectio.training.pairs import read

        record = workflow.adapt(read(training_pairs["file"]), database.home_path(), workflow.adapt_recipe(config.steps),
                                lambda step, total, loss: step % 50 == 0 and context.log.info(
                                    f"step {step}/{total}: loss {loss:.3f}"))
        best, untrained = record.get("best") or {}, record.get("untrained") or {}
        png = base64.b64encode(trainer.loss_curve_png(record)).decode()
        context.add_output_metadata({
            "model": record["id"], "reused": bool(record.get("reused")), "pairs fingerprint": record["pairs"],
            "validation mrr": float(best.get("mrr", 0.0)), "validation mrr untrained": float(untrained.get("mrr", 0.0)),
            "validation recall@10": float(best.get("recall@10", 0.0)), "best step": int(best.get("step", 0)),
            "seconds": float(record["seconds"]), "cpu": record["cpu"],
            "loss curve": MetadataValue.md(f"![loss curve](data:image/png;base64,{png})")})
        return record

    return [training_pairs, reranker, adapted_embedder]
