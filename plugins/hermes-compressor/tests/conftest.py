"""Fixtures of the hermes-compressor tests (helpers live in compressor_helpers.py)."""

from __future__ import annotations

import pytest
from compressor_helpers import RecordingSummarizer

from hermes_compressor import Compressor


@pytest.fixture
def recorder() -> RecordingSummarizer:
    return RecordingSummarizer()


@pytest.fixture
def engine(recorder: RecordingSummarizer) -> Compressor:
    return Compressor(summarizer=recorder, fallback=RecordingSummarizer(calls_llm=False))
