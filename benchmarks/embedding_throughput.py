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

The ONNX Runtime backend (lectio.embedding.onnx_runtime) is timed beside them, whatever backend
this machine chose: lectio cold with the ONNX embedder against the bare sentence-transformers
model in torch fp32 on the same texts (what a user would run; the bar is 1.3×), and against the
bare ONNX session on the same inputs (lectio's windows, tokenized by `tokenizers`, longest first
in batches of 64 on every core: the bar is 0.9×, what lectio adds around the session).

    LECTIO_HOME=/tmp/bench python benchmarks/embedding_throughput.py [--select "Romans; Psalms 1-40"]

Prints chunks/s for each and the ratios, each the best of `--rounds` timings taken in turn, every
variant going first in one round (the seconds of every round are printed too), and the CPU's
model. Run on a quiet machine; the ratio is the claim, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from dataclasses import replace

from lectio.rulesets import scripture
from lectio.index import schema
from lectio.rulesets.chunk import chunks_frame
from lectio.index.database import ensure_database
from lectio.embedding import numerics, onnx_runtime
from lectio.embedding.cache import embed_chunks
from lectio.embedding.model import (Embedder, _sentence_transformer, configured_model, count_tokens,
                                    split_into_windows, MAX_SEQ_TOKENS, MAX_TEXT_TOKENS)
from lectio.settings import load_settings
from lectio.sources import Source


