"""Shared helpers for the plugin and CLI tests: real installed distributions, made cheaply.

``install_fake_distributions`` writes real ``*.dist-info`` metadata (``METADATA`` and
``entry_points.txt``) plus the plugin modules into a directory and puts it on ``sys.path``:
``importlib.metadata`` and stevedore discover them exactly as they discover a pip-installed
distribution, with no build step.  ``HERMES_HOST_LOAD_PLUGINS`` is set to exactly the names
created, so whatever else is installed in the test environment stays out of the way.
The slow path (a fresh venv and ``pip install``) lives in ``test_plugins_real_dists.py``.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hermes_host.plugins import ENGINE_GROUP, PROVIDER_GROUP, reset_discovery_cache

__all__ = [
    "BROKEN_SOURCE",
    "ENGINE_GROUP",
    "FLAKY_MESSAGE",
    "FLAKY_SECRET",
    "FLAKY_SOURCE",
    "GOOD_ENGINE_SOURCE",
    "LOUD_SOURCE",
    "NOTES_SOURCE",
    "PROVIDER_GROUP",
    "FakeDist",
    "FakeInstall",
    "fake_installation",
    "standard_install",
    "write_config",
]


@dataclass
class FakeDist:
    """One distribution: its name, version, entry points and module sources."""

    name: str
    version: str
    entry_points: Mapping[str, Mapping[str, str]]
    modules: Mapping[str, str] = field(default_factory=dict)


GOOD_ENGINE_SOURCE = '''
from hermes_host import CompressDecision, CompressResult, hookimpl

class GoodEngine:
    """Compresses once the window holds ``min_tokens`` tokens (an engine option); its
    ``compress`` keeps the window (an engine must answer it: ``config validate``, issue 12)."""

    def __init__(self, options=None):
        self.min_tokens = int((options or {}).get("min_tokens", 1000))

    @hookimpl
    def should_compress(self, request):
        if request.current_tokens >= self.min_tokens:
            return CompressDecision(compress=True)
        return CompressDecision(compress=False, reason="below_threshold")

    @hookimpl
    def compress(self, request):
        return CompressResult(messages=request.messages, outcome="noop")
'''


class FakeInstall:
    """A directory of fake installed distributions on ``sys.path``."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self._monkeypatch = monkeypatch
        self.module_names: list[str] = []
        self.names: list[str] = []

    def add(self, dist: FakeDist) -> None:
        info = self.root / f"{dist.name.replace('-', '_')}-{dist.version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist.name}\nVersion: {dist.version}\n",
            encoding="utf-8",
        )
        lines = []
        for group, eps in dist.entry_points.items():
            lines.append(f"[{group}]")
            lines.extend(f"{name} = {value}" for name, value in eps.items())
            self.names.extend(eps)
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for module, source in dist.modules.items():
            (self.root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
            self.module_names.append(module)

    def activate(self, allow: str | None = "") -> None:
        """Put the directory on ``sys.path`` and forget earlier scans.  ``allow``: value of
        ``HERMES_HOST_LOAD_PLUGINS`` (``""`` = exactly the names created; ``None`` = unset)."""
        self._monkeypatch.syspath_prepend(str(self.root))
        if allow is None:
            self._monkeypatch.delenv("HERMES_HOST_LOAD_PLUGINS", raising=False)
        else:
            self._monkeypatch.setenv(
                "HERMES_HOST_LOAD_PLUGINS", allow or ",".join(sorted(set(self.names)))
            )
        reset_discovery_cache()

    def imported(self, module: str) -> bool:
        return module in sys.modules

    def cleanup(self) -> None:
        for module in self.module_names:
            sys.modules.pop(module, None)
        reset_discovery_cache()


def fake_installation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeInstall]:
    """Fixture body: an empty :class:`FakeInstall`; add distributions, then ``activate()``.

    Test modules bind it with ``fake = pytest.fixture(fake_installation, name="fake")``."""
    install = FakeInstall(tmp_path / "site", monkeypatch)
    install.root.mkdir()
    monkeypatch.delenv("HERMES_HOST_TRACE_PLUGINS", raising=False)
    monkeypatch.delenv("HERMES_HOST_CONFIG", raising=False)
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    try:
        yield install
    finally:
        install.cleanup()


LOUD_SOURCE = "raise RuntimeError('a plugin nobody selected must never be imported')\n"
BROKEN_SOURCE = "raise ImportError(\"acme_broken needs 'frobnicate', which is not installed\")\n"
NOTES_SOURCE = '''
from hermes_host import hookimpl

class Notes:
    @hookimpl
    def on_pre_compress(self, request):
        return "remember the deploy window"
'''


def standard_install(fake: FakeInstall) -> None:
    """The set most CLI tests use: a good engine ``alpha`` (``acme-good`` 2.0.1) and a
    provider ``notes``; ``loud`` (raises if ever imported); ``broken`` (ImportError)."""
    fake.add(
        FakeDist(
            "acme-good",
            "2.0.1",
            {ENGINE_GROUP: {"alpha": "acme_good:GoodEngine"},
             PROVIDER_GROUP: {"notes": "acme_notes:Notes"}},
            {"acme_good": GOOD_ENGINE_SOURCE, "acme_notes": NOTES_SOURCE},
        )
    )
    fake.add(FakeDist("acme-loud", "0.1", {ENGINE_GROUP: {"loud": "acme_loud:E"}},
                      {"acme_loud": LOUD_SOURCE}))
    fake.add(FakeDist("acme-broken", "0.0.7", {ENGINE_GROUP: {"broken": "acme_broken:E"}},
                      {"acme_broken": BROKEN_SOURCE}))
    fake.activate()


def write_config(directory: Path, text: str, name: str = "config.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# An installed engine that fails in a chosen way (issue 12: a broken engine must be visible).
# ``RELEASE.set()`` frees a hung call.
FLAKY_SECRET = "sk-ant-api03-" + "Zq7Xw9Vt3Rp5" * 6
FLAKY_MESSAGE = "summariser backend refused the request: quota exhausted"

FLAKY_SOURCE = f'''
import threading

from hermes_host import CompressDecision, SelectResult, hookimpl

RELEASE = threading.Event()
MESSAGE = {FLAKY_MESSAGE!r}
SECRET = {FLAKY_SECRET!r}


class Flaky:
    """Breaks every lifecycle hook it answers in the way ``options["mode"]`` says."""

    def __init__(self, options=None):
        self.mode = (options or {{}}).get("mode", "raise")

    def _fail(self, request, good):
        if self.mode == "raise":
            raise RuntimeError(f"{{MESSAGE}} (key {{SECRET}})")
        if self.mode == "hang":
            RELEASE.wait(60)
            return None
        if self.mode == "dict":
            return good.model_dump()
        if self.mode == "invalid":  # two user messages in a row
            extra = [{{"role": "user", "content": "a"}}, {{"role": "user", "content": "b"}}]
            return SelectResult(messages=[*request.messages, *extra])
        return good

    @hookimpl
    def should_compress(self, request):
        if self.mode == "invalid":
            return "yes, compress"
        return self._fail(request, CompressDecision(compress=False, reason="healthy"))

    @hookimpl
    def select_context(self, request):
        return self._fail(request, SelectResult(messages=request.messages))
'''
