"""The config's YAML reader: a strict safe loader with size, depth and alias limits.

:func:`parse_yaml` is ``yaml.SafeLoader`` refusing a key given twice in one mapping (PyYAML would
keep the last), naming both lines, and refusing a document larger than :data:`MAX_YAML_NODES`
nodes *once its aliases are expanded* (an "alias bomb": 400 bytes of nested ``&a``/``*a`` make
10**9 list items), nested deeper than :data:`MAX_YAML_DEPTH`, or with a recursive alias --
before anything is built from it (:class:`YamlLimitError`).

Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

from typing import Any

import yaml

from jaxparadigm.config.schema import shown

__all__ = [
    "DuplicateKeyError",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "YamlLimitError",
    "parse_yaml",
]

#: The most nodes a config document may have with its aliases expanded (the project's configs
#: have under 200; each node becomes a Python object the schema walks).
MAX_YAML_NODES = 10_000
#: The deepest nesting of sequences/mappings a config document may have (the schema is 4 deep).
MAX_YAML_DEPTH = 32


class DuplicateKeyError(yaml.YAMLError):
    """A YAML mapping names the same key twice."""


class YamlLimitError(yaml.YAMLError):
    """A YAML document too large once its aliases are expanded, too deep, or self-referencing."""


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    _depth = 0

    def compose_node(self, parent, index):
        """PyYAML's composer recurses once per level: refuse past MAX_YAML_DEPTH at once."""
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise YamlLimitError(
                    f"nesting deeper than {MAX_YAML_DEPTH} levels at line "
                    f"{self.peek_event().start_mark.line + 1}"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # unhashable key: SafeLoader reports it
                break
            if first is not None:
                raise DuplicateKeyError(f"duplicate key {shown(key)} at lines {first} and {line}")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expanded_size(root: yaml.Node) -> None:
    """Refuse a node graph whose tree (every alias expanded) exceeds the limits.

    Post-order walk over the *distinct* nodes (an alias is the same node object as its anchor),
    memoising each node's expanded size ``1 + sum(children's sizes)``: linear in the document,
    however large the expansion would be.
    """
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in _children(node))
            if size[key] > MAX_YAML_NODES:
                line = node.start_mark.line + 1
                raise YamlLimitError(
                    f"the value at line {line} expands to more than {MAX_YAML_NODES} nodes "
                    "through its aliases (&anchor/*alias); expected a config of at most "
                    f"{MAX_YAML_NODES} nodes with aliases expanded"
                )
            continue
        if key in size:
            continue
        if depth > MAX_YAML_DEPTH:
            raise YamlLimitError(
                f"nesting deeper than {MAX_YAML_DEPTH} levels at line {node.start_mark.line + 1}"
            )
        on_path.add(key)
        stack.append((node, depth, True))
        for child in _children(node):
            if id(child) in on_path:
                raise YamlLimitError(
                    f"recursive alias at line {child.start_mark.line + 1}: an anchor used "
                    "inside its own value; expected a finite config"
                )
            if id(child) not in size:
                stack.append((child, depth + 1, False))


def parse_yaml(text: str) -> Any:
    """YAML text as plain data (safe types only); DuplicateKeyError for a key given twice;
    :class:`YamlLimitError` for a document over :data:`MAX_YAML_NODES` nodes (aliases expanded),
    deeper than :data:`MAX_YAML_DEPTH`, or with a recursive alias -- checked on the composed node
    graph, before any Python object is built."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()