def corpus(select: str, settings):
    source = Source(id="web", kind="scripture", format="sword-bible", acl=("public",), module="engWEB2015eb",
                    select=select, metadata={"translation": "WEB"})
    return chunks_frame(scripture.chunk(source, scripture.parse(source, scripture.read(source, settings.corpus_dir))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--select", default="Romans; Psalms 1-40; John")
    parser.add_argument("--rounds", type=int, default=0,
                        help="the variants timed in turn this many times, the best of each counting (default: "
                             "one round per variant, so that each goes first once)")
    args = parser.parse_args()
    settings = load_settings()
    chunks = corpus(args.select, settings)
    texts = chunks["text"].tolist()
    long = sum(n > MAX_TEXT_TOKENS for n in count_tokens(texts))
    model = _sentence_transformer()
    model.encode(texts[:64])  # warm up both paths' kernels
    bare = bare_model(model, texts)
    # int8 moves vectors too far to be used unless chosen; a baseline lectio may not use is no bar.
    usable = [name for name in bare if name != "int8" or numerics.requested() == "int8"]
    best = min(usable, key=lambda name: bare[name]["seconds"])
    windows = [w for text, n in zip(texts, count_tokens(texts))
               for w in ([text] if n <= MAX_TEXT_TOKENS else split_into_windows(text))]
    configured = configured_model()
    onnx_choice = replace(configured, backend="onnx", precision="fp32" if configured.precision == "bf16"
                          else configured.precision)
    session = bare_onnx(onnx_runtime.ensure_export(onnx_choice.name, onnx_choice.release, onnx_choice.precision))
    session(windows[:64])

    # A shared machine's speed drifts by a fifth within minutes: the variants are timed in turn,
    # round after round, each going first in its own round, and each keeps its best.
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        embedder = Embedder()
        onnx_embedder = embedder if configured == onnx_choice else Embedder(choice=onnx_choice)

        def cold(which: Embedder):
            def timed() -> float:
                conn.execute("DELETE FROM embedding_cache WHERE content_hash = ANY(%s) AND model_id = %s",
                             (chunks["content_hash"].tolist(), which.model_id))
                t0 = time.perf_counter()
                embed_chunks(conn, chunks, which)
                return time.perf_counter() - t0
            return timed

        def seconds_of(f, *a):
            def timed() -> float:
                t0 = time.perf_counter()
                f(*a)
                return time.perf_counter() - t0
            return timed

        variants = {"baseline": lambda: bare_model(model, texts, [best])[best]["seconds"],
                    "same_inputs": lambda: bare_model(model, windows, [best])[best]["seconds"],
                    "lectio_cold": cold(embedder)}
        if best != "fp32":
            variants["torch_fp32"] = lambda: bare_model(model, texts, ["fp32"])["fp32"]["seconds"]
        variants["onnx_session"] = seconds_of(session, windows)
        if onnx_embedder is not embedder:
            variants["lectio_onnx_cold"] = cold(onnx_embedder)
        onnx_embedder.encode(texts[:64])  # its sessions made before the clock
        names = list(variants)
        seconds: dict[str, list[float]] = {name: [] for name in names}
        for round_ in range(args.rounds or len(names)):
            turn = round_ % len(names)
            for name in names[turn:] + names[:turn]:
                seconds[name].append(variants[name]())
        fastest = {name: min(times) for name, times in seconds.items()}
        baseline, same_input, cold_s = fastest["baseline"], fastest["same_inputs"], fastest["lectio_cold"]
        torch_fp32 = fastest.get("torch_fp32", baseline)
        onnx_cold = fastest.get("lectio_onnx_cold", cold_s)
        cold_embedded = len(chunks["content_hash"].unique())
        t0 = time.perf_counter()
        warm_stats = embed_chunks(conn, chunks, embedder)
        warm = time.perf_counter() - t0

    n = len(texts)
    vs_torch, vs_session = torch_fp32 / onnx_cold, fastest["onnx_session"] / onnx_cold
    report = {
        "cpu": f"{numerics.cpu_model()}, {onnx_runtime.cores()} cores",
        "chunks": n,
        "over_model_limit": long,
        "precision": configured_model().precision,
        "backend": configured.backend,
        "model_id": configured.id,
        "bare_model": {name: {"chunks_per_s": round(n / r["seconds"], 1), "cosine_to_fp32": r["cosine"]}
                       for name, r in bare.items()},
        "baseline": best,
        "baseline_chunks_per_s": round(n / baseline, 1),
        "lectio_cold_chunks_per_s": round(n / cold_s, 1),
        "lectio_warm_chunks_per_s": round(n / warm, 1),
        "cold_vs_baseline": round(baseline / cold_s, 3),
        "cold_vs_bare_torch_fp32": round(torch_fp32 / cold_s, 3),
        # The runtime this home chose (lectio.embedding.runtime_choice) against the machine's best bare
        # numerics and against plain torch fp32.
        "bars": {"cold_vs_best_bare >= 0.9": baseline / cold_s >= 0.9,
                 "cold_vs_bare_torch_fp32 >= 1.3": torch_fp32 / cold_s >= 1.3},
        "windows": len(windows),
        "baseline_same_inputs_chunks_per_s": round(n / same_input, 1),
        "cold_vs_same_inputs": round(same_input / cold_s, 3),
        "onnx": {
            "model_id": onnx_choice.id,
            "lectio_onnx_cold_chunks_per_s": round(n / onnx_cold, 1),
            "bare_torch_fp32_chunks_per_s": round(n / torch_fp32, 1),
            "bare_onnx_session_chunks_per_s": round(n / fastest["onnx_session"], 1),
            "onnx_cold_vs_torch_fp32": round(vs_torch, 3),
            "onnx_cold_vs_onnx_session": round(vs_session, 3),
            "bars": {"vs_torch_fp32 >= 1.3": vs_torch >= 1.3, "vs_onnx_session >= 0.9": vs_session >= 0.9},
        },
        "rounds": len(seconds["baseline"]),
        "seconds_each_round": {name: [round(t, 2) for t in times] for name, times in seconds.items()},
        "warm_vs_baseline": round(baseline / warm, 1),
        "cold_embedded": cold_embedded,
        "warm_embedded": warm_stats.embedded,
    }
    print(json.dumps(report, indent=2))


def bare_onnx(path, batch_size: int = 64):
    """A bare ONNX Runtime session on every core over the exported model, as a user would write
    it: `tokenizers` cuts at the window and pads each batch to its longest, longest first."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from lectio.embedding.model import model_path

    options = ort.SessionOptions()
    options.intra_op_num_threads = onnx_runtime.cores()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
    tok.enable_truncation(MAX_SEQ_TOKENS)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")

    def encode(texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            encodings = tok.encode_batch([texts[i] for i in rows])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            out[rows] = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                           "token_type_ids": np.zeros_like(ids)})[0]
        return out

    return encode


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
