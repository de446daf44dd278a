"""S3 failure modes through the fault proxy in front of moto (reliability.md, "S3")."""

from __future__ import annotations

from typing import Any

import pytest

from paimon_core.errors import PaimonError, StorageError
from paimon_core.io.file_io import FileIO, join
from paimon_core.table import FileStoreTable
from tests.reliability.harness import (
    AppendModel,
    append_rows,
    assert_fsck_clean,
    create_table,
    open_table,
)
from tests.reliability.minwrite import writer_for
from tests.reliability.s3proxy import FaultProxy, Rule

pytestmark = pytest.mark.s3

SNAPSHOT_PUT = r"/snapshot/snapshot-\d+(\?|$)"
Proxied = tuple[str, dict[str, str], FaultProxy]


def _commit(table: FileStoreTable, user: str, ident: int, data: Any) -> list[int]:
    w = writer_for(table, user)
    w.write_arrow(data)
    return table.new_commit(user).commit(w.prepare_commit(), ident)


def _setup(proxied: Proxied, n: int = 1) -> tuple[str, dict[str, str], FaultProxy, AppendModel]:
    root, opts, proxy = proxied
    create_table(root, opts, "append")
    table = open_table(root, opts)
    model = AppendModel()
    for i in range(n):
        data = append_rows(f"s{i}", 0, i)
        _commit(table, "setup", i, data)
        model.add(data)
    proxy.clear()
    return root, opts, proxy, model


def test_lost_response_on_snapshot_put_is_success(proxied_bucket: Proxied) -> None:
    """The PUT of snapshot-2 lands but its response is lost (connection reset); botocore
    retries and gets 412 for our own object: reported as success, nothing deleted, exactly
    one snapshot."""
    root, opts, proxy, model = _setup(proxied_bucket)
    proxy.add(Rule("PUT", SNAPSHOT_PUT, "drop_response", skip=1))  # the 2nd snapshot PUT
    table = open_table(root, opts)
    for i in (1, 2):
        data = append_rows("x", 1, i)
        assert _commit(table, "u", i, data) == [1 + i]
        model.add(data)
    puts = proxy.requests("PUT", SNAPSHOT_PUT)
    assert [(e[2], e[3]) for e in puts] == [
        (200, "forward"), (200, "drop_response"), (412, "forward")]
    assert proxy.requests("DELETE", ".") == []  # no cleanup of a commit that landed
    fresh = open_table(root, opts)
    assert fresh.snapshot_manager.list_snapshot_ids() == [1, 2, 3]
    assert fresh.snapshot_manager.snapshot(3).commit_user == "u"
    model.check(fresh)
    assert_fsck_clean(fresh, expect_snapshots=3)


def test_rival_takes_the_id_then_our_response_is_lost(proxied_bucket: Proxied) -> None:
    """A rival publishes snapshot-2 between our planning and our publish (our PUT: 412,
    genuinely theirs: the read-back says "someone else", we re-plan); the response of our PUT
    of snapshot-3 is then lost (botocore retries: 412, ours): success on 3, nothing deleted
    but the manifests of the lost attempt on 2."""
    root, opts, proxy, model = _setup(proxied_bucket)
    table = open_table(root, opts)
    w = writer_for(table, "u")
    data = append_rows("x", 1, 1)
    w.write_arrow(data)
    msgs = w.prepare_commit()
    rival = open_table(root, opts)
    rdata = append_rows("r", 2, 1)
    real = table.file_io.try_create

    def racing(path: str, payload: bytes) -> bool:
        if path.endswith("/snapshot-2") and not rival.snapshot_manager.snapshot_exists(2):
            _commit(rival, "rival", 1, rdata)
            proxy.add(Rule("PUT", r"/snapshot/snapshot-3$", "drop_response"))
        return real(path, payload)

    table.file_io.try_create = racing  # type: ignore[method-assign]
    assert table.new_commit("u").commit(msgs, 1) == [3]
    assert [(e[2], e[3]) for e in proxy.requests("PUT", r"/snapshot/snapshot-3$")] == [
        (200, "drop_response"), (412, "forward")]
    deleted = {e[1].rsplit("/", 1)[-1] for e in proxy.requests("DELETE", ".")}
    assert deleted and all(d.startswith("manifest") for d in deleted)
    model.add(data)
    model.add(rdata)
    fresh = open_table(root, opts)
    model.check(fresh)
    assert_fsck_clean(fresh, expect_snapshots=3)


