"""promptfoo providers as evalspec providers: `openai:`/`anthropic:`/... become `model:`, `http`/URL
providers `http:`, `file://x.py` python providers a `python:` adapter (promptfoo's `call_api(prompt,
options, context)` called from evalspec's `respond(messages, context)`), `echo` a python echo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import regex

from evalspec.authoring.importers.promptfoo.source import Source
from evalspec.core.suggest import slugify

MODEL_PREFIXES = {"openai": "openai", "anthropic": "anthropic", "azure": "azure", "vertex": "vertex_ai",
                  "bedrock": "bedrock", "mistral": "mistral", "groq": "groq", "ollama": "ollama",
                  "google": "gemini", "xai": "xai", "openrouter": "openrouter", "perplexity": "perplexity",
                  "deepseek": "deepseek", "fireworks": "fireworks_ai", "togetherai": "together_ai"}
LITELLM_PREFIX = "litellm"  # `litellm:PROVIDER/NAME` is already a litellm model string
ECHO_FILE = "promptfoo_echo.py"
ECHO_SOURCE = '''"""promptfoo's `echo` provider: the reply is the message sent (written by `evalspec import promptfoo`)."""


def respond(messages, context):
    return messages[-1]["content"]
'''
# promptfoo types evalspec has under another name (SPEC §19); model-graded ones take their value as a rubric

PARAMS = ("temperature", "max_tokens", "top_p", "seed", "stop", "presence_penalty", "frequency_penalty")

ADAPTER = '''"""Calls a promptfoo python provider ({target}) the way evalspec calls providers.

Written by `evalspec import promptfoo`; promptfoo passes the rendered prompt, evalspec the conversation.
"""

import importlib.util
import json
from pathlib import Path

_spec = importlib.util.spec_from_file_location("promptfoo_provider", Path(__file__).parent / {path!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)


def respond(messages, context):
    prompt = messages[-1]["content"] if len(messages) == 1 else json.dumps(messages, ensure_ascii=False)
    result = getattr(_module, {function!r})(prompt, {{"config": {config!r}}}, {{"vars": context["vars"]}})
    if isinstance(result, dict):
        if result.get("error"):
            raise RuntimeError(result["error"])
        return {{"content": str(result.get("output", "")), "cost": result.get("cost")}}
    return str(result)
'''



class Providers(Source):
    def providers(self, raw: Any) -> list[dict[str, Any]]:
        items: list[Any] = raw if isinstance(raw, list) else [raw] if raw is not None else []
        out: list[dict[str, Any]] = []
        for item in items:
            if isinstance(item, dict) and len(item) == 1 and "id" not in item and isinstance(
                    next(iter(item.values())), dict):
                (pid, options), = item.items()
                item = {"id": pid, **options}
            converted = self.provider(item)
            if converted is not None:
                base = slugify(str(converted.pop("_name")))
                converted = {"id": base if base not in {p["id"] for p in out} else f"{base}-{len(out) + 1}",
                             **converted}
                out.append(converted)
        return out

    def provider(self, item: Any) -> dict[str, Any] | None:
        pid = item if isinstance(item, str) else item.get("id") if isinstance(item, dict) else None
        if not isinstance(pid, str):
            self.notes.append(f"provider {item!r}: no id")
            return None
        config = item.get("config") or {} if isinstance(item, dict) else {}
        label = item.get("label") if isinstance(item, dict) else None
        name = label or pid
        if pid.startswith("file://") and pid.split(":", 1)[1].lstrip("/").split(":")[0].endswith(".py"):
            target = pid[len("file://"):]
            file, _, function = target.partition(":")
            stub = f"promptfoo_{slugify(Path(file).stem)}.py"
            relative = self.relative(file, f"provider {pid}")
            if relative is None:
                return None
            self.files[stub] = ADAPTER.format(target=target, path=relative,
                                              function=function or "call_api", config=config)
            return {"_name": name, "python": f"{stub}:respond"}
        if pid in ("http", "https") or pid.startswith(("http://", "https://")):
            return self.http(pid, config, name)
        if pid == "echo":
            self.files[ECHO_FILE] = ECHO_SOURCE
            return {"_name": name, "python": f"{ECHO_FILE}:respond"}
        prefix, sep, model = pid.partition(":")
        if sep and prefix == LITELLM_PREFIX:
            prefix, model = "litellm", model
        if sep and (prefix in MODEL_PREFIXES or prefix == "litellm"):
            for api in ("chat:", "messages:", "completion:"):
                model = model.removeprefix(api)
            if ":" in model:  # image:, video:, embedding:, realtime: ... are not chat models
                self.notes.append(f"provider {pid}: not a chat model")
                return None
            full = model if prefix == "litellm" else f"{MODEL_PREFIXES[prefix]}/{model}"
            out: dict[str, Any] = {"_name": name, "model": full}
            params = {k: config[k] for k in PARAMS if k in config}
            if params:
                out["params"] = params
            base = config.get("apiBaseUrl") or config.get("apiHost")
            if isinstance(base, str):
                out["api_base"] = base if "://" in base else f"https://{base}"
            if isinstance(config.get("apiKey"), str):
                out["api_key"] = config["apiKey"]
            rest = sorted(set(config) - set(PARAMS) - {"apiBaseUrl", "apiHost", "apiKey"})
            if rest:
                self.notes.append(f"provider {pid}: config keys {', '.join(rest)}")
            return out
        self.notes.append(f"provider {pid}: no evalspec equivalent")
        return None

    def http(self, pid: str, config: dict[str, Any], name: str) -> dict[str, Any] | None:
        url = config.get("url") or (pid if pid.startswith("http") and "://" in pid else None)
        if not isinstance(url, str):
            self.notes.append(f"provider {pid}: no url")
            return None
        http: dict[str, Any] = {"url": url}
        if config.get("method"):
            http["method"] = str(config["method"]).upper()
        if isinstance(config.get("headers"), dict):
            http["headers"] = {str(k): str(v) for k, v in config["headers"].items()}
        if "body" in config:
            http["body"] = _swap_prompt(config["body"])
        transform = config.get("transformResponse")
        if isinstance(transform, str) and (m := regex.fullmatch(r"\s*json\.([A-Za-z_][\w.\[\]]*)\s*", transform)):
            http["response"] = m.group(1)
        elif transform is not None:
            self.notes.append(f"provider {pid}: transformResponse {transform!r} (give `response:` as JMESPath)")
        rest = sorted(set(config) - {"url", "method", "headers", "body", "transformResponse"})
        if rest:
            self.notes.append(f"provider {pid}: config keys {', '.join(rest)}")
        return {"_name": name if name not in ("http", "https") else "http", "http": http}

    def judge(self, raw: Any) -> Any:
        """`defaultTest.options.provider` (promptfoo's grader) as the suite's `judge:`."""
        if isinstance(raw, dict) and isinstance(raw.get("text"), (str, dict)):
            raw = raw["text"]  # {text: ..., embedding: ...}
        converted = self.provider(raw)
        if converted is None:
            return None
        converted.pop("_name", None)
        if set(converted) == {"model"}:
            return converted["model"]
        return converted if "model" in converted else None

def _swap_prompt(value: Any) -> Any:
    """promptfoo's `{{prompt}}` is the message evalspec sends: `{{ message }}`."""
    if isinstance(value, str):
        return regex.sub(r"\{\{\s*prompt\s*\}\}", "{{ message }}", value)
    if isinstance(value, dict):
        return {k: _swap_prompt(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap_prompt(v) for v in value]
    return value

