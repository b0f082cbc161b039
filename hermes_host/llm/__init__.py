"""The auxiliary LLM shared by all engines (see :mod:`hermes_host.llm.base`)."""

from hermes_host.llm.base import (
    PermanentSummaryError,
    SummaryError,
    SummaryJob,
    Summarizer,
    TransientSummaryError,
)

__all__ = [
    "PermanentSummaryError",
    "SummaryError",
    "SummaryJob",
    "Summarizer",
    "TransientSummaryError",
]
