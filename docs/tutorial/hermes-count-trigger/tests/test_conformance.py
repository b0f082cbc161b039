"""The hermes-host conformance kit against count_trigger."""

from __future__ import annotations

import pytest
from hermes_host.testing import EngineConformance

from hermes_count_trigger import CountTrigger


class TestCountTriggerConformance(EngineConformance):
    @pytest.fixture
    def hermes_engine(self) -> CountTrigger:
        return CountTrigger({"max_messages": 8})
