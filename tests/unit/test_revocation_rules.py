"""Who the sources file allows, as revocation reads it: an entry invalid for another reason keeps
the ACL it states (a typo in its format must not revoke the live index); one without a readable
ACL, like a source the file no longer lists, allows no one."""

from lectio.index.revocation import allowed_acls
from lectio.sources import load_sources


def test_an_invalid_entry_keeps_the_acl_it_states_and_one_without_allows_no_one(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        "sources:\n"
        "  - {id: ok, kind: document, format: markdown, path: a.md, acl: [public]}\n"
        "  - {id: typo, kind: document, format: markdwon, path: a.md, acl: ['user:alice']}\n"
        "  - {id: no-acl, kind: document, format: markdown, path: a.md}\n"
        "  - {id: bad-acl, kind: document, format: markdown, path: a.md, acl: ['user alice']}\n")
    assert allowed_acls(load_sources(sources)) == {
        "ok": ("public",), "typo": ("user:alice",), "no-acl": (), "bad-acl": ()}
