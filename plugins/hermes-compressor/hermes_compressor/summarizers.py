"""Where the compression pass gets its summarisers (:class:`Summarizers`, resolved by the
engine) and the wrapper that counts the LLM calls made through one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hermes_host.llm.base import Summarizer, SummaryJob

__all__ = ["Summarizers"]


@dataclass
class Summarizers:
    """Where the pass gets its summarisers (resolved by the engine, cached per settings)."""

    primary: Callable[[], Summarizer]
    micro: Callable[[int], Summarizer]
    fallback: Callable[[], Summarizer]


class _Counted:
    """A summariser that counts the LLM calls made through it (``llm_calls``)."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.calls_llm: bool = bool(inner.calls_llm)
        self.calls = 0

    def summarize(self, job: SummaryJob) -> str:
        if self.calls_llm:
            self.calls += 1
        return self.inner.summarize(job)


def _calls_llm(summarizers: Summarizers) -> bool:
    """Whether the primary summariser is an LLM (one that cannot be built, e.g. for a missing
    key, counts as one: its failure is handled where it is called)."""
    try:
        return bool(summarizers.primary().calls_llm)
    except Exception:
        return True
