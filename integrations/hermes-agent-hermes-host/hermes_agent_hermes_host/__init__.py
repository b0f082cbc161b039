"""Hermes Agent ↔ hermes-host: a Hermes ``ContextEngine`` named ``hermes_host``.

Hermes imports :mod:`hermes_agent_hermes_host.plugin` through its ``hermes_agent.plugins``
entry point when ``hermes_host`` is in its ``plugins.enabled``; the engine lives in
:mod:`hermes_agent_hermes_host.engine`.  This package imports nothing at import time.
"""

__all__: list[str] = []
