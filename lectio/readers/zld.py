"""Read a SWORD zLD dictionary module (Strong's lexicons, Nave's Topical Bible).

pysword reads Bibles and commentaries but not dictionaries, so this is the small part of
SWORD's zStr format a reader needs. Four files share the module's DataPath prefix:

* ``.idx``  — one (offset, size) pair of little-endian uint32 per key, in key order,
  pointing into ``.dat``;
* ``.dat``  — per key: the key, a line break, then either the block number and the entry
  number inside that block (two uint32), or "@LINK <other key>" for an alias;
* ``.zdx``  — one (offset, size) pair per block, pointing into ``.zdt``;
* ``.zdt``  — zlib-compressed blocks; an inflated block is a uint32 entry count, that many
  (offset, size) pairs relative to the block, then the entries' text, NUL-terminated.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from pysword.modules import SwordModules

_PAIR = struct.Struct("<II")
_COUNT = struct.Struct("<I")
_LINK = b"@LINK"


class ZldError(ValueError):
    """The module is missing, is not a zLD dictionary, or its files disagree."""


def _module_conf(library_root: Path, module: str) -> dict:
    # Conf section names keep their own case ("StrongsGreek"); SWORD itself ignores case.
    confs = SwordModules(str(library_root)).parse_modules()
    for name, conf in confs.items():
        if name.lower() == module.lower():
            if conf.get("moddrv", "").lower() != "zld":
                raise ZldError(f"SWORD module {name!r}: ModDrv={conf.get('moddrv')!r} is not zLD")
            return conf
    raise ZldError(
        f"SWORD module {module!r} not found under {library_root} "
        f"(found: {', '.join(sorted(confs)) or 'none'})"
    )


class _Dictionary:
    def __init__(self, prefix: Path, encoding: str):
        self.encoding = encoding
        try:
            self.idx = prefix.with_name(prefix.name + ".idx").read_bytes()
            self.dat = prefix.with_name(prefix.name + ".dat").read_bytes()
            self.zdx = prefix.with_name(prefix.name + ".zdx").read_bytes()
            self.zdt = prefix.with_name(prefix.name + ".zdt").read_bytes()
        except FileNotFoundError as missing:
            raise ZldError(f"zLD module file missing: {missing.filename}") from None
        # Each block holds dozens of entries and keys come in block order: keep a few inflated.
        self.block = functools.lru_cache(maxsize=4)(self._inflate)

    def records(self) -> Iterator[tuple[str, bytes]]:
        """(key, what follows the key in .dat) for every key, in index order."""
        for offset, size in _PAIR.iter_unpack(self.idx):
            record = self.dat[offset : offset + size]
            key, newline, rest = record.partition(b"\n")
            if not newline:
                raise ZldError(f"zLD .dat record at byte {offset} has no line break after its key")
            yield key.rstrip(b"\r").decode(self.encoding), rest

    def _inflate(self, number: int) -> bytes:
        if (number + 1) * _PAIR.size > len(self.zdx):
            raise ZldError(f"zLD block {number} is past the end of the .zdx index")
        offset, size = _PAIR.unpack_from(self.zdx, number * _PAIR.size)
        return zlib.decompress(self.zdt[offset : offset + size])

    def entry(self, block_number: int, entry_number: int) -> str:
        block = self.block(block_number)
        (count,) = _COUNT.unpack_from(block, 0)
        if entry_number >= count:
            raise ZldError(f"zLD block {block_number} has {count} entries, not {entry_number + 1}")
        offset, size = _PAIR.unpack_from(block, _COUNT.size + entry_number * _PAIR.size)
        return block[offset : offset + size].rstrip(b"\0").decode(self.encoding)


def read_zld(library_root: Path, module: str) -> Iterator[tuple[str, str]]:
    """Every (key, raw entry markup) of a zLD dictionary module, in the module's key order.

    Keys come as stored ("00026" in Strong's, "FORGIVENESS" in Nave's); a key may occur
    twice (Nave's has two "SIN" entries, the desert and the sin), and both are yielded.
    An "@LINK" key yields the entry it points to under its own name.
    """
    conf = _module_conf(Path(library_root), module)
    prefix = Path(library_root) / conf["datapath"]
    dictionary = _Dictionary(prefix, conf.get("encoding", "utf-8").lower())
    records = list(dictionary.records())
    first: dict[str, bytes] = {}
    for key, rest in records:
        first.setdefault(key, rest)
    for key, rest in records:
        yield key, dictionary.entry(*_location(key, rest, first, dictionary.encoding))


def _location(key: str, rest: bytes, first: dict[str, bytes], encoding: str) -> tuple[int, int]:
    """(block, entry) of a record, following "@LINK" aliases (SWORD lets links chain)."""
    seen = {key}
    while rest.startswith(_LINK):
        target = rest[len(_LINK) :].strip().decode(encoding)
        if target in seen or target not in first:
            problem = "a loop" if target in seen else "a key the module lacks"
            raise ZldError(f"zLD key {key!r} links to {target!r}, {problem}")
        seen.add(target)
        rest = first[target]
    if len(rest) < _PAIR.size:
        raise ZldError(f"zLD key {key!r} has a truncated .dat record")
    return _PAIR.unpack_from(rest, 0)
