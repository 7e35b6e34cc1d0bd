"""promptfoo prompts rendered with a test's vars (its Nunjucks as far as configs use it) into the messages
of a turn, with the history `_conversation` / `previous_messages` hold in the user's own words."""

from __future__ import annotations

import json
from typing import Any

import regex
import yaml
from jinja2 import Undefined, nodes

from evalspec.authoring.importers.promptfoo.prompt_functions import PromptFunction, PromptFunctions
from evalspec.authoring.importers.promptfoo.source import is_glob, load_yaml
from evalspec.authoring.importers.shapes import mappings
from evalspec.config.templating import LimitedEnvironment, render_limited


def js_text(value: Any) -> Any:
    """A value as Nunjucks prints it (JavaScript's String()): `true`, `false`, nothing for null, `1` for 1.0,
    a list's items joined by commas."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return ",".join(str(js_text(v)) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return value


class _NunjucksEnvironment(LimitedEnvironment):
    """promptfoo's Nunjucks as far as its configs use it, under the limits of a suite's templates (docs/en/reports-and-gate.md#errors-and-failures,
    §17): `| dump`, `| load`, and `{% for key, value in mapping %}` looping over the mapping's items."""

    def __init__(self) -> None:
        super().__init__(autoescape=False, finalize=js_text)
        self.filters["dump"] = lambda v: '""' if isinstance(v, Undefined) else json.dumps(v, ensure_ascii=False)
        self.filters["load"] = json.loads  # promptfoo's own filter: JSON text as data
        self.filters[_PAIRS_FILTER] = lambda v: list(v.items()) if isinstance(v, dict) else v

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        template = super()._parse(source, name, filename)
        for loop in template.find_all(nodes.For):  # its iterable is already wrapped by the loop budget
            if isinstance(loop.target, nodes.Tuple) and len(loop.target.items) == 2 \
                    and isinstance(loop.iter, nodes.Filter) and loop.iter.node is not None:
                loop.iter.node = nodes.Filter(loop.iter.node, _PAIRS_FILTER, [], [], None, None, lineno=loop.lineno)
        return template


_PAIRS_FILTER = "evalspec_nunjucks_pairs"
_env = _NunjucksEnvironment()


def _chat_or_text(text: str) -> str:
    """A chat prompt (JSON or YAML messages, parsed after rendering) stripped; a text prompt as written."""
    stripped = text.strip()
    return stripped if stripped.startswith("[") or stripped.startswith("- role:") else text


