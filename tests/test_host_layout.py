"""The layout's one direction (issue 32): the host imports the session package to open
sessions; the session package never imports the host back (it types its host with the
``HostView`` protocol).  Checked in a fresh interpreter, so no other test's imports count."""

from __future__ import annotations

import subprocess
import sys


def test_the_session_package_never_imports_the_host() -> None:
    code = (
        "import sys, hermes_host.session, hermes_host.session.compression, "
        "hermes_host.session.assembly; "
        "print('hermes_host.host' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip()
    assert out == "False"


def test_the_chat_openai_shim_is_gone() -> None:
    """The six-line ``hermes_host.chat_openai`` shim is removed, not kept beside
    ``hermes_host.chat.openai_model``."""
    import importlib.util

    assert importlib.util.find_spec("hermes_host.chat_openai") is None
