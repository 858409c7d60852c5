"""The config's YAML reader: a strict safe loader with size, depth and alias limits.

:func:`parse_yaml` is ``yaml.SafeLoader`` refusing a key given twice in one mapping (PyYAML would
keep the last), naming both lines, and refusing a document larger than :data:`MAX_YAML_NODES`
nodes *once its aliases are expanded* (an "alias bomb": 400 bytes of nested ``&a``/``*a`` make
10**9 list items), nested deeper than :data:`MAX_YAML_DEPTH`, or with a recursive alias --
before anything is built from it (:class:`YamlLimitError`).

Two limits hold while the document is *composed*, before a node past them exists: more than
:data:`MAX_YAML_NODES` nodes as written (a 2 MB list of 10**6 items is refused after its first
10,001 nodes, not after building all of them), and an integer of more than
:data:`MAX_YAML_INT_DIGITS` digits (Python's own ``int()`` limit, which would escape as a bare
ValueError): the error names the key path of the value (``model.hidden[2]``).

Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

from typing import Any

import yaml

from jaxparadigm.config.schema import shown

__all__ = [
    "DuplicateKeyError",
    "MAX_YAML_DEPTH",
    "MAX_YAML_INT_DIGITS",
    "MAX_YAML_NODES",
    "YamlLimitError",
    "parse_yaml",
]

#: The most nodes a config document may have with its aliases expanded (the project's configs
#: have under 200; each node becomes a Python object the schema walks).
MAX_YAML_NODES = 10_000
#: The most digits an integer in a config may have: Python's default int-string limit
#: (``sys.get_int_max_str_digits()``, 4300), checked on the text before ``int()`` is called.
MAX_YAML_INT_DIGITS = 4300
#: The deepest nesting of sequences/mappings a config document may have (the schema is 4 deep).
MAX_YAML_DEPTH = 32


class DuplicateKeyError(yaml.YAMLError):
    """A YAML mapping names the same key twice."""


class YamlLimitError(yaml.YAMLError, ValueError):
    """A YAML document too large (as written or with its aliases expanded), too deep,
    self-referencing, or holding an integer of more than :data:`MAX_YAML_INT_DIGITS` digits."""


_INT_TAG = "tag:yaml.org,2002:int"


def _label(parent, index) -> str | int | None:
    """How a node under ``parent`` at ``index`` is named in a key path: its list index (int), its
    key (str; "" for the root), or None for a mapping key itself."""
    if isinstance(parent, yaml.SequenceNode):
        return int(index)
    if isinstance(index, yaml.ScalarNode):
        return str(index.value)
    return None if isinstance(parent, yaml.MappingNode) else ""


def _key_path(labels: list[str | int | None]) -> str:
    """``model.hidden[2]``; a key's own characters are kept as written (``'.x'`` stays ``.x``)."""
    if None in labels:
        return "a mapping key"
    path = ""
    for part in labels:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part:
            path += f".{part}" if path else part
    return f"key {shown(path)}" if path else "the value"


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    _depth = 0
    _nodes = 0

    def __init__(self, stream):
        super().__init__(stream)
        self._labels: list[str | int | None] = []  # the key path of the node being composed

    def compose_node(self, parent, index):
        """PyYAML's composer recurses once per level: refuse past MAX_YAML_DEPTH at once, past
        MAX_YAML_NODES nodes as written, and an integer longer than MAX_YAML_INT_DIGITS."""
        self._depth += 1
        self._nodes += 1
        self._labels.append(_label(parent, index))
        try:
            line = self.peek_event().start_mark.line + 1
            if self._depth > MAX_YAML_DEPTH:
                raise YamlLimitError(f"nesting deeper than {MAX_YAML_DEPTH} levels at line {line}")
            if self._nodes > MAX_YAML_NODES:
                raise YamlLimitError(
                    f"more than {MAX_YAML_NODES} nodes (keys, values and list items) by line "
                    f"{line}; expected a config of at most {MAX_YAML_NODES} nodes"
                )
            node = super().compose_node(parent, index)
            if isinstance(node, yaml.ScalarNode) and node.tag == _INT_TAG:
                digits = len(node.value.replace("_", "").lstrip("+-"))
                if digits > MAX_YAML_INT_DIGITS:
                    raise YamlLimitError(
                        f"{_key_path(self._labels)}: an integer of {digits} digits at line "
                        f"{line}; expected at most {MAX_YAML_INT_DIGITS} digits"
                    )
            return node
        finally:
            self._depth -= 1
            self._labels.pop()

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
