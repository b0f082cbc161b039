"""The host's conformance kit (R-0.5) against the retrieval engine: every generated session
and, when available, every real transcript, through the real fence."""

from __future__ import annotations

import pytest

from hermes_host.testing import EngineConformance
from hermes_retrieval import Retrieval


class TestRetrievalConformance(EngineConformance):
    @pytest.fixture
    def hermes_engine(self) -> Retrieval:
        return Retrieval()
