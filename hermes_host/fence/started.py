"""A fenced call in flight: what :class:`~hermes_host.fence.runner.HookRunner` knows about a
call between starting it and stamping its outcome."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hermes_host.fence.provenance import Fenced
from hermes_host.fence.workers import Job

log = logging.getLogger("hermes_host.fence")
"""Problems of fenced calls, at WARNING (tracebacks included)."""


@dataclass
class _Started:
    """A call that is running (or already finished without running: ``outcome`` is set)."""

    plugin: str
    hook: str
    request: BaseModel
    start: float
    deadline: float = 0.0
    timeout: float = 0.0
    firstresult: bool = True
    process: bool = False
    cap: int = 0
    job: Job | None = None
    outcome: Fenced[Any] | None = None
