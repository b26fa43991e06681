"""read_zld on a tiny zLD module written here byte by byte: its blocks, its links and broken files
(the real Strong's and Nave's modules: tests/integration/pipeline/test_sword_dictionaries.py)."""

import struct
import zlib

import pytest

from lectio.readers.zld import ZldError, read_zld

# --- a hand-made module --------------------------------------------------------------

def _write_module(root, entries, links=(), block_size=2):
    """A zLD module "Tiny" with `entries` (key → text) and `links` (alias → key)."""
    (root / "mods.d").mkdir(parents=True)
    (root / "mods.d" / "tiny.conf").write_text(
        "[Tiny]\nDataPath=./modules/lexdict/zld/tiny/dict\nModDrv=zLD\nEncoding=UTF-8\n"
    )
    folder = root / "modules" / "lexdict" / "zld" / "tiny"
    folder.mkdir(parents=True)
    items = list(entries.items())
    blocks = [items[i : i + block_size] for i in range(0, len(items), block_size)]
    zdx, zdt, where = b"", b"", {}
    for number, block in enumerate(blocks):
        header = struct.pack("<I", len(block))
        body, offsets = b"", []
        start = 4 + 8 * len(block)
        for entry_number, (key, text) in enumerate(block):
            data = text.encode()
            offsets.append(struct.pack("<II", start + len(body), len(data)))
            body += data + b"\0"
            where[key] = (number, entry_number)
        packed = zlib.compress(header + b"".join(offsets) + body)
        zdx += struct.pack("<II", len(zdt), len(packed))
        zdt += packed
    records = [(key, struct.pack("<II", *where[key])) for key, _ in items]
    records += [(alias, b"@LINK " + target.encode()) for alias, target in links]
    idx, dat = b"", b""
    for key, rest in sorted(records):
        record = key.encode() + b"\r\n" + rest
        idx += struct.pack("<II", len(dat), len(record))
        dat += record + b"\r\n"
    for suffix, data in (("idx", idx), ("dat", dat), ("zdx", zdx), ("zdt", zdt)):
        (folder / f"dict.{suffix}").write_bytes(data)
    return folder


def test_reads_blocks_and_follows_links(tmp_path):
    _write_module(
        tmp_path,
        {"ALPHA": "<entry>first</entry>", "BETA": "<entry>second</entry>", "GAMMA": "third"},
        links=[("ALEPH", "ALPHA"), ("A", "ALEPH")],  # a link to a link, as SWORD allows
    )
    assert list(read_zld(tmp_path, "Tiny")) == [
        ("A", "<entry>first</entry>"),
        ("ALEPH", "<entry>first</entry>"),
        ("ALPHA", "<entry>first</entry>"),
        ("BETA", "<entry>second</entry>"),
        ("GAMMA", "third"),  # the second block
    ]


def test_broken_modules_say_what_is_wrong(tmp_path):
    _write_module(tmp_path / "dangling", {"ALPHA": "x"}, links=[("B", "NOWHERE")])
    with pytest.raises(ZldError, match="'B' links to 'NOWHERE'"):
        list(read_zld(tmp_path / "dangling", "Tiny"))

    folder = _write_module(tmp_path / "missing", {"ALPHA": "x"})
    (folder / "dict.zdt").unlink()
    with pytest.raises(ZldError, match=r"missing: .*dict\.zdt"):
        list(read_zld(tmp_path / "missing", "Tiny"))

    folder = _write_module(tmp_path / "short", {"ALPHA": "x", "BETA": "y", "GAMMA": "z"})
    zdx = folder / "dict.zdx"
    zdx.write_bytes(zdx.read_bytes()[:8])  # the index of the second block is gone
    with pytest.raises(ZldError, match="block 1 is past the end"):
        list(read_zld(tmp_path / "short", "Tiny"))