class Prompts(PromptFunctions):
    """promptfoo's prompts, rendered with each test's vars into the messages of a turn."""

    def prompts(self, raw: Any) -> list[Any]:
        """Every prompt (one test per prompt when there are several, docs/en/recorded-conversations.md): a `file://` glob names
        several files, and a .txt file holds several prompts between lines of `---`, as promptfoo reads them."""
        items = raw if isinstance(raw, list) else [raw] if raw is not None else []
        return [prompt for k, item in enumerate(items) for prompt in self.prompt(item, f"prompts[{k}]")] \
            or ["{{ prompt }}"]

    def prompt(self, first: Any, where: str) -> list[Any]:
        """The prompts of one `prompts:` entry: string templates, lists of chat messages (templates), or
        functions called for each test (`PromptFunction`)."""
        config = first.get("config") if isinstance(first, dict) else None
        if isinstance(first, dict):
            first = first.get("raw") or first.get("id") or ""
        text = str(first)
        if not text.startswith("file://"):
            return [_chat_or_text(text)]
        target = text[len("file://"):]
        if is_glob(target):
            files = self.source.matches(target)
        elif (function := self.prompt_function(target, config, where)) is not None:
            return function or ["{{ prompt }}"]
        elif (found := self.source.inside(target, where)) is None:
            return ["{{ prompt }}"]
        else:
            files = [found]
        prompts: list[Any] = []
        for file in files:
            if not file.is_file() or file.suffix not in (".txt", ".json", ".md", ".yaml", ".yml", ".j2"):
                self.source.notes.append(f"prompt file://{file.name}: not a readable text/JSON/YAML prompt file")
                continue
            content = file.read_text(encoding="utf-8")
            if file.suffix == ".txt":  # promptfoo: prompts apart by a line of `---`, each trimmed
                parts = [part.strip() for part in regex.split(r"(?m)^[ \t]*---[ \t]*\r?$", content)]
                prompts += [_chat_or_text(part) for part in parts if part]
            else:
                prompts.append(_chat_or_text(content))
        if not prompts:
            self.source.notes.append(f"prompt {text}: no prompt file found")
        return prompts or ["{{ prompt }}"]

    def render(self, template: str, variables: dict[str, object], where: str) -> str | None:
        """The prompt rendered with a test's vars, under a suite template's limits; None (a problem) when
        it cannot be (its syntax, a limit, or an error of its own: promptfoo's Nunjucks is not jinja2)."""
        try:
            return render_limited(_env.from_string(template), variables)
        except Exception as exc:
            self.source.problem(where, f"the prompt could not be rendered with this test's vars: "
                                f"{type(exc).__name__}: {exc}")
            return None

    def messages(self, prompt: Any, variables: dict[str, object], where: str,
                 own: dict[str, object] | None = None) -> list[dict[str, str]]:
        """The test's messages: the rendered prompt, with the history its vars hold (`_conversation`,
        `previous_messages`) as messages of the user's and the assistant's own words, never the template's
        scaffold around them ("\nUser: ..."): a text prompt that lays out a history sends the user's words
        (the test's own var it shows), or else the history's last user message."""
        if isinstance(prompt, PromptFunction):
            given = self.function_prompt(prompt, variables, where)
            if given is None:
                return []
            prompt = _chat_or_text(given)
        history = history_of(variables)
        rendered = self.render(prompt, {**variables, **{k: [] for k in HISTORY_VARS}}, where)
        if rendered is None:
            return []
        stripped = rendered.strip()
        if stripped.startswith("[") or stripped.startswith("- role:"):
            try:
                parsed = json.loads(regex.sub(r",\s*([\]}])", r"\1", stripped)) if stripped.startswith("[") \
                    else load_yaml(stripped)
            except (json.JSONDecodeError, yaml.YAMLError):
                parsed = None
            if isinstance(parsed, list) and all(isinstance(m, dict) and "role" in m for m in parsed):
                chat = [{"role": str(m["role"]), "content": str(m.get("content", ""))} for m in parsed]
                if history and chat and chat[-1]["role"] == "user" and not chat[-1]["content"].strip():
                    return chat[:-1] + _last_exchange_sent(history)
                return chat[:-1] + history + chat[-1:] if history and chat else chat
        if not history and not any(k in str(prompt) for k in HISTORY_VARS):
            return [{"role": "user", "content": rendered}]
        words = [str(v) for k, v in (own or {}).items()
                 if k not in HISTORY_VARS and isinstance(v, str) and v.strip() and v in rendered]
        if words:
            sent = max(words, key=len)
            if rendered.strip() != sent.strip():
                self.source.notes.append(f"{where}: the prompt's text around the user's words (its scaffold) is not sent")
            return [*history, {"role": "user", "content": sent}]
        return _last_exchange_sent(history) if history else [{"role": "user", "content": rendered}]

HISTORY_VARS = ("_conversation", "previous_messages")


def history_of(variables: dict[str, object]) -> list[dict[str, str]]:
    """The messages a test's `previous_messages` ([{user: …} | {assistant: …} | {role, content}]) and then
    `_conversation` ([{input, output}]) vars hold, in the user's and the assistant's words."""
    out: list[dict[str, str]] = []
    for item in mappings(variables.get("previous_messages")):
        if item.get("role") in ("user", "assistant") and "content" in item:
            out.append({"role": str(item["role"]), "content": str(item["content"])})
        else:
            out += [{"role": role, "content": str(item[role])} for role in ("user", "assistant")
                    if isinstance(item.get(role), (str, int, float))]
    for item in mappings(variables.get("_conversation")):
        out += [{"role": role, "content": str(item[key])} for key, role in (("input", "user"), ("output", "assistant"))
                if isinstance(item.get(key), (str, int, float))]
    return out



def _last_exchange_sent(history: list[dict[str, str]]) -> list[dict[str, str]]:
    """A history whose test has no words of its own: the last exchange's user message is sent, its
    recorded reply left out."""
    if len(history) >= 2 and history[-1]["role"] == "assistant" and history[-2]["role"] == "user":
        return history[:-1]
    return history

