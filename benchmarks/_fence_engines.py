"""Engines for ``bench_fence.py``, in a module of their own so that a worker process of
``fence.isolation: process`` can import them (a class defined in ``__main__`` cannot be)."""

from __future__ import annotations

import os
import re
import time

from hermes_host import hookimpl
from hermes_host.models import (
    CompressDecision,
    SelectRequest,
    SelectResult,
    ShouldCompressRequest,
)


class Trivial:
    read_only_messages = True  # messages shared, not copied (issue 15)

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        return CompressDecision(compress=False, reason="below_threshold")

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        return SelectResult(messages=request.messages)


class Sharing:
    """``select_context`` that hands back the very (read-only) message objects it was given
    (``model_construct``: no pydantic copy), so the fence's splice compare is by identity."""

    read_only_messages = True

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        return SelectResult.model_construct(messages=request.messages, decision={}, state=None)


class Hostile:
    """``should_compress`` misbehaves as ``behaviour`` says (see bench_fence's hostile rows)."""

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        b = self.behaviour
        if b == "hang":
            while True:
                time.sleep(0.01)
        if b == "regex":  # ~1 s of GIL-holding C on this machine (x4 per +2 characters)
            re.match(r"(a+)+$", "a" * 24 + "b")
        if b == "late":
            time.sleep(1.5)
        if b == "raise":
            raise RuntimeError("hostile")
        if b == "huge":
            return CompressDecision(compress=False, reason="x" * 100_000_000)
        if b == "os_exit":
            os._exit(7)
        return CompressDecision(compress=False)