def test_lost_response_and_unreadable_snapshot_is_state_unknown(proxied_bucket: Proxied
                                                                 ) -> None:
    """The snapshot PUT lands but its response is lost, and reading snapshot-2 back fails
    (403): the committer cannot decide -> CommitStateUnknownError, nothing cleaned up. The
    pipeline's retry resolves the state first (filter_committed) and does not re-apply."""
    from paimon_core.errors import CommitStateUnknownError

    root, opts, proxy, model = _setup(proxied_bucket)
    proxy.add(Rule("PUT", SNAPSHOT_PUT, "drop_response"))
    proxy.add(Rule("GET", r"/snapshot/snapshot-2$", "status", status=403, count=1000))
    table = open_table(root, opts)
    w = writer_for(table, "u")
    data = append_rows("x", 1, 1)
    w.write_arrow(data)
    msgs = w.prepare_commit()
    with pytest.raises(CommitStateUnknownError):
        table.new_commit("u").commit(msgs, 1)
    assert proxy.requests("DELETE", ".") == []  # never clean up on unknown
    proxy.clear()
    fresh = open_table(root, opts)
    assert fresh.new_commit("u").filter_committed([1]) == []
    assert fresh.new_commit("u").commit(msgs, 1) == [2]  # recognised, not applied again
    model.add(data)
    model.check(fresh)
    assert_fsck_clean(fresh, expect_snapshots=2)


def test_503_slowdown_bursts_are_retried(proxied_bucket: Proxied) -> None:
    """Throttling bursts on the manifest and snapshot PUTs (and on reads) are retried."""
    root, opts, proxy, model = _setup(proxied_bucket)
    rules = [proxy.add(Rule("PUT", r"/manifest/manifest-", "status", status=503, count=1)),
             proxy.add(Rule("PUT", SNAPSHOT_PUT, "status", status=503, count=3)),
             proxy.add(Rule("GET", r"/snapshot/snapshot-1$", "status", status=503, count=1))]
    table = open_table(root, opts)
    data = append_rows("x", 1, 1)
    assert _commit(table, "u", 1, data) == [2]
    model.add(data)
    assert [r.fired for r in rules] == [1, 3, 1]
    assert [e[2] for e in proxy.requests("PUT", SNAPSHOT_PUT)] == [503, 503, 503, 200]
    fresh = open_table(root, opts)
    model.check(fresh)
    assert_fsck_clean(fresh, expect_snapshots=2)


def test_409_on_put_is_retried(proxied_bucket: Proxied) -> None:
    """409 ConditionalRequestConflict (a concurrent conditional write in flight) was not
    applied: FileIO retries the conditional PUT; so does a 409 on a plain PUT."""
    root, opts, proxy, model = _setup(proxied_bucket)
    snap_rule = proxy.add(Rule("PUT", SNAPSHOT_PUT, "status", status=409, count=2))
    man_rule = proxy.add(Rule("PUT", r"/manifest/manifest-list-", "status", status=409,
                              count=1))
    table = open_table(root, opts)
    data = append_rows("x", 1, 1)
    assert _commit(table, "u", 1, data) == [2]
    model.add(data)
    assert (snap_rule.fired, man_rule.fired) == (2, 1)
    assert [e[2] for e in proxy.requests("PUT", SNAPSHOT_PUT)] == [409, 409, 200]
    fresh = open_table(root, opts)
    model.check(fresh)
    assert_fsck_clean(fresh, expect_snapshots=2)


def test_409_forever_is_a_typed_error(proxied_bucket: Proxied) -> None:
    root, opts, proxy = proxied_bucket
    fio = FileIO(root, opts)
    proxy.add(Rule("PUT", r"/k$", "status", status=409, count=100))
    with pytest.raises(StorageError, match="ConditionalRequestConflict"):
        fio.try_create(join(root, "k"), b"x")
    assert 1 < len(proxy.requests("PUT", r"/k$")) <= 10  # bounded


