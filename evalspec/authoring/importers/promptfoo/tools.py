"""A promptfoo model provider's `config.tools` and `tool_choice` as evalspec's `tools:` and
`params.tool_choice`.

promptfoo gives a model provider's tools to the model and records its tool calls as the output: it never
answers them (unless `functionToolCallbacks` runs them in JavaScript). The evalspec provider therefore
reports them (`answer_tool_calls: false`). Tools are converted only where the model is sent the same
tools: OpenAI function tools as written on the chat routes that take them (litellm and promptfoo both turn
them into Anthropic's form for Anthropic models), Anthropic tools on `anthropic/` models as OpenAI
functions (litellm turns them back). Anything else is refused with its reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from evalspec.authoring.importers.promptfoo.source import load_yaml
from evalspec.core.errors import ControlFlow

# the litellm routes that are sent OpenAI function tools as written, by promptfoo and by evalspec
OPENAI_ROUTES = {"openai", "azure", "groq", "mistral", "cerebras", "deepseek", "xai", "openrouter",
                 "together_ai", "fireworks_ai", "ollama_chat"}
FUNCTION_KEYS = {"name", "description", "parameters", "strict"}
# the input_schema keys litellm sends Anthropic (it drops the others; promptfoo sends them)
ANTHROPIC_SCHEMA_KEYS = {"type", "properties", "required", "additionalProperties", "$defs"}
ANTHROPIC_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
OPENAI_CHOICES = ("auto", "none", "required")


class NotExact(ControlFlow):
    """The tools cannot be given to the model as promptfoo gives them: the reason."""


def declares_functions(tools: Any) -> bool:
    """Whether a tool list declares functions the model calls (not only server tools: web search, MCP,
    code execution), or is a file that may."""
    items = tools if isinstance(tools, list) else [tools]
    return any(isinstance(t, str) or isinstance(t, dict) and (
        t.get("type") == "function" or any(k in t for k in ("input_schema", "toolSpec", "functionDeclarations")))
        for t in items)


def load_tools(raw: Any, folder: Path) -> list[Any]:
    """`config.tools` with its `file://tools.yaml|json` references read (one file, or one per item)."""
    if isinstance(raw, str):
        loaded = _file(raw, folder)
        return loaded if isinstance(loaded, list) else [loaded]
    if not isinstance(raw, list):
        raise NotExact(f"tools {type(raw).__name__} (not a list)")
    out: list[Any] = []
    for item in raw:
        loaded = _file(item, folder) if isinstance(item, str) else item
        out.extend(loaded if isinstance(loaded, list) else [loaded])
    return out


def _file(ref: str, folder: Path) -> Any:
    target = ref.removeprefix("file://")
    if not ref.startswith("file://") or Path(target).suffix not in (".yaml", ".yml", ".json"):
        raise NotExact(f"tools {ref!r} (only file://*.yaml|json lists are read)")
    path = (folder / target).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise NotExact(f"tools {ref!r} is outside the config's folder")
    try:
        text = path.read_text(encoding="utf-8-sig")
        data = json.loads(text) if path.suffix == ".json" else load_yaml(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise NotExact(f"tools {ref!r} cannot be read ({type(exc).__name__})") from None
    if "{{" in json.dumps(data, ensure_ascii=False):
        raise NotExact(f"tools {ref!r} hold templates (promptfoo fills them per test)")
    return data


def convert_tools(tools: list[Any], route: str) -> list[dict[str, object]]:
    """The tools as evalspec's OpenAI function list for a litellm `route`, or NotExact."""
    if not tools:
        raise NotExact("an empty tool list")
    if all(isinstance(t, dict) and "function" in t for t in tools):
        return [_openai(t, route) for t in tools]
    if route == "anthropic" and all(isinstance(t, dict) and "input_schema" in t for t in tools):
        return [_anthropic(t) for t in tools]
    kinds = sorted({next((k for k in ("toolSpec", "functionDeclarations", "input_schema", "function")
                          if isinstance(t, dict) and k in t), "other") for t in tools})
    raise NotExact(f"tools in a form ({', '.join(kinds)}) that is not converted for {route}/ models")


def _openai(tool: dict[str, object], route: str) -> dict[str, object]:
    function = tool.get("function")
    if route not in OPENAI_ROUTES | {"anthropic"}:
        raise NotExact(f"OpenAI function tools on {route}/ models (promptfoo and litellm may not send them alike)")
    if tool.get("type") != "function" or set(tool) - {"type", "function"} or not isinstance(function, dict) \
            or not isinstance(function.get("name"), str):
        raise NotExact(f"tool {json.dumps(tool, ensure_ascii=False, default=str)[:80]} (not an OpenAI function tool)")
    if extra := sorted(set(function) - FUNCTION_KEYS):
        raise NotExact(f"tool {function['name']}: function key {', '.join(extra)}, which OpenAI function tools do "
                       "not have (promptfoo sends it as written; evalspec's tools refuse it)")
    if route == "anthropic":
        _anthropic_schema(function["name"], function.get("parameters", {"type": "object"}))
    return tool


def _anthropic(tool: dict[str, object]) -> dict[str, object]:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise NotExact("an Anthropic tool without a name")
    if extra := sorted(set(tool) - {"name", "description", "input_schema"} - ({"type"} if tool.get("type") == "custom"
                                                                                else set())):
        raise NotExact(f"tool {name}: {', '.join(extra)} (litellm does not send it to Anthropic)")
    _anthropic_schema(name, tool["input_schema"])
    function = {"name": name, **({"description": tool["description"]} if "description" in tool else {}),
                "parameters": tool["input_schema"]}
    return {"type": "function", "function": function}


def _anthropic_schema(name: str, schema: Any) -> None:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise NotExact(f"tool {name}: an input schema that is not an object schema")
    if extra := sorted(set(schema) - ANTHROPIC_SCHEMA_KEYS):
        raise NotExact(f"tool {name}: input schema key {', '.join(extra)} (litellm does not send it to Anthropic)")


def convert_choice(choice: Any, route: str) -> Any:
    """`tool_choice` as the OpenAI form litellm reads (and turns into the model's own), or NotExact."""
    if choice in OPENAI_CHOICES or route == "mistral" and choice == "any":
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function" and set(choice) == {"type", "function"} \
            and isinstance(choice["function"], dict) and set(choice["function"]) == {"name"}:
        return choice
    if route == "anthropic" and isinstance(choice, dict):
        if set(choice) == {"type"} and choice["type"] in ANTHROPIC_CHOICES:
            return ANTHROPIC_CHOICES[choice["type"]]
        if set(choice) == {"type", "name"} and choice["type"] == "tool" and isinstance(choice["name"], str):
            return {"type": "function", "function": {"name": choice["name"]}}
    raise NotExact(f"tool_choice {choice!r} on {route}/ models")
