"""Exactly once under any interleaving (issue 31, deliverable 1), with the schedule injected
at the race points instead of hoped for.

Two live :class:`Session` objects on one conversation stand for two worker processes (each
compares the store's window marker with what it wrote itself).  The race point is the gap
between a session's check of the store (``_sync``) and its own write: the store's
``append_messages`` is wrapped so that, exactly once, the other worker's compression and
appends run inside that gap.  Afterwards every acknowledged message must be in the stored
conversation exactly once, no tool call may be split from its result, and the live session
must see exactly what the store holds.

Every test runs on both stores: a SQLite file and a real PostgreSQL server (hermes-store-
postgres's test server, through :mod:`hermes_host.testing.stores` as the store contract
suite uses it; skipped when that distribution is not installed or no server starts).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from host_helpers import TailEngine, make_config

from hermes_host import CompressRequest, CompressResult, hookimpl
from hermes_host.host import ContextHost
from hermes_host.store import StaleSessionError
from hermes_host.testing.stores import BackendSpec, StoreFactory


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store: a SQLite file, or a new schema on the PostgreSQL test server."""
    return StoreFactory.for_backend(BackendSpec(request.param, request.param), request,
                                    tmp_path).url


def make_host(store: str, engine: object, **overrides: Any) -> ContextHost:
    return ContextHost.from_config(make_config("tail", **overrides), store=store,
                                   extra_plugins={"tail": engine})


class SeeingTail(TailEngine):
    """The tail engine, remembering every message any compression was given: a message may
    leave the window only by being summarised, i.e. after an engine saw it."""

    def __init__(self) -> None:
        super().__init__(keep=1, threshold=10**9)
        self.seen: set[str] = set()

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult:
        self.seen.update(str(m.get("content")) for m in request.messages)
        return self._tail(request)


