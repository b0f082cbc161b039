"""``hermes-host browse``: a local, read-only web app that shows what the model saw (issue 29).

Server-rendered with Starlette and Jinja2 on uvicorn: well-kept, small libraries, no
JavaScript build step, and Starlette is plain ASGI.  :mod:`.views` builds what each page
shows from the store (redacted), :mod:`.render` renders the package's templates,
:mod:`.app` maps URLs to pages; :func:`conversation_html` is the same conversation page as one
self-contained file (``sessions export --format html``).
"""

from __future__ import annotations

from hermes_host.store import StateStore
from hermes_host.store.conversations import ConversationRef

from .render import render
from .views import conversation_page

__all__ = ["conversation_html"]


def conversation_html(store: StateStore, ref: ConversationRef) -> str:
    """The whole conversation in model view (every message, every compaction marker), as one
    HTML file with its CSS inline and no link to anything outside it."""
    view = conversation_page(store, ref, model_view=True, page_size=None)
    return render("conversation.html", static=True, p=view, store_label="",
                  page_href=lambda n, model: "", msg_href=lambda row: f"#m{row}")
