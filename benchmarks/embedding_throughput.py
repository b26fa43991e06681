"""Embedding throughput of lectio's embedding stage against the bare model, same texts, same run.

Baseline: `SentenceTransformer.encode` on the chunk texts (batch 64), which silently truncates
anything past 256 word pieces, in the best of the numerics this CPU offers (fp32, bf16 autocast,
int8 dynamic quantization; each timed, with its mean cosine to fp32 so a fast but distorting one
is seen for what it is). The fastest of fp32 and bf16 is the baseline, and int8 only when
LECTIO_EMBED_PRECISION chose it: lectio does not use int8 otherwise (cosine 0.93 to fp32).
A second baseline sees what lectio's model sees: the bare model, in the same numerics, on the
same texts with every text over 256 word pieces cut into the windows lectio embeds (cut before
the clock starts). The first ratio prices lectio's whole stage, the extra windows included; the
second prices only what lectio adds around the model (counting, the cache, the writes).
lectio cold: `embed_chunks` into an empty cache (windows for long texts, database writes).
lectio warm: the same call again, every text already cached, which is what a nightly re-embed
of an unchanged corpus does.

    LECTIO_HOME=/tmp/bench python benchmarks/embedding_throughput.py [--select "Romans; Psalms 1-40"]

Prints chunks/s for each and the ratios to the baseline, each the best of `--rounds` timings
taken in turn (the seconds of every round are printed too). Run on a quiet machine; the ratio
is the claim, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from lectio.rulesets import scripture
from lectio.index import store
from lectio.rulesets.chunk import chunks_frame
from lectio.index.database import ensure_database
from lectio.embedding import numerics
from lectio.embedding.cache import embed_chunks
from lectio.embedding.model import Embedder, _sentence_transformer, count_tokens, split_into_windows, MAX_TEXT_TOKENS
from lectio.settings import load_settings
from lectio.sources import Source


def corpus(select: str, settings):
    source = Source(id="web", kind="scripture", format="sword-bible", acl=("public",), module="engWEB2015eb",
                    select=select, metadata={"translation": "WEB"})
    return chunks_frame(scripture.chunk(source, scripture.parse(source, scripture.read(source, settings.corpus_dir))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--select", default="Romans; Psalms 1-40; John")
    parser.add_argument("--rounds", type=int, default=3,
                        help="the baselines and lectio cold, timed in turn this many times; the best of each counts")
    args = parser.parse_args()
    settings = load_settings()
    chunks = corpus(args.select, settings)
    texts = chunks["text"].tolist()
    long = sum(n > MAX_TEXT_TOKENS for n in count_tokens(texts))
    model = _sentence_transformer()
    model.encode(texts[:64])  # warm up both paths' kernels
    bare = bare_model(model, texts)
    # int8 moves vectors too far to be used unless chosen; a baseline lectio may not use is no bar.
    usable = [name for name in bare if name != "int8" or numerics.precision() == "int8"]
    best = min(usable, key=lambda name: bare[name]["seconds"])
    windows = [w for text, n in zip(texts, count_tokens(texts))
               for w in ([text] if n <= MAX_TEXT_TOKENS else split_into_windows(text))]

    # A shared machine's speed drifts by a fifth within minutes: the three are timed in turn,
    # round after round, each going first in its own round, and each keeps its best.
    baselines, same_inputs, colds = [], [], []
    with ensure_database(settings).connect() as conn:
        store.ensure_schema(conn)
        embedder = Embedder()

        def lectio_cold() -> float:
            conn.execute("DELETE FROM embedding_cache WHERE content_hash = ANY(%s)", (chunks["content_hash"].tolist(),))
            t0 = time.perf_counter()
            embed_chunks(conn, chunks, embedder)
            return time.perf_counter() - t0

        timings = [(baselines, lambda: bare_model(model, texts, [best])[best]["seconds"]),
                   (same_inputs, lambda: bare_model(model, windows, [best])[best]["seconds"]),
                   (colds, lectio_cold)]
        for round_ in range(args.rounds):
            turn = round_ % len(timings)
            for seconds, timed in timings[turn:] + timings[:turn]:
                seconds.append(timed())
        baseline, same_input, cold = min(baselines), min(same_inputs), min(colds)
        cold_embedded = len(chunks["content_hash"].unique())
        t0 = time.perf_counter()
        warm_stats = embed_chunks(conn, chunks, embedder)
        warm = time.perf_counter() - t0

    n = len(texts)
    report = {
        "chunks": n,
        "over_model_limit": long,
        "precision": numerics.precision(),
        "bare_model": {name: {"chunks_per_s": round(n / r["seconds"], 1), "cosine_to_fp32": r["cosine"]}
                       for name, r in bare.items()},
        "baseline": best,
        "baseline_chunks_per_s": round(n / baseline, 1),
        "lectio_cold_chunks_per_s": round(n / cold, 1),
        "lectio_warm_chunks_per_s": round(n / warm, 1),
        "cold_vs_baseline": round(baseline / cold, 3),
        "windows": len(windows),
        "baseline_same_inputs_chunks_per_s": round(n / same_input, 1),
        "cold_vs_same_inputs": round(same_input / cold, 3),
        "rounds": args.rounds,
        "seconds_each_round": {"baseline": [round(t, 2) for t in baselines],
                               "same_inputs": [round(t, 2) for t in same_inputs],
                               "lectio_cold": [round(t, 2) for t in colds]},
        "warm_vs_baseline": round(baseline / warm, 1),
        "cold_embedded": cold_embedded,
        "warm_embedded": warm_stats.embedded,
    }
    print(json.dumps(report, indent=2))


def bare_model(model, texts: list[str], precisions: list[str] | None = None) -> dict[str, dict]:
    """Seconds and mean cosine to the first of the bare model in each precision the CPU offers
    (fp32 first), or in `precisions`."""
    results, reference = {}, None
    for name in precisions or numerics.offered(numerics.cpu_flags()):
        prepared = numerics.prepare(model, name)
        with torch.inference_mode(), numerics.autocast(name):
            prepared.encode(texts[:64], batch_size=64, show_progress_bar=False)
            t0 = time.perf_counter()
            vectors = prepared.encode(texts, batch_size=64, show_progress_bar=False, normalize_embeddings=True)
            seconds = time.perf_counter() - t0
        reference = vectors if reference is None else reference
        results[name] = {"seconds": seconds, "cosine": round(float(np.mean(np.sum(vectors * reference, axis=1))), 5)}
    return results


if __name__ == "__main__":
    main()
