"""The ONNX Runtime backend: the packaged weights exported once into the home, run without torch.

At first use in a home, the packaged model (the same weights the torch backend loads) is exported
with torch's own exporter into LECTIO_HOME/models/<model>@<release>/model.onnx, with the
sentence-transformers pipeline of this model in the graph (BERT, mean pooling over the attention
mask, L2 normalisation), its operators fused by ONNX Runtime's transformer optimizer, and checked
against the torch model before it is kept. After that, embedding needs only `onnxruntime`,
`tokenizers` and numpy: a process that embeds with this backend never imports torch,
transformers or sentence-transformers.

The file is checked before every use, since nothing at run time compares its vectors with torch's
any more: a perturbed weight still loads and serves plausible-looking, wrong vectors, and the
embedding cache would keep them under the model's id. Its SHA-256 is recorded at export beside it
(model.onnx.sha256, as `sha256sum` writes it), and a session is made only from bytes read once
and checked against that record, so what was checked is what runs, in every process (CLI search,
serve, ingest) and for each session. A file that does not match (or has no record, as an export
from before the check) is exported again, with one warning; where that cannot be done the backend
refuses it. Vectors are hence only ever made, and cached, by the file that was exported.

Why this route and not sentence-transformers' `backend="onnx"`: that one loads (and exports)
through optimum-onnx, whose releases pin transformers below 4.58, so installing it would
downgrade the transformers 5 that sentence-transformers 5+ runs on here, and serving would still
import torch. torch's (TorchScript) exporter needs only the `onnx` package, and what it makes is
ours to fuse: on an AMD EPYC (2 cores) the fused graph embedded batches at 1.5-2.7× torch fp32 and
one query at 2.8× (benchmarks/embedding_throughput.py, benchmarks/query_embedding.py).

Two sessions per model, each made once and reused by every thread: one for a query (the service
embeds one query per search beside the database's work on it), and one with every core this
process may use, for ingestion's batches. The query session runs one thread unless this home
measured every core faster for one query, beside a busy core too (lectio.embedding.measurement): a
choice of the machine, not of the code. Its threads spin only where that measured faster too,
and then only within a run (`session.force_spinning_stop`), so the database's work after it has
the cores. Neither changes a vector (the same bits for all 775 queries data/queries held when
that was measured).

int8 (LECTIO_EMBED_PRECISION=int8): ONNX Runtime's dynamic quantizer, per-channel, over the
fp32 export; its kernels use the VNNI instructions where the CPU has them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
import warnings
from functools import lru_cache, partial
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Callable

import numpy as np

from lectio.embedding.model_file import checked_bytes, digest_file, record_digest, recorded_digest, write_whole  # noqa: F401
from lectio.embedding.packaged import DIMENSIONS, MAX_SEQ_TOKENS, MODEL_NAME, model_path

log = logging.getLogger(__name__)

FP32_FILE = "model.onnx"
INT8_FILE = "model-int8.onnx"
EXPORT_RECORD = "export.json"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "sentence_embedding"
# An export is kept only this close to the torch model on the probe texts (fp32 against fp32:
# what differs is the order of float additions, ~1e-7 per component).
MIN_COSINE = 0.99999
MAX_ABS_DIFF = 1e-4


class BackendUnavailable(ValueError):
    """The backend cannot load here; the message is one line saying why and what to do."""


def available() -> bool:
    return find_spec("onnxruntime") is not None


def require() -> None:
    if not available():
        raise BackendUnavailable("the onnx embedding backend cannot load: onnxruntime is not installed "
                                 "(pip install onnxruntime, or set LECTIO_EMBED_BACKEND=torch)")


def runtime_version() -> str:
    try:
        return version("onnxruntime")
    except PackageNotFoundError:
        return "none"


def cores() -> int:
    """The cores this process may run on (a container's limit, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def model_dir(name: str, release: str, home: Path | None = None) -> Path:
    """Where a home keeps a model's exports: beside everything else the home holds."""
    if home is None:
        from lectio.settings import load_settings

        home = load_settings().home
    return home / "models" / f"{name}@{release}"


@contextlib.contextmanager
def _locked(folder: Path, name: str = ".lock"):
    """One process at a time exports (or measures) into a folder; the others wait, then reuse."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# ------------------------------------------------------------------------------- the export


def model_file(name: str, release: str, precision: str = "fp32", home: Path | None = None) -> Path:
    return model_dir(name, release, home) / (INT8_FILE if precision == "int8" else FP32_FILE)


def ensure_export(name: str, release: str, precision: str = "fp32", home: Path | None = None) -> Path:
    """The model file of `precision` in the home's model cache, the one recorded at export:
    exported there first if missing, or again if it is not what was exported."""
    model_bytes(name, release, precision, home)
    return model_file(name, release, precision, home)


def model_bytes(name: str, release: str, precision: str = "fp32", home: Path | None = None) -> bytes:
    """The bytes of the model file of `precision`, checked against the SHA-256 recorded at its
    export; (re-)made first where they are not, or a one-line BackendUnavailable."""
    require()
    folder = model_dir(name, release, home)
    wanted = model_file(name, release, precision, home)
    data, problem = checked_bytes(wanted)
    if data is not None:
        return data
    # A file that is there but unchecked is refused, not loaded, where it cannot be made again.
    doing = ("cannot load: " if problem == "is missing"
             else f"refuses {wanted}: it {problem}, and making it again failed: ")
    try:
        with _locked(folder):
            data, problem = checked_bytes(wanted)  # another process may have just made it
            if data is None:
                data = _remake(name, folder, wanted, problem)
    except BackendUnavailable as exc:
        if doing.startswith("refuses") and not str(exc).startswith("the onnx embedding backend refuses"):
            raise BackendUnavailable(f"the onnx embedding backend {doing}{_reason(exc)}") from exc
        raise
    except OSError as exc:
        raise BackendUnavailable(f"the onnx embedding backend {doing}cannot write its export into {folder}: "
                                 f"{exc.strerror or exc}") from exc
    except Exception as exc:  # noqa: BLE001 - the exporter's and optimizer's errors are many kinds
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise BackendUnavailable(f"the onnx embedding backend {doing}exporting {name} failed: {first} "
                                 "(set LECTIO_EMBED_BACKEND=torch)") from exc
    return data


def _reason(exc: BackendUnavailable) -> str:
    """What stopped a re-export, without the prefix its own message starts with."""
    return re.sub(r"^the onnx embedding backend (cannot load|cannot export the model): ", "", str(exc))


def _remake(name: str, folder: Path, wanted: Path, problem: str) -> bytes:
    """Export (and quantize) again what is missing or not as recorded, saying so once for a file
    that was there; the bytes made, checked as any other load's."""
    fp32 = folder / FP32_FILE
    source, fp32_problem = (None, problem) if wanted == fp32 else checked_bytes(fp32)
    if source is None:
        _replacing(fp32, fp32_problem, "exporting it again")
        export(name, folder)
        source = _made(fp32)
    if wanted == fp32:
        return source
    _replacing(wanted, problem, "quantizing it again")
    quantize(source, wanted)
    return _made(wanted)


def _replacing(path: Path, problem: str, how: str) -> None:
    if problem != "is missing":
        log.warning("the ONNX model file %s %s; %s", path, problem, how)


def _made(path: Path) -> bytes:
    data, problem = checked_bytes(path)
    if data is None:
        raise BackendUnavailable(f"the onnx embedding backend refuses {path}: it {problem} right after it was made "
                                 "(is another program writing it?)")
    return data


def export(name: str, folder: Path) -> Path:
    """Export the packaged model into folder/model.onnx (written whole or not at all)."""
    from lectio.embedding import torch_runtime

    if find_spec("onnx") is None:
        raise BackendUnavailable("the onnx embedding backend cannot export the model: the onnx package is not "
                                 "installed (pip install onnx, or set LECTIO_EMBED_BACKEND=torch)")
    started = time.monotonic()
    source = model_path(name)
    work = folder / f".export-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        plain = _torch_export(source, work / "plain.onnx")
        fused = _fuse(plain, work / "fused.onnx", source)
        probes = probe_texts()
        reference = torch_runtime.vectors(name, probes)
        checks = {}
        kept = None
        for candidate in [c for c in (fused, plain) if c is not None]:
            vectors = OnnxModel(candidate, name=name).encode(probes, batch_size=16)
            checks[candidate.name] = equivalence(vectors, reference)
            if checks[candidate.name]["equivalent"]:
                kept = candidate
                break
        if kept is None:
            raise BackendUnavailable(f"the onnx embedding backend cannot load: its export of {name} does not "
                                     f"reproduce the torch model's vectors ({checks}); set LECTIO_EMBED_BACKEND=torch")
        digest = hashlib.sha256(kept.read_bytes()).hexdigest()  # of the file checked against torch
        os.replace(kept, folder / FP32_FILE)
        record_digest(folder / FP32_FILE, digest)
        record = {"model": name, "from": str(source), "graph": "fused" if kept == fused else "plain",
                  "checks": checks, "sha256": digest, "onnxruntime": runtime_version(), "torch": _version("torch"),
                  "transformers": _version("transformers"), "seconds": round(time.monotonic() - started, 1)}
        write_whole(folder / EXPORT_RECORD, json.dumps(record, indent=2) + "\n")
        log.info("exported %s to ONNX in %.1fs (%s graph, cosine to torch %s) into %s", name, record["seconds"],
                 record["graph"], checks[kept.name]["min_cosine"], folder)
        return folder / FP32_FILE
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "none"


def _torch_export(source: Path, out: Path) -> Path:
    """BERT with mean pooling and normalisation in one graph, batch and sequence dynamic. The
    eager attention's MatMul/Softmax pattern is what ONNX Runtime's optimizer fuses; the SDPA
    graph it cannot fuse, and it ran at half the speed."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    bert = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    # Two rows of different lengths, one padded, so no shape or mask is traced as a constant.
    ids = torch.tensor([[101, 7592, 2088, 102, 0, 0], [101, 7592, 2088, 2003, 2204, 102]])
    axes = {n: {0: "batch", 1: "sequence"} for n in INPUTS} | {OUTPUT: {0: "batch"}}
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")  # the tracer's notes on Python branches it keeps
        torch.onnx.export(SentenceEmbedding(bert).eval(), (ids, (ids != 0).long(), torch.zeros_like(ids)), str(out),
                          dynamo=False, input_names=list(INPUTS), output_names=[OUTPUT], dynamic_axes=axes,
                          opset_version=17, do_constant_folding=True)
    return out


def _fuse(plain: Path, out: Path, source: Path) -> Path | None:
    """ONNX Runtime's transformer fusions (Attention, SkipLayerNormalization, BiasGelu,
    EmbedLayerNormalization), graph rewrites only (opt_level 0): machine-independent, unlike a
    session's saved ORT_ENABLE_ALL graph. None where they fail: the plain graph is still correct."""
    chatty = [logging.getLogger(n) for n in ("onnx_model", "onnx_model_bert", "fusion_base", "fusion_utils")]
    levels = [c.level for c in chatty]
    try:
        from onnxruntime.transformers import optimizer

        config = json.loads((source / "config.json").read_text())
        for c in chatty:
            c.setLevel(logging.WARNING)  # else a line per fusion
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fused = optimizer.optimize_model(str(plain), model_type="bert", num_heads=config["num_attention_heads"],
                                             hidden_size=config["hidden_size"], opt_level=0, use_gpu=False)
            fused.save_model_to_file(str(out))
        return out
    except Exception as exc:  # noqa: BLE001 - an optimizer failure leaves the plain graph
        log.warning("ONNX Runtime's optimizer could not fuse the export (%s); the plain graph is used", exc)
        return None
    finally:
        for c, level in zip(chatty, levels):
            c.setLevel(level)


