"""``hermes-host browse`` as a person uses it: the real command in a subprocess, serving a store
that ``hermes-host replay`` wrote from a real transcript, read in a real headless Chromium
(Debian's ``/usr/bin/chromium``, driven by Playwright; nothing is downloaded).

Without that browser the tests skip, saying why — except with ``HERMES_HOST_REQUIRE_BROWSER=1``
(CI sets it; ``.ci/run`` installs ``chromium``), where a missing browser is a failure."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browse_helpers import HERMES_HOST, SECRET, TITLE, replayed_store, transcript_path

from hermes_host.store import open_store
from hermes_host.store.conversations import find_conversation

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def _browser_missing() -> str | None:
    if not CHROMIUM.exists():
        return f"no {CHROMIUM} (apt-get install chromium chromium-driver)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _browser_missing()
    if missing:
        if os.environ.get("HERMES_HOST_REQUIRE_BROWSER") == "1":
            pytest.fail(f"HERMES_HOST_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    if not transcript_path().is_file():
        pytest.skip(f"no transcript at {transcript_path()}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def served(browser: Any, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[str, Path, str]]:
    """``(base URL, store file, sha256 of the store before serving)``."""
    store = replayed_store(tmp_path_factory.mktemp("browse-chromium"))
    digest = hashlib.sha256(store.read_bytes()).hexdigest()
    process = subprocess.Popen(
        [str(HERMES_HOST), "browse", "--store", str(store), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "HERMES_HOST_HOME": str(store.parent / "home")},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, f"no URL printed: {line!r} {process.stderr.read() if process.stderr else ''}"
        yield url.group(0).rstrip("/"), store, digest
    finally:
        process.terminate()
        process.communicate(timeout=30)  # waits, and closes its pipes


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    tab = context.new_page()
    yield tab
    context.close()


def _conversation_id(store: Path) -> str:
    with open_store(store, read_only=True) as opened:  # type: ignore[attr-defined]
        return str(find_conversation(opened, TITLE).id)


def test_the_model_view_shows_markers_summaries_and_dims_what_the_model_no_longer_sees(
        served: tuple[str, Path, str], page: Any) -> None:
    base, store, _ = served
    page.goto(base + "/")
    page.get_by_role("link", name=_conversation_id(store)).click()
    assert page.locator("article.msg.dimmed").count() == 0  # the full transcript first
    page.locator("#model-view").click()
    assert "view=model" in page.url
    dimmed = page.locator("article.msg.dimmed")
    assert dimmed.count() > 0
    opacity = float(dimmed.first.evaluate("e => getComputedStyle(e).opacity"))
    assert opacity < 0.6  # visibly dimmed, not only classed
    assert page.locator("article.msg:not(.dimmed)").count() > 0
    markers = page.locator("section.marker")
    assert markers.count() >= 3
    first = markers.first
    assert first.is_visible()
    assert "summarised" in first.locator("h3").inner_text()
    assert "CONTEXT COMPACTION" in first.locator(".summary").inner_text()
    for label in ("trigger", "decided by", "threshold", "engine", "summariser"):
        assert first.locator("th", has_text=label).count() >= 1
    first.locator("details.diff summary").click()
    assert "came in" in first.locator("details.diff").inner_text()
    page.locator("#full-view").click()
    assert page.locator("article.msg.dimmed").count() == 0
    assert SECRET[8:] not in page.content()


def test_a_request_page_shows_its_size_and_what_changed(
        served: tuple[str, Path, str], page: Any) -> None:
    base, store, _ = served
    cid = _conversation_id(store)
    page.goto(f"{base}/c/{cid}?view=model")
    page.locator("p.reqmark a").nth(2).click()
    assert re.search(rf"/c/{cid}/r/3$", page.url)
    with open_store(store, read_only=True) as opened:  # type: ignore[attr-defined]
        ref = find_conversation(opened, TITLE)
        record = opened.list_requests([s.id for s in ref.sessions])[2]
    assert page.locator("#request-tokens").inner_text() == f"{record.tokens:,}"
    assert "added" in page.locator("#changes").inner_text()
    assert page.locator("div.part").count() >= 2
    assert SECRET[8:] not in page.content()


def test_search_highlights_the_match_and_leads_to_the_message(
        served: tuple[str, Path, str], page: Any) -> None:
    base, _, _ = served
    page.goto(base + "/")
    page.get_by_label("search").fill("reproduce_bug")
    page.get_by_label("search").press("Enter")
    page.wait_for_url(re.compile(r"/search\?q=reproduce_bug"))
    marks = page.locator("mark")
    assert marks.count() >= 1 and marks.first.inner_text().lower() == "reproduce_bug"
    page.locator("div.hit a").first.click()
    target = page.url.split("#m", 1)[1]
    assert page.locator(f"#m{target}").is_visible()
    page.goto(base + "/search?q=OPENAI_API_KEY")
    assert "[REDACTED]" in page.content() and SECRET[8:] not in page.content()


def test_browsing_never_writes_the_store(served: tuple[str, Path, str], page: Any) -> None:
    base, store, digest = served
    page.goto(base + "/")
    page.goto(base + "/search?q=dataset")
    assert hashlib.sha256(store.read_bytes()).hexdigest() == digest
