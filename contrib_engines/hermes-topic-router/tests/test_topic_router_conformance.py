"""The host's conformance kit (R-0.5) against the topic router: every generated session and,
when available, every real transcript, through the real fence."""

from __future__ import annotations

import pytest

from hermes_host.testing import EngineConformance
from hermes_topic_router import TopicRouter


class TestTopicRouterConformance(EngineConformance):
    @pytest.fixture
    def hermes_engine(self) -> TopicRouter:
        return TopicRouter()
