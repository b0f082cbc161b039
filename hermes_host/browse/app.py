"""The ``browse`` web app: Starlette routes over one store, opened read-only.

Only ``GET`` routes, each a permalink (``/``, ``/c/<conversation>``, ``/c/<conversation>/r/<n>``,
``/search?q=``); each answers from a fresh read of the store (SQLite reads in autocommit
mode see every committed write of a live agent; WAL lets them run beside it).  A Host header
other than the loopback names (or the host it was bound to) is refused, so a web page the
user visits cannot reach the app through DNS rebinding.  Handlers are plain functions:
Starlette runs them in its thread pool, and the store gives each thread its own connection.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from hermes_host.redact import redact
from hermes_host.store import SessionNotFoundError, StateStore, StoreError
from hermes_host.store.conversations import ConversationRef, find_conversation, not_found_message

from .render import render
from .views import conversation_page, conversation_rows, request_page, search_hits

__all__ = ["LOOPBACK_NAMES", "create_app"]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
_LIST_LIMIT = 50


def _int(value: str | None, default: int | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


def create_app(store: StateStore, *, store_label: str = "",
               allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES) -> Starlette:
    """The app over ``store`` (which the caller opened, read-only where the backend can, and
    closes)."""

    known: dict[str, ConversationRef] = {}

    def find(by: str) -> ConversationRef:
        """:func:`find_conversation`, remembering each conversation found by the session
        named: a lineage's older sessions never change once rotated, so while its newest
        session is still the newest (one step of ``window_marker`` from it, where finding it
        from the root walks every rotation: 900 steps for a lineage of 900), only that session
        is read again."""
        try:
            found = store.resume(by)
        except SessionNotFoundError:
            raise SessionNotFoundError(not_found_message(by, store.location)) from None
        ref = known.get(found.id)
        if ref is not None and store.window_marker(ref.tip.id).session_id == ref.tip.id:
            return ConversationRef(asked=by, session=found,
                                   sessions=[*ref.sessions[:-1], store.get_session(ref.tip.id)])
        ref = known[found.id] = find_conversation(store, by)
        return ref

    def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(render(template, store_label=store_label, **context),
                            status_code=status)

    def error(heading: str, message: str, status: int) -> HTMLResponse:
        return page("error.html", status, heading=heading, message=redact(message))

    def conversations(request: Request) -> Response:
        offset = max(0, _int(request.query_params.get("offset"), 0) or 0)
        try:
            rows = conversation_rows(store, limit=_LIST_LIMIT, offset=offset)
        except StoreError as exc:
            return error("The store could not be read", str(exc), 500)
        return page("conversations.html", rows=rows, offset=offset, limit=_LIST_LIMIT)

    def conversation(request: Request) -> Response:
        by = request.path_params["conversation"]
        params = request.query_params
        model_view = params.get("view") == "model"
        try:
            ref = find(by)
            view = conversation_page(store, ref, model_view=model_view,
                                     page=_int(params.get("page"), 1),
                                     at=_int(params.get("at"), None))
        except SessionNotFoundError as exc:
            return error("No such conversation", str(exc), 404)
        except StoreError as exc:
            return error("The store could not be read", str(exc), 500)

        def page_href(n: int, model: bool) -> str:
            query = {"page": n} | ({"view": "model"} if model else {})
            return f"/c/{view.ref_id}?{urlencode(query)}"

        def msg_href(row: int) -> str:
            query = {"at": row} | ({"view": "model"} if model_view else {})
            return f"/c/{view.ref_id}?{urlencode(query)}#m{row}"

        return page("conversation.html", p=view, page_href=page_href, msg_href=msg_href)

    def one_request(request: Request) -> Response:
        by = request.path_params["conversation"]
        number = request.path_params["n"]
        try:
            ref = find(by)
            view = request_page(store, ref, number)
        except SessionNotFoundError as exc:
            return error("No such conversation", str(exc), 404)
        except StoreError as exc:
            return error("The store could not be read", str(exc), 500)
        if view is None:
            return error("No such request",
                         f"conversation {ref.id} has no request {number} (requests are "
                         "numbered from 1; a store that records no requests has none)", 404)
        return page("request.html", q=view)

    def search(request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        try:
            hits = search_hits(store, query) if query else []
        except StoreError as exc:
            return error("The search failed", str(exc), 500)
        return page("search.html", query=redact(query), hits=hits)

    return Starlette(
        routes=[
            Route("/", conversations),
            Route("/c/{conversation}", conversation),
            Route("/c/{conversation}/r/{n:int}", one_request),
            Route("/search", search),
        ],
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))],
    )
