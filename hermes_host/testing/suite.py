"""The conformance suite as a test module, for engines tested from the command line::

    pytest --pyargs hermes_host.testing.suite --hermes-engine NAME [--hermes-transcripts DIR]
"""

from __future__ import annotations

from hermes_host.testing.conformance import EngineConformance


class TestEngineConformance(EngineConformance):
    """Every check of the kit against the engine named by ``--hermes-engine``."""
