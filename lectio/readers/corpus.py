"""Fetching the offline corpus: SWORD modules come from Debian packages, on demand.

`apt-get download` + `dpkg -x` needs no installation and no root for the download itself; the
package lists may need an `apt-get update` first on a fresh machine.
"""

from __future__ import annotations

import fcntl
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

# SWORD module name (lower case) → the Debian package that ships it.
SWORD_PACKAGES = {
    "engweb2015eb": "sword-text-web",
    "engkjv2006eb": "sword-text-kjv",
    "mhcc": "sword-comm-mhcc",
    "tdavid": "sword-comm-tdavid",
    "scofield": "sword-comm-scofield",
    "strongsgreek": "sword-dict-strongs-greek",
    "strongshebrew": "sword-dict-strongs-hebrew",
    # Nave's Topical Bible: evaluation only (data/queries/naves.jsonl), never an index input.
    "nave": "sword-dict-naves",
}


class CorpusError(Exception):
    pass


def sword_library(corpus_dir: Path) -> Path:
    return corpus_dir / "sword" / "usr" / "share" / "sword"


def has_module(library: Path, module: str) -> bool:
    # Conf file names keep the module's own case (engWEB2015eb.conf); SWORD ignores case.
    confs = library / "mods.d"
    return confs.is_dir() and any(c.name.lower() == f"{module.lower()}.conf" for c in confs.iterdir())


@contextmanager
def _locked(corpus_dir: Path):
    # Several sources may be materialised at once by separate processes; one fetch at a time.
    corpus_dir.mkdir(parents=True, exist_ok=True)
    with open(corpus_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_sword_module(corpus_dir: Path, module: str) -> Path:
    """Return the SWORD library root holding `module`, downloading its package if needed."""
    library = sword_library(corpus_dir)
    if has_module(library, module):
        return library
    package = SWORD_PACKAGES.get(module.lower())
    if package is None:
        raise CorpusError(f"no known Debian package ships SWORD module {module!r}")
    with _locked(corpus_dir):
        if not has_module(library, module):
            try:
                _fetch_deb(package, corpus_dir / "sword")
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                # No apt-get or dpkg, no single .deb, an unpackable one: one line, for this source.
                raise CorpusError(f"could not fetch {package} for SWORD module {module!r}: {exc}") from None
    if not has_module(library, module):
        raise CorpusError(f"package {package} did not contain module {module!r}")
    return library


def _fetch_deb(package: str, target: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        download = ["apt-get", "download", package]
        result = subprocess.run(download, cwd=tmp, capture_output=True, text=True)
        if result.returncode != 0:
            # A fresh machine has no package lists yet.
            subprocess.run(["apt-get", "update"], capture_output=True, text=True)
            result = subprocess.run(download, cwd=tmp, capture_output=True, text=True)
        if result.returncode != 0:
            raise CorpusError(f"apt-get download {package} failed: {result.stderr.strip()[-500:]}")
        (deb,) = Path(tmp).glob("*.deb")
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg", "-x", str(deb), str(target)], check=True, capture_output=True)
