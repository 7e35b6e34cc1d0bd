"""YAML loading that keeps the line of every key and item, so errors can point at them.

Aliases are expanded by walking the composed node graph; before that walk the size of the expansion
is computed once per node (so a "billion laughs" file is refused without being expanded), and merge
keys (`<<: *base`) are resolved here rather than by PyYAML, so local keys override merged ones
instead of counting as duplicates.
"""

from __future__ import annotations

from typing import Any

import yaml

from evalspec.config.paths import LineMap, PathKey, format_path
from evalspec.config.yamlerrors import plain_yaml_error
from evalspec.config.yamlfixes import mend
from evalspec.core.errors import ConfigError, ControlFlow, Problem

# libyaml's parser when PyYAML was built with it (several times faster); marks are kept either way
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: nodes that aliases may add to one file (docs/en/reports-and-gate.md#errors-and-failures); a larger expansion is refused
MAX_ALIAS_NODES = 10_000
_MERGE_TAG = "tag:yaml.org,2002:merge"


#: typographic quotes a Chinese (or word-processor) keyboard types where YAML quotes were meant
QUOTE_PAIRS = {"“": "”", "‘": "’", "「": "」", "『": "』", "＂": "＂"}


def typographic_quotes(text: str) -> tuple[str, str] | None:
    """(opening, closing) when `text` is wrapped in one pair of typographic quotes (“…”, 「…」, ...) with
    neither inside it; else None. `“好”还是“不好”` is not wrapped."""
    close = QUOTE_PAIRS.get(text[:1])
    if close is None or len(text) < 3 or not text.endswith(close):
        return None
    inner = text[1:-1]
    return None if text[0] in inner or close in inner else (text[0], close)


def load_yaml(text: str, file: str, found: list[Problem] | None = None) -> tuple[Any, LineMap]:
    """Parse `text`; duplicate keys are errors (YAML would silently keep the last). Problems that leave
    the data usable (duplicate keys, a mended full-width colon...) go to `found` when given, else they
    are raised."""
    lines = LineMap(file)
    text, problems = mend(text, file)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, lines
        if message := _alias_problem(node):
            raise ConfigError([*problems, Problem(file, None, "", message)])
        data = _build(loader, node, (), lines, problems)
    except yaml.MarkedYAMLError as exc:
        line, message = plain_yaml_error(exc, text)
        raise ConfigError([*problems, Problem(file, line, "", message)]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([*problems, Problem(file, None, "", f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if problems and found is None:
        raise ConfigError(problems)
    if found is not None:
        found.extend(problems)
    return data, lines


def _alias_problem(root: yaml.Node) -> str | None:
    """Why the alias expansion of `root` is refused (too large, or an alias inside itself), or None."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise _RecursiveAlias(node.start_mark.line + 1)
        active.add(key)
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        total = 1 + sum(size(child) for child in children)
        active.discard(key)
        sizes[key] = total
        return total

    try:
        expanded = size(root) - len(sizes)
    except _RecursiveAlias as exc:
        return f"an alias refers to the node that contains it (line {exc.line}): YAML that contains itself cannot be expanded"
    except RecursionError:
        return "the YAML is nested too deeply"
    if expanded > MAX_ALIAS_NODES:
        return (f"too many aliases: expanding them would add {expanded:,} nodes (at most {MAX_ALIAS_NODES:,} "
                f"per file); write the repeated part out, or use fewer nested aliases")
    return None


class _RecursiveAlias(ControlFlow):
    def __init__(self, line: int) -> None:
        self.line = line


def _pairs(node: yaml.MappingNode) -> list[tuple[yaml.Node, yaml.Node, bool]]:
    """The (key, value, merged) pairs of a mapping, merge keys resolved: merged pairs first, in YAML's
    order of precedence (an earlier merged mapping wins over a later one); local pairs last."""
    merged: list[tuple[yaml.Node, yaml.Node, bool]] = []
    local: list[tuple[yaml.Node, yaml.Node, bool]] = []
    for key_node, value_node in node.value:
        if key_node.tag != _MERGE_TAG:
            local.append((key_node, value_node, False))
            continue
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                raise yaml.constructor.ConstructorError(
                    None, None, "'<<' merges a mapping (or a list of mappings), e.g. '<<: *base'", source.start_mark)
            merged.extend((k, v, True) for k, v, _ in _pairs(source))
    return merged + local


def _fullwidth_commas(node: yaml.SequenceNode, path: PathKey, lines: LineMap, problems: list[Problem]) -> None:
    """`[瑶光，追风]` is one item: a full-width comma does not separate items (quote it when it is meant)."""
    for i, item in enumerate(node.value):
        if isinstance(item, yaml.ScalarNode) and not item.style and "，" in item.value:
            parts = [p.strip() for p in item.value.split("，")]
            problems.append(Problem(lines.file, item.start_mark.line + 1, format_path((*path, i)),
                                    f"'{item.value}' is one item: the full-width comma '，' does not separate list "
                                    f"items — write [{', '.join(parts)}], or quote it if the comma is part of the "
                                    f"text: ['{item.value}']"))


def _build(loader: Any, node: yaml.Node, path: PathKey, lines: LineMap,
           problems: list[Problem]) -> Any:
    lines.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        chosen: dict[str, tuple[yaml.Node, yaml.Node, bool]] = {}
        for key_node, value_node, merged in _pairs(node):
            key = loader.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
            if not isinstance(key, (str, int, float, bool)) or key is None:
                problems.append(Problem(lines.file, key_node.start_mark.line + 1, format_path(path),
                                        f"keys must be plain strings, got {key!r}"))
                continue
            key = str(key) if not isinstance(key, str) else key
            if key in chosen:
                if merged:
                    continue  # an earlier merged mapping wins over a later one
                if not chosen[key][2]:
                    problems.append(Problem(lines.file, key_node.start_mark.line + 1, format_path(path + (key,)),
                                            f"duplicate key '{key}'"))
                del chosen[key]  # a local key overrides a merged one
            chosen[key] = (key_node, value_node, merged)
        out: dict[str, Any] = {}
        for key, (key_node, value_node, _) in chosen.items():
            child = (*path, key)
            lines.lines[child] = key_node.start_mark.line + 1
            out[key] = _build(loader, value_node, child, lines, problems)
        return out
    if isinstance(node, yaml.SequenceNode):
        if node.flow_style:
            _fullwidth_commas(node, path, lines, problems)
        return [_build(loader, item, (*path, i), lines, problems) for i, item in enumerate(node.value)]
    if isinstance(node, yaml.ScalarNode) and not node.style and node.value[:1] in QUOTE_PAIRS \
            and typographic_quotes(node.value):
        lines.plain_quoted.add(path)
    value = loader.construct_object(node, deep=True)  # type: ignore[no-untyped-call]
    if isinstance(node, yaml.ScalarNode) and not node.style and isinstance(value, (bool, int, float)):
        lines.plain_typed[format_path(path)] = node.value
    return value