class _Drop(logging.Filter):
    def __init__(self, prefix: str):
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


def quantize(fp32: bytes, out: Path) -> Path:
    """The int8 model of the fp32 export's checked bytes (copied for the quantizer, which reads a
    file, so a change to model.onnx meanwhile cannot reach it), its SHA-256 recorded beside it."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    import onnx

    work = out.with_name(f".{out.name}.{os.getpid()}")
    source = out.with_name(f".{FP32_FILE}.{os.getpid()}")
    source.write_bytes(fp32)
    advice = _Drop("Please consider to run pre-processing")  # the quantizer's advice for image models
    logging.getLogger().addFilter(advice)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantize_dynamic(str(source), str(work), per_channel=True, weight_type=QuantType.QInt8,
                             # the fused operators' outputs have no inferred type; they are float32
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    finally:
        logging.getLogger().removeFilter(advice)
        source.unlink(missing_ok=True)
    digest = hashlib.sha256(work.read_bytes()).hexdigest()
    os.replace(work, out)
    record_digest(out, digest)
    log.info("quantized %s to int8 (dynamic, per channel) into %s", FP32_FILE, out)
    return out


# ------------------------------------------------------------------------------- equivalence


def equivalence(vectors: np.ndarray, reference: np.ndarray) -> dict:
    cosine = np.sum(vectors * reference, axis=1)
    found = {"texts": len(vectors), "min_cosine": round(float(cosine.min()), 7),
             "max_abs_diff": float(np.abs(vectors - reference).max())}
    found["equivalent"] = found["min_cosine"] >= MIN_COSINE and found["max_abs_diff"] <= MAX_ABS_DIFF
    return found


_PROBE = ("In the beginning was the Word, and the Word was with God, and the Word was God. "
          "The Lord is my shepherd; I shall lack nothing. He makes me lie down in green pastures. "
          "Therefore, being justified by faith, we have peace with God through our Lord Jesus Christ. "
          "Blessed are the poor in spirit, for theirs is the Kingdom of Heaven. "
          "Paul, a servant of Jesus Christ, called to be an apostle, set apart for the Good News of God. "
          "What is the chief end of man? Man's chief end is to glorify God, and to enjoy him for ever. "
          "Commentary: the psalmist confesses that goodness and loving kindness shall follow him all his days. ")


def probe_texts() -> list[str]:
    """32 texts from one word to past the window (cut there alike by both backends), a query's
    length to a chunk's, the same every time."""
    words = (_PROBE * 6).split()
    sizes = [1, 3, 6, 12, 24, 48, 96, 140, 180, 220] * 4
    return [" ".join(words[(i * 13) % 40:][:size]) for i, size in enumerate(sizes)][:32]


