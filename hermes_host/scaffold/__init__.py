"""``hermes-host plugin new``: render a complete, installable engine distribution.

The templates under ``templates/`` are ordinary files whose names and text hold
``{{placeholder}}`` tokens (see :class:`EngineNames`).  Rendering is plain token
substitution — no template engine — so what a template shows is exactly what the author gets.
The rendered distribution is green out of the box: ``pip install -e DIR`` then ``pytest DIR``
runs its unit tests and the conformance kit (:mod:`hermes_host.testing`).
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RESERVED_DISTRIBUTIONS", "TEMPLATE_DIR", "EngineNames", "ScaffoldError", "render"]

TEMPLATE_DIR = Path(__file__).parent / "templates"
_TEMPLATE_SUFFIX = ".tmpl"
_NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
_ENGINE_GROUP = "hermes_host.context_engines"

RESERVED_DISTRIBUTIONS = frozenset({
    "hermes-host", "hermes-compressor", "hermes-retrieval", "hermes-topic-router",
    "hermes-store-postgres",
})
"""Distributions of the hermes-host project itself: a scaffold never takes their names, even
where they are not installed (installing it would replace the real one)."""


class ScaffoldError(Exception):
    """The scaffold cannot be rendered; ``str()`` is the user-facing message."""


@dataclass(frozen=True)
class EngineNames:
    """Every spelling of one engine name the templates need.

    ``plugin new drop-stale`` gives the entry-point name ``drop_stale`` (what users type in
    ``config.yaml``), the distribution ``hermes-drop-stale``, the package
    ``hermes_drop_stale`` and the class ``DropStaleEngine``.
    """

    name: str
    dist: str
    package: str
    class_name: str

    @classmethod
    def from_name(cls, raw: str) -> EngineNames:
        """Validate ``raw`` and derive the other spellings; a clear error names the rule."""
        candidate = raw.strip()
        for prefix in ("hermes-", "hermes_"):
            if candidate.startswith(prefix) and len(candidate) > len(prefix):
                candidate = candidate[len(prefix) :]
        if not _NAME_RE.match(candidate):
            raise ScaffoldError(
                f"invalid engine name {raw!r}: use lower-case letters, digits and single "
                "'-' or '_' separators, starting with a letter (e.g. 'drop-stale')"
            )
        snake = candidate.replace("-", "_")
        class_name = "".join(part.capitalize() for part in snake.split("_")) + "Engine"
        return cls(
            name=snake,
            dist=f"hermes-{snake.replace('_', '-')}",
            package=f"hermes_{snake}",
            class_name=class_name,
        )

    def substitutions(self) -> dict[str, str]:
        return {
            "{{name}}": self.name,
            "{{dist}}": self.dist,
            "{{package}}": self.package,
            "{{class_name}}": self.class_name,
        }


def _fill(text: str, names: EngineNames) -> str:
    for token, value in names.substitutions().items():
        text = text.replace(token, value)
    leftover = re.search(r"\{\{\w+\}\}", text)
    if leftover:  # a template typo must fail loudly, not ship a broken file
        raise ScaffoldError(f"template token {leftover.group(0)} has no value")
    return text


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def _check_free(names: EngineNames) -> None:
    """Refuse names that collide with a real distribution (installed, or one of this
    project's) or an installed engine's entry-point name (issue 12): ``pip install -e`` of the
    scaffold would replace that distribution, or two engines would share one name."""
    wanted = _normal(names.dist)
    hint = (f"choose another name (e.g. 'my-{names.name.replace('_', '-')}'); installing it "
            "would replace that distribution")
    for dist in importlib.metadata.distributions():
        found = dist.metadata["Name"] or ""
        if found and _normal(found) == wanted:
            raise ScaffoldError(f"{names.dist} is already a distribution (installed: "
                                f"{found} {dist.version}); {hint}")
    if wanted in RESERVED_DISTRIBUTIONS:
        raise ScaffoldError(f"{names.dist} is already a distribution (one of hermes-host's "
                            f"own); {hint}")
    for ep in importlib.metadata.entry_points(group=_ENGINE_GROUP):
        if ep.name == names.name:
            owner = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else ep.value
            raise ScaffoldError(
                f"an installed engine is already called {names.name!r} ({owner}); choose "
                "another name, or config.yaml could not tell the two apart"
            )


def render(raw_name: str, directory: str | Path = ".") -> tuple[EngineNames, Path, list[Path]]:
    """Write the distribution for engine ``raw_name`` into ``directory/<dist>``.

    Returns the derived names, the distribution root and the files written.  Refuses to
    write into an existing non-empty folder, so nothing of the author's is ever overwritten,
    and refuses a name another distribution or installed engine already has.
    """
    names = EngineNames.from_name(raw_name)
    _check_free(names)
    root = Path(directory).expanduser() / names.dist
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"{root} already exists and is not empty; choose another --dir")
    written: list[Path] = []
    for template in sorted(TEMPLATE_DIR.rglob(f"*{_TEMPLATE_SUFFIX}")):
        relative = template.relative_to(TEMPLATE_DIR).as_posix()[: -len(_TEMPLATE_SUFFIX)]
        target = root / _fill(relative, names)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_fill(template.read_text(encoding="utf-8"), names), encoding="utf-8")
        written.append(target)
    return names, root, written
