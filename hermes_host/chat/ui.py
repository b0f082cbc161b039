"""Where the chat controller reports: the :class:`ChatUI` protocol a front end implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class ChatUI(Protocol):
    """Where the controller reports.  The terminal implementation uses rich."""

    def reply(self, text: str) -> None:
        """The model's answer."""

    def info(self, text: str) -> None:
        """Command output and notes."""

    def event(self, text: str) -> None:
        """Host events: the R-10.4 status markers, compaction notes."""

    def error(self, text: str) -> None:
        """Something failed; the text says what and what to do."""

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """A small table (``/sessions``)."""


class StreamingChatUI(ChatUI, Protocol):
    """A UI that shows the answer as it arrives: ``reply_chunk`` for each piece, then
    ``reply_end`` with the whole text (instead of :meth:`ChatUI.reply`)."""

    def reply_chunk(self, text: str) -> None:
        """The next piece of the model's answer."""

    def reply_end(self, text: str) -> None:
        """The answer is complete; ``text`` is all of it (``""``: the model sent none)."""
