"""A bounded YAML loader: duplicate keys and alias bombs are parse errors (issue 12)."""

from __future__ import annotations

from typing import Any

import yaml

from hermes_host.config.errors import _cut, _short

__all__ = ["MAX_YAML_DEPTH", "MAX_YAML_NODES"]

MAX_YAML_NODES = 10_000
"""A ``config.yaml`` may hold at most this many YAML nodes with every alias expanded: a
"billion laughs" document of 1 KB would otherwise expand to a billion (issue 12)."""


MAX_YAML_DEPTH = 100
"""A ``config.yaml`` may nest mappings and lists at most this deep: PyYAML composes and
constructs recursively, so a few hundred levels would end in ``RecursionError`` (issue 31);
a real config is a few levels deep."""


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that rejects a duplicate key in a mapping (naming both lines), a
    document nested deeper than :data:`MAX_YAML_DEPTH` and one that expands to more than
    :data:`MAX_YAML_NODES` nodes through its aliases."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self._depth >= MAX_YAML_DEPTH:
            raise yaml.composer.ComposerError(
                None, None,
                f"nested deeper than {MAX_YAML_DEPTH} levels of mappings and lists "
                f"(refused; limit {MAX_YAML_DEPTH})",
                self.peek_event().start_mark,  # type: ignore[no-untyped-call]
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # ``<<: *base`` keys may be overridden, that is their purpose
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base constructor words that error
                break
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {_short(key)} (first on line {first.start_mark.line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _check_expansion(root: yaml.Node) -> None:
    """Count ``root``'s nodes as if every alias were expanded; an alias is one node object
    composed once and referenced many times, so the count is memoised per node."""
    sizes: dict[int, int] = {}
    pending: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in pending:
            raise yaml.YAMLError("a recursive alias (an anchor used inside itself)")
        pending.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        pending.discard(key)
        sizes[key] = total = min(total, MAX_YAML_NODES + 1)
        if total > MAX_YAML_NODES:
            raise yaml.YAMLError(
                f"the document expands to more than {MAX_YAML_NODES:,} nodes through its "
                f"aliases (refused; limit {MAX_YAML_NODES})"
            )
        return total

    size(root)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """``line 4, column 3: duplicate key 'x' (first on line 2)`` — one line, bounded."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: "
        context = f" ({exc.context})" if exc.context else ""
        return _cut(f"{where}{exc.problem}{context}", 400)
    return _cut(str(exc), 400)