# ------------------------------------------------------------------------------- the sessions


class OnnxModel:
    """One exported model: its tokenizer and its two sessions, made at first use and reused.
    `source` gives the bytes a session is made from (a home's model: model_bytes, checked, each
    time a session is made); without it, a file with a SHA-256 recorded beside it must match it,
    and one without (an export's candidate, before it is kept) is read as it is."""

    def __init__(self, path: Path, max_tokens: int = MAX_SEQ_TOKENS, name: str = MODEL_NAME,
                 source: Callable[[], bytes] | None = None, query: tuple[int, bool] = (1, False)):
        self.path = Path(path)
        self.source = source or partial(_as_recorded, self.path)
        self.max_tokens = max_tokens
        self.query = query  # the query session's (intra-op threads, whether they spin within a run)
        self._sessions: dict[str, object] = {}
        self._lock = threading.Lock()
        self._tokenizer = _tokenizer(max_tokens, name)

    def session(self, kind: str):
        """'query': as `query` says; 'batch': every core, spinning."""
        found = self._sessions.get(kind)
        if found is None:
            with self._lock:
                found = self._sessions.get(kind)
                if found is None:
                    threads, spin = self.query if kind == "query" else (cores(), True)
                    found = self._sessions[kind] = _session(self.path, self.source(), threads, spin,
                                                            stop_spinning=kind == "query")
        return found

    def encode(self, texts: list[str], batch_size: int = 64, kind: str | None = None) -> np.ndarray:
        """Unit-length float32 vectors, each text cut at the model's window as the torch model
        cuts it. Texts are run longest first in batches padded to their longest."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        session = self.session(kind or ("query" if len(texts) == 1 else "batch"))
        encodings = self._tokenizer.encode_batch([t.strip() for t in texts])
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(-lengths, kind="stable")
        out = None
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            width = int(lengths[rows[0]])
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = int(lengths[i])
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            vectors = session.run([OUTPUT], {"input_ids": ids, "attention_mask": mask,
                                             "token_type_ids": np.zeros_like(ids)})[0]
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        return out


def _as_recorded(path: Path) -> bytes:
    """The file's bytes, checked where a SHA-256 is recorded beside it."""
    data, problem = checked_bytes(path)
    if data is not None:
        return data
    if problem.startswith("does not match"):
        raise BackendUnavailable(f"the onnx embedding backend refuses {path}: it {problem} "
                                 "(delete it to export it again, or set LECTIO_EMBED_BACKEND=torch)")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BackendUnavailable(f"the onnx embedding backend cannot load {path}: {exc.strerror or exc}") from exc


