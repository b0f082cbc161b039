"""Session ids and lease holder identities.

A session id reads as its creation time plus a random suffix (``YYYYmmdd_HHMMSS_<6 hex>``,
R-8.1) so listings sort naturally and a human can tell sessions apart.

A lease holder is ``pid:<pid>/host:<hostname>/nonce:<hex>`` (R-10.1: "the holder is
identifiable").  The nonce makes every acquisition distinct, so two threads of one process
never mistake each other's lease for their own.  A holder whose host is this machine and whose
pid is no longer alive is *dead*: its lease can be reclaimed without waiting for the TTL.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import secrets
import socket

__all__ = ["holder_is_dead", "make_holder", "new_session_id", "parse_holder", "pid_alive"]

_HOLDER = re.compile(r"^pid:(\d+)/host:(.*)/nonce:[0-9a-f]+$")


def new_session_id(now: _dt.datetime | None = None) -> str:
    moment = now or _dt.datetime.now()
    return f"{moment:%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"


def make_holder() -> str:
    return f"pid:{os.getpid()}/host:{socket.gethostname()}/nonce:{secrets.token_hex(6)}"


def parse_holder(holder: str) -> tuple[int, str] | None:
    """``(pid, host)`` of a holder string, or ``None`` if it is not in our format."""
    match = _HOLDER.match(holder)
    if not match:
        return None
    return int(match.group(1)), match.group(2)


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def holder_is_dead(holder: str) -> bool:
    """True only when we can *prove* the holder is gone: same host, pid not alive."""
    parsed = parse_holder(holder)
    if parsed is None:
        return False
    pid, host = parsed
    return host == socket.gethostname() and not pid_alive(pid)
