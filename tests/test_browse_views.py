"""``hermes-host browse``'s pages, through the real Starlette app (TestClient) over a real
SQLite store that ``hermes-host replay`` wrote from a real transcript (issue 29)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from browse_helpers import HERMES_HOST, SECRET, TITLE, replayed_store, transcript_path
from markupsafe import escape
from starlette.testclient import TestClient

from hermes_host.browse import conversation_html
from hermes_host.browse.app import create_app
from hermes_host.browse.views import conversation_page
from hermes_host.messages import is_summary, text_of
from hermes_host.store import StateStore, open_store
from hermes_host.store.conversations import ConversationRef, find_conversation
from hermes_host.store.manifests import decode_entries, rebuild_request

pytestmark = pytest.mark.skipif(not transcript_path().is_file(),
                                reason=f"no transcript at {transcript_path()}")


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return replayed_store(tmp_path_factory.mktemp("browse"))


@pytest.fixture()
def store(store_file: Path) -> Iterator[StateStore]:
    opened = open_store(store_file, read_only=True)
    yield opened
    opened.close()


@pytest.fixture()
def client(store: StateStore) -> TestClient:
    return TestClient(create_app(store, store_label="test"), base_url="http://127.0.0.1")


@pytest.fixture()
def ref(store: StateStore) -> ConversationRef:
    return find_conversation(store, TITLE)


def _ids(html: str, cls: str) -> set[int]:
    return {int(m) for m in re.findall(rf'<article class="msg [^"]*{cls}[^"]*" id="m(\d+)"', html)}


def test_conversations_page_lists_the_conversation_with_its_counts(
        client: TestClient, store: StateStore, ref: ConversationRef) -> None:
    html = client.get("/").text
    ids = [s.id for s in ref.sessions]
    committed = [r for r in store.list_receipts(ids) if r.status == "committed"]  # type: ignore[attr-defined]
    requests = store.list_requests(ids)  # type: ignore[attr-defined]
    assert len(committed) >= 3 and len(ref.sessions) == len(committed) + 1  # each rotated
    row = re.search(rf'<tr><td[^>]*><a href="/c/{ref.id}">.*?</tr>', html, re.S)
    assert row is not None and TITLE in row.group(0)
    cells = re.findall(r'<td class="n">([^<]*)</td>', row.group(0))
    assert cells[-2:] == [str(len(requests)), str(len(committed))]


def test_model_view_dims_exactly_what_the_last_request_did_not_send(
        client: TestClient, store: StateStore, ref: ConversationRef) -> None:
    ids = [s.id for s in ref.sessions]
    last = store.list_requests(ids)[-1]  # type: ignore[attr-defined]
    sent = {e for e in decode_entries(last.entries) if isinstance(e, int)}
    rows = {r.id for s in ref.sessions for r in store.all_messages(s.id)}
    model = client.get(f"/c/{ref.id}?view=model").text
    full = client.get(f"/c/{ref.id}").text
    shown = {int(m) for m in re.findall(r'id="m(\d+)"', model)}
    assert shown == rows  # every stored message of the lineage, once (summaries in markers)
    assert _ids(model, "dimmed") == rows - sent and rows - sent
    assert not _ids(full, "dimmed")  # the full transcript dims nothing
    assert 'class="on" id="model-view"' in model and 'class="on" id="full-view"' in full


def test_each_committed_compaction_is_a_marker_with_its_summary_receipt_and_diff(
        client: TestClient, store: StateStore, ref: ConversationRef) -> None:
    ids = [s.id for s in ref.sessions]
    receipts = store.list_receipts(ids)  # type: ignore[attr-defined]
    html = client.get(f"/c/{ref.id}?view=model").text
    markers = re.findall(r'<section class="marker" id="compaction-(\d+)"', html)
    assert markers == [str(n) for n, r in enumerate(receipts, 1) if r.status == "committed"]
    assert len(markers) < len(receipts)  # the declined attempts are there too, folded
    rows = {r.id: r for s in ref.sessions for r in store.all_messages(s.id)}
    for number, receipt in enumerate(receipts, 1):
        block = re.search(rf'id="compaction-{number}".*?</(section|details)>', html, re.S)
        assert block is not None
        text = block.group(0)
        if receipt.status != "committed":
            assert f"{receipt.status} ({receipt.outcome})" in text
            assert receipt.notes and str(escape(receipt.notes[0])) in text
            continue
        assert f"{receipt.tokens_before:,} → {receipt.tokens_after:,} tokens" in text
        assert receipt.trigger in text and str(receipt.decided_by) in text
        assert f"{receipt.threshold_tokens:,}" in text
        came_in = [i for i in decode_entries(receipt.after_ids)
                   if i not in set(decode_entries(receipt.before_ids))]
        summary = [rows[i] for i in came_in if is_summary(rows[i].message)]
        assert summary, "a summarised compaction adds a summary row"
        # the summary's text is on the page, inside its marker (escaped)
        first_line = text_of(summary[0].message).splitlines()[0]
        assert str(escape(first_line)) in text
        assert f"{len(came_in)} came in" in text


def test_a_request_page_shows_exactly_what_the_model_received(
        client: TestClient, store: StateStore, ref: ConversationRef) -> None:
    records = store.list_requests([s.id for s in ref.sessions])  # type: ignore[attr-defined]
    for n in (1, len(records) // 2, len(records)):
        record = records[n - 1]
        html = client.get(f"/c/{ref.id}/r/{n}").text
        assert f'<span id="request-tokens">{record.tokens:,}</span>' in html
        sent = rebuild_request(store, record)  # type: ignore[arg-type]
        assert html.count('<div class="part">') == len(sent)
        assert f"cacheable prefix</b>{record.prefix_tokens:,}" in html
        if n > 1:
            previous = decode_entries(records[n - 2].entries)
            added = [e for e in decode_entries(record.entries) if e not in set(previous)]
            assert f"{len(added)} added" in html
    assert client.get(f"/c/{ref.id}/r/{len(records) + 1}").status_code == 404
    assert client.get(f"/c/{ref.id}/r/0").status_code == 404


def test_search_highlights_the_match_and_links_to_the_message(
        client: TestClient, ref: ConversationRef) -> None:
    html = client.get("/search", params={"q": "reproduce_bug"}).text
    assert "<mark>reproduce_bug</mark>" in html
    link = re.search(rf'href="/c/{ref.id}\?at=(\d+)#m(\d+)"', html)
    assert link is not None and link.group(1) == link.group(2)
    page = client.get(f"/c/{ref.id}?at={link.group(1)}").text
    assert f'id="m{link.group(1)}"' in page


def test_pages_cover_every_message_once_and_at_finds_its_page(
        store: StateStore, ref: ConversationRef) -> None:
    first = conversation_page(store, ref, model_view=True, page_size=5)
    seen: list[int] = []
    markers: list[int] = []
    requests: list[int] = []
    for n in range(1, first.pages + 1):
        page = conversation_page(store, ref, model_view=True, page=n, page_size=5)
        seen += [i.message.id for i in page.items if i.message]
        markers += [i.receipt.number for i in page.items if i.receipt]
        requests += [i.request.number for i in page.items if i.request]
    whole = conversation_page(store, ref, model_view=True, page_size=None)
    assert seen == [i.message.id for i in whole.items if i.message]
    assert sorted(markers) == list(range(1, len(markers) + 1))  # each marker on one page
    assert requests == list(range(1, first.requests + 1))  # each request's mark, in order
    target = seen[-7]
    found = conversation_page(store, ref, model_view=True, at=target, page_size=5)
    assert target in [i.message.id for i in found.items if i.message]


def test_the_planted_secret_never_reaches_a_page(
        client: TestClient, store: StateStore, ref: ConversationRef, store_file: Path) -> None:
    with sqlite3.connect(store_file) as conn:  # the store keeps it verbatim
        assert conn.execute("SELECT count(*) FROM messages WHERE content LIKE ?",
                            (f"%{SECRET}%",)).fetchone()[0] >= 1
    count = len(store.list_requests([s.id for s in ref.sessions]))  # type: ignore[attr-defined]
    pages = ["/", f"/c/{ref.id}", f"/c/{ref.id}?view=model", "/search?q=OPENAI_API_KEY",
             f"/search?q={SECRET}", *[f"/c/{ref.id}/r/{n}" for n in range(1, count + 1)]]
    for url in pages:
        html = client.get(url).text
        assert SECRET not in html and SECRET[8:] not in html, url
    assert "OPENAI_API_KEY=[REDACTED]" in client.get(f"/c/{ref.id}").text
    export = conversation_html(store, ref)
    assert SECRET[8:] not in export and "OPENAI_API_KEY=[REDACTED]" in export


def test_read_only_routes_and_bad_requests(client: TestClient) -> None:
    assert client.post("/").status_code == 405
    assert client.get("/c/no-such-conversation").status_code == 404
    assert "no conversation or session" in client.get("/c/no-such-conversation").text
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400
    assert client.get("/c/last?page=zzz&at=").status_code == 200  # junk params: defaults


def test_a_live_writer_s_new_message_shows_on_the_next_request(
        store_file: Path, tmp_path: Path) -> None:
    copy = tmp_path / "live.db"
    with sqlite3.connect(store_file) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    reader = open_store(copy, read_only=True)
    writer = open_store(copy)
    try:
        client = TestClient(create_app(reader), base_url="http://127.0.0.1")
        ref = find_conversation(reader, TITLE)
        before = client.get(f"/c/{ref.id}?page=999").text
        writer.append_messages(ref.tip.id, [{"role": "user", "content": "a brand new question"}])
        after = client.get(f"/c/{ref.id}?page=999").text
        assert "a brand new question" not in before and "a brand new question" in after
    finally:
        writer.close()
        reader.close()


def test_a_store_without_requests_says_so_and_still_shows_the_transcript(
        tmp_path: Path) -> None:
    path = replayed_store(tmp_path / "plain", record_requests=False)
    with open_store(path, read_only=True) as store:  # type: ignore[attr-defined]
        client = TestClient(create_app(store), base_url="http://127.0.0.1")
        ref = find_conversation(store, TITLE)
        html = client.get(f"/c/{ref.id}?view=model").text
        assert 'id="no-requests"' in html and "records no requests" in html
        rows = [r for s in ref.sessions for r in store.all_messages(s.id)]
        shown = {int(m) for m in re.findall(r'id="m(\d+)"', html)}
        assert shown == {r.id for r in rows}
        # model view falls back to the live window
        window = {r.id for r in rows if r.active and r.session_id == ref.tip.id}
        assert _ids(html, "dimmed") == {r.id for r in rows} - window
        assert client.get(f"/c/{ref.id}/r/1").status_code == 404
        assert "–" in client.get("/").text  # requests column: none recorded


def test_sessions_export_html_is_one_self_contained_redacted_page(
        store_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "conversation.html"
    done = subprocess.run(
        [str(HERMES_HOST), "sessions", "export", TITLE, "--format", "html", "-o", str(out),
         "--store", str(store_file)],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "HERMES_HOST_HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    html = out.read_text(encoding="utf-8")
    assert "<style>" in html and ".marker" in html  # the CSS inline
    assert not re.search(r'\b(?:src|href|action)="(?!#)', html)  # only in-page links
    assert "http://" not in html.split("</style>")[0] and "@import" not in html
    assert SECRET[8:] not in html and "OPENAI_API_KEY=[REDACTED]" in html
    with open_store(store_file, read_only=True) as store:  # type: ignore[attr-defined]
        ref = find_conversation(store, TITLE)
        committed = [r for r in store.list_receipts([s.id for s in ref.sessions])
                     if r.status == "committed"]
        rows = {r.id for s in ref.sessions for r in store.all_messages(s.id)}
    assert html.count('<section class="marker"') == len(committed)
    assert {int(m) for m in re.findall(r'id="m(\d+)"', html)} == rows  # every message, 1 page
    assert 'class="msg role-' in html and " dimmed" in html  # the model view
    refused = subprocess.run(
        [str(HERMES_HOST), "sessions", "export", TITLE, "--format", "html", "--only-session",
         "--store", str(store_file)], capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode == 2 and "whole conversation" in refused.stderr


@pytest.mark.parametrize("offset", [-30, -10, 0, 5])
def test_a_long_message_is_cut_on_the_page_and_a_secret_across_the_cut_is_still_redacted(
        offset: int) -> None:
    from hermes_host.browse.views import MAX_SHOWN_CHARS, message_view

    start = MAX_SHOWN_CHARS + offset - len("OPENAI_API_KEY=")
    text = "x " * (start // 2) + f"OPENAI_API_KEY={SECRET} " + "y " * 20_000
    view = message_view(None, {"role": "tool", "content": text}, limit=MAX_SHOWN_CHARS)
    assert len(view.text) == MAX_SHOWN_CHARS and view.cut > 30_000
    for n in range(12, len(SECRET)):  # not even a piece of it
        assert SECRET[8:n] not in view.text


def test_browse_refuses_a_missing_store_and_a_taken_port(tmp_path: Path, store_file: Path) -> None:
    import socket

    from click.testing import CliRunner

    from hermes_host.cli import cli

    env = {"HERMES_HOST_HOME": str(tmp_path / "home")}
    missing = CliRunner().invoke(cli, ["browse", "--store", str(tmp_path / "none.db")], env=env)
    assert missing.exit_code == 2 and "no store here yet" in missing.output
    assert not (tmp_path / "none.db").exists()  # nothing created
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = CliRunner().invoke(cli, ["browse", "--store", str(store_file), "--port",
                                        str(port)], env=env)
    assert busy.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in busy.output