def _tokenizer(max_tokens: int, name: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_path(name) / "tokenizer.json"))
    # As sentence-transformers runs it: cut at the window, [CLS] and [SEP] included; no padding
    # here (each batch is padded to its own longest).
    tok.enable_truncation(max_tokens)
    tok.no_padding()
    return tok


def _session(path: Path, data: bytes, threads: int, spin: bool, stop_spinning: bool = False):
    """A session of `data` (the model file's bytes; `path` names it in errors); `stop_spinning`:
    its threads stop spinning when a run ends."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise BackendUnavailable(f"the onnx embedding backend cannot load: onnxruntime does not import ({exc}); "
                                 "pip install onnxruntime, or set LECTIO_EMBED_BACKEND=torch") from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # warnings about unused initializers are not the user's business
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    if stop_spinning:
        options.add_session_config_entry("session.force_spinning_stop", "1")
    try:
        return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BackendUnavailable(f"the onnx embedding backend cannot load {path}: {first} "
                                 f"(delete the file to export it again, or set LECTIO_EMBED_BACKEND=torch)") from exc


_LOADING = threading.Lock()


def loaded(name: str, release: str, precision: str, query: tuple[int, bool] = (1, False)) -> OnnxModel:
    """The model of a home, exported there first if needed; one per process, home and query
    session setting (OnnxModel's `query`)."""
    from lectio.settings import load_settings

    with _LOADING:
        return _load(name, release, precision, load_settings().home, query)


@lru_cache(maxsize=4)
def _load(name: str, release: str, precision: str, home: Path, query: tuple[int, bool] = (1, False)) -> OnnxModel:
    # Checked now (a one-line error before the first text), and again for each session it makes.
    path = ensure_export(name, release, precision, home)
    return OnnxModel(path, MAX_SEQ_TOKENS, name, source=partial(model_bytes, name, release, precision, home),
                     query=query)
