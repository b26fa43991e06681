"""Retention keeps what its rule promises: the live version, the rollback target (unless
revoked), builds in progress and the `keep` most recent other ready versions."""

import pytest

from lectio.index.retention import to_drop


def ready(*names):
    return [(n, "ready") for n in names]


@pytest.mark.parametrize("versions, live, previous, keep, dropped", [
    # Fewer other ready versions than `keep`: nothing goes (the rule once dropped v1 here).
    (ready("v1", "v2", "v3", "v4"), "v4", "v3", 3, []),
    (ready("v1", "v2", "v3"), "v3", "v2", 3, []),
    (ready("v1", "v2", "v3", "v4"), "v4", "v3", 2, []),
    (ready("v1", "v2", "v3", "v4"), "v4", "v3", 1, ["v1"]),
    (ready("v1", "v2", "v3", "v4"), "v4", "v3", 0, ["v1", "v2"]),
    (ready("v1", "v2", "v3", "v4", "v5", "v6"), "v6", "v5", 3, ["v1"]),
    (ready("v1"), "v1", None, 3, []),
    ([], None, None, 3, []),
    # Live and rollback target are kept whatever their age.
    (ready("v1", "v2", "v3", "v4"), "v1", "v2", 1, ["v3"]),
    # A revoked rollback target is no target; revoked, failed and abandoned versions never count
    # towards `keep`; a build in progress is never touched.
    ([("v1", "ready"), ("v2", "revoked"), ("v3", "ready")], "v3", "v2", 3, ["v2"]),
    ([("v1", "failed"), ("v2", "abandoned"), ("v3", "ready"), ("v4", "ready")], "v4", None, 3, ["v1", "v2"]),
    ([("v1", "ready"), ("v2", "building"), ("v3", "ready")], "v3", None, 0, ["v1"]),
    # A revoked live version stays until something else is live.
    ([("v1", "revoked"), ("v2", "ready")], "v1", None, 0, ["v2"]),
])
def test_retention_drops_only_what_the_rule_does_not_keep(versions, live, previous, keep, dropped):
    assert to_drop(versions, live, previous, keep) == dropped
