"""Documentation drift is a red test (R-0.5): every hookspec is documented in
``docs/hooks.md`` with its exact signature, call style and default timeout, and has at least
one test named after it (datasette's pattern)."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_host import hookspecs

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "hooks.md"
SPEC_ATTR = f"{hookspecs.PROJECT_NAME}_spec"


def _specs() -> dict[str, Callable[..., Any]]:
    return {
        name: obj
        for name, obj in vars(hookspecs).items()
        if callable(obj) and getattr(obj, SPEC_ATTR, None) is not None
    }


def _annotation(value: Any) -> str:
    # hookspecs.py uses ``from __future__ import annotations``: annotations are source text.
    return value if isinstance(value, str) else inspect.formatannotation(value)


def render_signature(name: str, func: Callable[..., Any]) -> str:
    """``should_compress(request: ShouldCompressRequest) -> CompressDecision | None``."""
    sig = inspect.signature(func)
    params = []
    for param in sig.parameters.values():
        text = param.name
        if param.annotation is not param.empty:
            text += f": {_annotation(param.annotation)}"
        params.append(text)
    rendered = f"{name}({', '.join(params)})"
    if sig.return_annotation is not sig.empty:
        rendered += f" -> {_annotation(sig.return_annotation)}"
    return rendered


def _sections() -> dict[str, str]:
    """``docs/hooks.md`` split at ``### `hook_name` `` headings."""
    text = DOCS.read_text(encoding="utf-8")
    parts = re.split(r"^### `([a-z_]+)`\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _test_function_names() -> set[str]:
    roots = [REPO / "tests", *REPO.glob("plugins/*/tests"), *REPO.glob("contrib_engines/*/tests")]
    names: set[str] = set()
    for root in roots:
        for path in root.rglob("test_*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            names.update(
                node.name
                for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name.startswith("test_")
            )
    return names


def _named_after(hook: str, test_name: str) -> bool:
    """Whether ``test_name`` names ``hook`` itself, not a longer hook containing it
    (``test_should_compress_x`` is not a test of ``compress``)."""
    for other in _specs():
        if other != hook and hook in other:
            test_name = test_name.replace(other, "")
    return re.search(rf"(?:^|_){hook}(?:_|$)", test_name) is not None


def test_hookspecs_are_exactly_the_declared_families() -> None:
    assert set(_specs()) == {*hookspecs.LIFECYCLE_HOOKS, *hookspecs.MEMORY_HOOKS}
    assert set(hookspecs.DEFAULT_TIMEOUTS) == set(_specs())


@pytest.mark.parametrize("hook", sorted(_specs()))
def test_every_hook_is_documented_with_its_exact_signature(hook: str) -> None:
    sections = _sections()
    assert hook in sections, f"docs/hooks.md has no '### `{hook}`' section"
    section = sections[hook]
    signature = render_signature(hook, _specs()[hook])
    assert f"`{signature}`" in section, f"docs/hooks.md must show `{signature}`"
    timeout = f"Default timeout: **{hookspecs.DEFAULT_TIMEOUTS[hook]:g} s**"
    assert timeout in section, f"the {hook} section must say {timeout!r}"
    firstresult = getattr(_specs()[hook], SPEC_ATTR)["firstresult"]
    style = "Call style: **first result**" if firstresult else "Call style: **broadcast**"
    assert style in section, f"the {hook} section must say {style!r}"
    assert "Fail policy:" in section and "Example" in section


@pytest.mark.parametrize("hook", sorted(_specs()))
def test_every_hook_has_a_test_named_after_it(hook: str) -> None:
    named = sorted(n for n in _test_function_names() if _named_after(hook, n))
    assert named, f"no test function under tests/ has {hook!r} in its name"


def test_named_after_does_not_confuse_nested_hook_names() -> None:
    assert _named_after("compress", "test_compress_keeps_tail")
    assert not _named_after("compress", "test_should_compress_below_threshold")
    assert _named_after("should_compress", "test_should_compress_below_threshold")
    assert not _named_after("compress", "test_on_pre_compress_collects")
    assert not _named_after("compress", "test_compression_rotates")


def test_the_writing_a_plugin_example_runs_as_documented() -> None:
    """The first Python example of docs/hooks.md is a complete engine: load and call it."""
    from hermes_host import GuardState, ShouldCompressRequest
    from hermes_host.config import parse_config
    from hermes_host.plugins import load_plugins

    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)
    namespace: dict[str, Any] = {}
    exec(compile(blocks[0], "docs/hooks.md", "exec"), namespace)
    engine = namespace["MyEngine"](options={"ratio": 0.25})
    cfg = parse_config({"context": {"engine": "myengine"}, "memory": {"providers": []}})
    pm = load_plugins(cfg, extra={"myengine": engine}).pm

    def ask(tokens: int) -> bool:
        request = ShouldCompressRequest(session_id="s", messages=[], current_tokens=tokens,
                                        context_length=1000, guards=GuardState(now=0.0))
        return bool(pm.hook.should_compress(request=request).compress)

    assert ask(250) is True and ask(249) is False