def _turn(tag: str) -> list[dict[str, Any]]:
    call = f"call_{tag}"
    return [
        {"role": "user", "content": f"question {tag} " + "lorem " * 20},
        {"role": "assistant", "content": f"looking {tag}", "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "grep", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call, "content": f"result {tag} " + "dolor " * 20},
        {"role": "assistant", "content": f"answer {tag} " + "amet " * 20},
    ]


class Gap:
    """Runs ``action`` once, inside the next ``append_messages`` call on the store — after
    the appending session checked the store, before its write lands."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.real = store.append_messages
        self.action: Callable[[], None] | None = None
        store.append_messages = self._append

    def _append(self, *args: Any, **kwargs: Any) -> list[int]:
        action, self.action = self.action, None
        if action is not None:
            action()
        return self.real(*args, **kwargs)  # type: ignore[no-any-return]


def _check(host: Any, live: Any, acknowledged: list[str], seen: set[str]) -> None:
    store = host.store
    tip = store.window_marker(live.conversation_id).session_id
    window = store.active_messages(tip)
    # the live session sees exactly what the store holds (after a check)
    live._sync()
    assert live.raw_window == window
    # each acknowledged message is stored once in the lineage's rows that are not archived
    # copies: a message is either in the window or was replaced by a summary naming it
    texts = Counter(str(m.get("content")) for m in window)
    assert [t for t, n in texts.items() if n > 1] == []
    for text in acknowledged:  # in the window once, or gone after an engine saw it
        assert texts[text] == 1 or (texts[text] == 0 and text in seen), text
    stored = Counter(str(r.message.get("content")) for r in store.lineage_messages(tip))
    assert [t for t in acknowledged if stored[t] != 1] == []  # one row each, ever
    # no split tool-call pair, no duplicate call id in the window
    calls = Counter(c["id"] for m in window for c in m.get("tool_calls") or [])
    assert [c for c, n in calls.items() if n > 1] == []
    results = {m["tool_call_id"] for m in window if m.get("role") == "tool"}
    assert set(calls) == results


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_compression_and_appends_inside_the_append_gap(store_url: str, mode: str) -> None:
    """A compresses after worker B compressed and re-filled the window to the same size while
    A's own append was in flight: A must notice (its marker cannot match by chance) and
    compress the real window, not its stale copy (which stored old messages a second
    time)."""
    engine = SeeingTail()
    with make_host(store_url, engine, compression={"mode": mode}) as host:
        host.open_session("conc", "You are terse.")
        a = host.resume("conc")
        b = host.resume("conc")
        acknowledged: list[str] = []
        for n in range(3):
            for m in _turn(f"a{n}"):
                a.add_message(m)
                acknowledged.append(m["content"])
        gap = Gap(host.store)
        before = len(host.store.active_messages(a.id))

        filled: list[str] = []

        def other_worker() -> None:
            b._sync()
            report = b.compress()
            assert report.status == "committed", report
            refill = before - len(b.raw_window)  # the window back to its size: same count
            assert refill > 4
            fill = _turn("b0") + [{"role": "user" if k % 2 == 0 else "assistant",
                                   "content": f"filler b{k}"} for k in range(refill - 4)]
            for m in fill:
                b.add_message(m)
                acknowledged.append(m["content"])
            filled.append(fill[-1]["role"])

        gap.action = other_worker
        # the other worker runs inside this append's gap (its role continues B's fill)
        before_role = "assistant" if (before - 5 - 4) % 2 else "user"
        gap_message = {"role": before_role, "content": f"a-gap {before_role}"}
        a.add_message(gap_message)
        assert filled and filled[0] != before_role  # no two neighbours of one role
        acknowledged.append(gap_message["content"])
        for m in _turn("a-last"):
            if m["role"] == before_role == "user" and m["content"].startswith("question"):
                a.add_message({"role": "assistant", "content": "a-between"})
                acknowledged.append("a-between")
            a.add_message(m)
            acknowledged.append(m["content"])
        report = a.compress()
        assert report.status in ("committed", "deferred", "rejected"), report
        _check(host, a, acknowledged, engine.seen)
        _check(host, b, acknowledged, engine.seen)


def test_add_message_follows_every_rotation_until_it_writes(store_url: str) -> None:
    """Another worker rotates the conversation inside *each* of the first three write
    attempts of ``add_message``: it follows every rotation and writes once, to the tip."""
    engine = TailEngine(keep=1, threshold=10**9)
    with make_host(store_url, engine, compression={"mode": "rotate"}) as host:
        host.open_session("conc", "You are terse.")
        a = host.resume("conc")
        b = host.resume("conc")
        for n in range(3):
            for m in _turn(f"a{n}"):
                a.add_message(m)
        real = host.store.append_messages
        rotations = []

        def racing_append(session_id: str, messages: Any, **kw: Any) -> list[int]:
            if len(rotations) < 3 and messages and messages[0].get("content") == "late":
                b._sync()
                for m in _turn(f"b{len(rotations)}"):
                    real(b.id, [m])  # b's own writes, straight to the store
                b._sync()
                report = b.compress()
                assert report.status == "committed", report
                rotations.append(b.id)
            return real(session_id, messages, **kw)  # type: ignore[no-any-return]

        host.store.append_messages = racing_append  # type: ignore[method-assign]
        try:
            a.add_message({"role": "user", "content": "late"})
        except StaleSessionError as exc:  # pragma: no cover - the bug this test pins
            pytest.fail(f"an acknowledged-to-be write was refused: {exc}")
        host.store.append_messages = real  # type: ignore[method-assign]
        assert len(rotations) == 3
        assert a.id == rotations[-1]
        stored = [m for m in host.store.lineage_messages(a.id)
                  if m.message.get("content") == "late"]
        assert len(stored) == 1 and stored[0].session_id == a.id and stored[0].active
        assert a.raw_window == host.store.active_messages(a.id)


@pytest.mark.parametrize("mode", ["rotate", "in_place"])
def test_postgres_append_queued_behind_a_publish_on_the_session_row(
    request: pytest.FixtureRequest, mode: str
) -> None:
    """PostgreSQL only: appends and publishes of one session serialise on its ``sessions``
    row.  While worker B's engine compresses, a second connection takes that row; B's publish
    and then worker A's append queue behind it, in that order (checked in
    ``pg_stat_activity``).  Released, B publishes first, and A's append — re-checked by the
    server after B's commit — must land exactly once in the window B left (after a rotation:
    refused in the parent by the store, then followed by ``add_message`` to the child), never
    in a rotated parent, never lost."""
    try:
        server = request.getfixturevalue("hermes_postgres")
    except pytest.FixtureLookupError:
        pytest.skip("hermes-store-postgres is not installed")
    import threading

    from psycopg import sql

    schema = server.fresh_schema()
    locked = threading.Event()
    admin = server.admin(server.database)

    class LockingTail(SeeingTail):
        """Takes the session row from the second connection while compressing (once)."""

        session_id = ""

        @hookimpl
        def compress(self, request: CompressRequest) -> CompressResult:
            if self.session_id and not locked.is_set():
                admin.execute("BEGIN")
                admin.execute(sql.SQL("SELECT 1 FROM {}.sessions WHERE id = %s "
                                      "FOR NO KEY UPDATE").format(sql.Identifier(schema)),
                              (self.session_id,))
                locked.set()
            return super().compress(request)

    def waiting(n: int) -> None:
        """Until ``n`` connections of the store's role wait for a row lock."""
        deadline = time.monotonic() + 10
        with server.admin(server.database) as watch:
            while time.monotonic() < deadline:
                row = watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = %s "
                    "AND wait_event_type = 'Lock'", (server.role,)).fetchone()
                if row and row[0] >= n:
                    return
                time.sleep(0.02)
        pytest.fail(f"{n} connection(s) never queued behind the session row: {outcome}")

    outcome: dict[str, Any] = {}

    def run(name: str, call: Callable[[], Any]) -> threading.Thread:
        def target() -> None:
            try:
                outcome[name] = call()
            except BaseException as exc:  # reported by the asserts below
                outcome[name] = exc
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        return thread

    engine = LockingTail()
    try:
        with make_host(server.app_url(schema), engine, compression={"mode": mode}) as host:
            host.open_session("conc", "You are terse.")
            a = host.resume("conc")
            b = host.resume("conc")
            acknowledged: list[str] = []
            for n in range(3):
                for m in _turn(f"a{n}"):
                    a.add_message(m)
                    acknowledged.append(m["content"])
            b._sync()
            refused: list[str] = []
            real = host.store.append_messages

            def counting(*args: Any, **kwargs: Any) -> list[int]:
                try:
                    return real(*args, **kwargs)  # type: ignore[no-any-return]
                except StaleSessionError as exc:
                    refused.append(str(exc))
                    raise

            host.store.append_messages = counting  # type: ignore[method-assign]
            late = {"role": "user", "content": "late question"}
            engine.session_id = b.id
            threads = [run("b", b.compress)]
            assert locked.wait(20), outcome
            waiting(1)  # B's publish
            threads.append(run("a", lambda: a.add_message(late)))
            waiting(2)  # and A's append behind it
            admin.execute("COMMIT")
            for thread in threads:
                thread.join(30)
            host.store.append_messages = real  # type: ignore[method-assign]
            assert not isinstance(outcome.get("a"), BaseException), outcome["a"]
            report = outcome["b"]
            assert not isinstance(report, BaseException), report
            assert report.status == "committed", report
            acknowledged.append(late["content"])
            if mode == "rotate":
                # the queued append was re-checked after the rotation, refused, followed
                assert len(refused) == 1, refused
                assert a.id == b.id != a.lineage[0], (a.id, b.id, a.lineage)
            else:
                assert refused == [] and a.id == b.id == a.lineage[0]
            stored = [m for m in host.store.lineage_messages(a.id)
                      if m.message.get("content") == late["content"]]
            assert len(stored) == 1 and stored[0].session_id == a.id and stored[0].active
            _check(host, a, acknowledged, engine.seen)
            _check(host, b, acknowledged, engine.seen)
    finally:
        admin.close()
