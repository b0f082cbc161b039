"""The host's conformance kit (R-0.5) against the default compressor: every lifecycle hook it
implements, on every generated session and (with ``--hermes-transcripts DIR`` or
``$HERMES_HOST_TRANSCRIPTS``) every real transcript, through the real fence.  The kit's
requests select the offline summariser, so no network is used."""

from __future__ import annotations

import pytest
from hermes_host.testing import EngineConformance

from hermes_compressor import Compressor


class TestCompressorConformance(EngineConformance):
    @pytest.fixture
    def hermes_engine(self) -> Compressor:
        return Compressor()
