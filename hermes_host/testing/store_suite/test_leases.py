"""Store contract: the per-session compression lease (R-9.4, R-10.1), with real competing
processes, on every backend."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_host.store import Deferred, Lease, LeaseLostError, StateStore, StoreError
from hermes_host.testing.store_suite._kit import compressed_window, conversation, race, store
from hermes_host.testing.stores import StoreFactory

__all__ = ["store"]


def test_contention_defers_with_the_holder_never_raises_R_10_1(store_factory: StoreFactory) -> None:
    store = store_factory()
    other = store_factory()
    session = store.create_session()
    lease = store.acquire_lease(session.id)
    assert isinstance(lease, Lease)
    deferred = other.acquire_lease(session.id)
    assert isinstance(deferred, Deferred)
    assert deferred.holder == lease.holder
    assert lease.holder in deferred.message and "compression deferred" in deferred.message
    # same process, another acquisition: still deferred (nonce differs)
    assert isinstance(store.acquire_lease(session.id), Deferred)
    assert store.release_lease(lease)
    assert isinstance(other.acquire_lease(session.id), Lease)


def test_refresh_extends_and_detects_loss(store: StateStore) -> None:
    session = store.create_session()
    lease = store.acquire_lease(session.id, ttl=5)
    assert isinstance(lease, Lease)
    refreshed = store.refresh_lease(lease, ttl=100)
    assert refreshed.expires_at > lease.expires_at + 90
    store.release_lease(refreshed)
    with pytest.raises(LeaseLostError, match="could not refresh"):
        store.refresh_lease(refreshed)
    with pytest.raises(StoreError, match="TTL must be > 0"):
        store.acquire_lease(session.id, ttl=0)


def test_expired_lease_is_reclaimed(store: StateStore) -> None:
    session = store.create_session()
    first = store.acquire_lease(session.id, ttl=0.05)
    assert isinstance(first, Lease)
    assert isinstance(store.acquire_lease(session.id), Deferred)
    time.sleep(0.06)
    second = store.acquire_lease(session.id)
    assert isinstance(second, Lease) and second.holder != first.holder


def test_dead_holder_is_reclaimed_before_ttl(store_factory: StoreFactory) -> None:
    """A process that died holding the lease (same host, pid gone) does not block the
    session for the whole TTL."""
    db = store_factory.url
    store = store_factory()
    session = store.create_session()
    code = (
        "import sys; from hermes_host.store import open_store; "
        "s = open_store(sys.argv[1]); l = s.acquire_lease(sys.argv[2], ttl=3600); "
        "print(l.holder)"
    )
    out = subprocess.run([sys.executable, "-c", code, db, session.id], check=True,
                         capture_output=True, text=True, timeout=60).stdout.strip()
    assert out.startswith("pid:")
    lease = store.acquire_lease(session.id)
    assert isinstance(lease, Lease) and lease.holder != out


def test_lease_on_unknown_session_is_a_clear_error(store: StateStore) -> None:
    with pytest.raises(StoreError, match="no session with id 'ghost'"):
        store.acquire_lease("ghost")


@pytest.mark.slow  # real interpreters start for every competitor
@pytest.mark.parametrize(("competitors", "mode"), [(2, "in_place"), (8, "rotate")])
def test_exactly_one_process_compresses_a_session_R_9_4(
    store_factory: StoreFactory, tmp_path: Path, competitors: int, mode: str
) -> None:
    db = store_factory.url
    store = store_factory()
    session = store.create_session(title="race")
    store.append_messages(session.id, conversation(4))
    store.close()
    results = race(db, [session.id] * competitors, tmp_path / "go", 1.0, mode)
    published = [r for r in results if r["result"] == "published"]
    deferred = [r for r in results if r["result"] == "deferred"]
    assert len(published) == 1, results
    assert len(deferred) == competitors - 1
    assert all(d["holder"] == published[0]["holder"] for d in deferred)  # holder identifiable
    store = store_factory()
    target = published[0]["new_session"]
    assert store.active_messages(target) == compressed_window(session.id)
    if mode == "rotate":
        assert [s.id for s in store.list_sessions() if s.parent_session_id == session.id] == [
            target]
    else:
        assert store.get_session(session.id).compression_count == 1
    store.close()


@pytest.mark.slow
def test_different_sessions_compress_concurrently_R_9_4(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    db = store_factory.url
    store = store_factory()
    ids = []
    for i in range(4):
        session = store.create_session(title=f"s{i}")
        store.append_messages(session.id, conversation(2, tag=str(i)))
        ids.append(session.id)
    store.close()
    results = race(db, ids, tmp_path / "go", 1.0, "rotate")
    assert [r["result"] for r in results] == ["published"] * 4
    # every lease was held at the same moment: the hold intervals all overlap
    assert max(r["t_acquired"] for r in results) < min(r["t_published"] for r in results)