def test_412_without_condition_element_means_exists(proxied_bucket: Proxied) -> None:
    root, opts, proxy = proxied_bucket
    fio = FileIO(root, opts)
    p = join(root, "snapshot", "snapshot-1")
    assert fio.try_create(p, b"first") is True
    proxy.clear()
    rule = proxy.add(Rule("PUT", r"/snapshot-1$", "strip_condition"))
    assert fio.try_create(p, b"second") is False
    assert rule.fired == 1 and proxy.requests("PUT", r"/snapshot-1$")[0][2] == 412
    assert fio.read_bytes(p) == b"first"


def test_412_without_condition_in_a_commit_race(proxied_bucket: Proxied) -> None:
    """Every 412 on snapshot PUTs loses its Condition element while a rival takes the id:
    the commit still sees "exists", reads back, and lands on the next id."""
    root, opts, proxy, model = _setup(proxied_bucket)
    proxy.add(Rule("PUT", SNAPSHOT_PUT, "strip_condition", count=100))
    table = open_table(root, opts)
    w = writer_for(table, "u")
    data = append_rows("x", 1, 1)
    w.write_arrow(data)
    msgs = w.prepare_commit()
    rival = open_table(root, opts)
    rdata = append_rows("r", 2, 1)
    real = table.file_io.try_create

    def racing(path: str, payload: bytes) -> bool:
        if path.endswith("/snapshot-2") and not rival.snapshot_manager.snapshot_exists(2):
            _commit(rival, "rival", 1, rdata)
        return real(path, payload)

    table.file_io.try_create = racing  # type: ignore[method-assign]
    assert table.new_commit("u").commit(msgs, 1) == [3]
    assert any(e[2] == 412 for e in proxy.requests("PUT", SNAPSHOT_PUT))
    model.add(data)
    model.add(rdata)
    model.check(open_table(root, opts))
    assert_fsck_clean(open_table(root, opts), expect_snapshots=3)


def test_head_403_falls_back_to_listing(proxied_bucket: Proxied) -> None:
    """Decision: S3 answers HEAD of a *missing* key with 403 when the principal lacks
    s3:ListBucket, so a 403 on HEAD proves nothing. FileIO.exists() then asks a listing
    (exact key, then key/ prefix): correct answers when listing is allowed, a typed
    StorageError when it is denied too."""
    root, opts, proxy, model = _setup(proxied_bucket, n=2)
    fio = FileIO(root, opts)
    sm_dir = join(root, "db.db", "t", "snapshot")
    # every HEAD denied, existing or not
    proxy.add(Rule("HEAD", r".", "status", status=403, count=10_000))
    assert fio.exists(join(sm_dir, "snapshot-1")) is True
    assert fio.exists(join(sm_dir, "snapshot-3")) is False
    assert fio.exists(join(sm_dir, "snapshot-")) is False  # a prefix of keys is no file
    assert fio.exists(join(root, "db.db", "t", "schema")) is True  # a "directory"
    # listing denied as well: typed error, not a wrong answer
    proxy.add(Rule("GET", r"list-type=2", "status", status=403, count=10_000))
    with pytest.raises(StorageError, match=r"denied|Forbidden|AccessDenied"):
        fio.exists(join(sm_dir, "snapshot-9"))
    proxy.clear()
    # the realistic case: missing keys answer 403 (no s3:ListBucket on HEAD): the whole
    # read and commit path still finds the true latest snapshot and commits on top of it
    proxy.add(Rule("HEAD", r".", "deny_missing", count=10_000))
    table = open_table(root, opts)
    assert table.snapshot_manager.latest_snapshot_id() == 2
    data = append_rows("x", 1, 1)
    assert _commit(table, "u", 1, data) == [3]
    model.add(data)
    model.check(open_table(root, opts))
    assert any(e[2] == 403 for e in proxy.requests("HEAD", "."))
    proxy.clear()
    assert_fsck_clean(open_table(root, opts), expect_snapshots=3)


def test_unreachable_endpoint_is_a_typed_error(s3_bucket: tuple[str, dict[str, str]]) -> None:
    import socket

    root, opts = s3_bucket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    fio = FileIO(root, {**opts, "s3.endpoint": f"http://127.0.0.1:{port}",
                        "s3.max-attempts": "1"})
    for op in (lambda: fio.read_bytes(join(root, "x")), lambda: fio.write_bytes(
            join(root, "x"), b"1"), lambda: fio.try_create(join(root, "y"), b"1"),
            lambda: fio.list_status(root)):
        with pytest.raises(PaimonError):
            op()
