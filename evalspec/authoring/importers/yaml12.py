"""Source files read as YAML 1.2 (core schema), as the platforms that wrote them read them.

PyYAML reads YAML 1.1, where `yes`, `no`, `on`, `off` are booleans, `1:20` is a number and
`2024-01-01` a date. Rasa reads YAML 1.2: there `- user: yes` sends the text "yes". Only `true` /
`false` are booleans, `null` / `~` / nothing null, and numbers are decimal, `0o` octal or `0x` hex.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"
_DROPPED = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}
_CORE = [
    (_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    (_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")),
    (_FLOAT, re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+.0123456789")),
    (_NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]),
]


class Yaml12Loader(yaml.SafeLoader):
    """A safe loader with YAML 1.2's core schema for plain scalars (`yes` stays text)."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT, _FLOAT, _NULL, *_DROPPED)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, _regexp, _first in _CORE:
    Yaml12Loader.add_implicit_resolver(_tag, _regexp, _first)


def _int(loader: Yaml12Loader, node: yaml.Node) -> int:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if text.startswith(("0o", "0x")):
        return int(text, 0)
    return int(text, 10)


def _float(loader: Yaml12Loader, node: yaml.Node) -> float:
    text = str(loader.construct_scalar(node)).lower()  # type: ignore[arg-type]
    return float(text.replace(".inf", "inf").replace(".nan", "nan"))


Yaml12Loader.add_constructor(_INT, _int)
Yaml12Loader.add_constructor(_FLOAT, _float)


def load_yaml12(text: str) -> Any:
    """`text` read as YAML 1.2 (raises yaml.YAMLError as PyYAML does)."""
    return yaml.load(text, Loader=Yaml12Loader)  # noqa: S506 - a SafeLoader with YAML 1.2's core schema
