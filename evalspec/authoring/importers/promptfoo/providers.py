"""promptfoo providers as evalspec providers: `openai:`/`anthropic:`/`bedrock:`/... become `model:` (the
litellm model string that calls the same API), `http`/URL providers `http:`, `file://x.py` python and
`file://x.js` JavaScript providers a `python:` adapter (promptfoo's `call_api(prompt, options, context)`
or `callApi(prompt, context, options)` called from evalspec's `respond(messages, context)`; JavaScript
through node), `echo` a python echo."""

from __future__ import annotations

import fnmatch
import itertools
import json
from pathlib import Path
from typing import Any

import regex
import yaml

from evalspec.authoring.importers import plain
from evalspec.authoring.importers.promptfoo.http_forms import auth_form, env_refs, response_path
from evalspec.authoring.importers.promptfoo.provider_files import (
    ECHO_FILE,
    ECHO_SOURCE,
    JS_ADAPTER,
    JS_RUNNER_FILE,
    PYTHON_ADAPTER,
)
from evalspec.authoring.importers.promptfoo.runners import JS_RUNNER, runner_source
from evalspec.authoring.importers.promptfoo.source import Part, Source, load_yaml
from evalspec.authoring.importers.promptfoo.tools import (
    NotExact,
    convert_choice,
    convert_tools,
    declares_functions,
    load_tools,
)
from evalspec.core.suggest import slugify

# promptfoo's provider prefix -> litellm's (both call the same service)
MODEL_PREFIXES = {"openai": "openai", "anthropic": "anthropic", "azure": "azure", "vertex": "vertex_ai",
                  "bedrock": "bedrock", "mistral": "mistral", "groq": "groq", "ollama": "ollama",
                  "google": "gemini", "xai": "xai", "openrouter": "openrouter", "perplexity": "perplexity",
                  "deepseek": "deepseek", "fireworks": "fireworks_ai", "togetherai": "together_ai",
                  "cerebras": "cerebras", "replicate": "replicate", "huggingface": "huggingface",
                  "cloudflare-ai": "cloudflare", "cohere": "cohere", "databricks": "databricks",
                  "hyperbolic": "hyperbolic", "nscale": "nscale", "github": "github", "cometapi": "cometapi",
                  "aimlapi": "aiml", "docker": "docker_model_runner", "watsonx": "watsonx",
                  "vercel": "vercel_ai_gateway", "sagemaker": "sagemaker"}
LITELLM_PREFIX = "litellm"  # `litellm:PROVIDER/NAME` is already a litellm model string
# `PREFIX:API:MODEL`: the chat APIs, as the litellm provider that calls them (None: the prefix's own)
CHAT_APIS: dict[tuple[str, str], str | None] = {
    **{(p, api): None for p in MODEL_PREFIXES for api in ("chat", "messages")},
    ("openai", "responses"): "openai/responses", ("openai", "completion"): "text-completion-openai",
    ("azure", "completion"): "azure_text", ("anthropic", "completion"): None,
    ("bedrock", "converse"): "bedrock/converse", ("ollama", "completion"): "ollama",
    ("ollama", "chat"): "ollama_chat", ("huggingface", "text-generation"): None,
    ("cloudflare-ai", "completion"): None,
    # promptfoo's SageMaker model types: the request format the endpoint reads
    ("sagemaker", "openai"): "sagemaker_chat", ("sagemaker", "huggingface"): "sagemaker",
    ("sagemaker", "jumpstart"): "sagemaker", ("sagemaker", "llama"): "sagemaker",
}
NOT_CHAT = {"image", "video", "embedding", "embeddings", "realtime", "live", "assistant", "kb", "audio",
            "transcription", "moderation", "tts", "stt", "voice", "isolation", "alignment", "speech",
            "text-classification", "token-classification", "feature-extraction", "sentence-similarity",
            "classification", "chatkit", "agents", "agent", "foundry-agent", "responses", "completion"}
AGENT_SDKS = {"claude-agent-sdk", "codex-sdk", "agents"}  # agent frameworks, not models
PARAMS = ("temperature", "max_tokens", "top_p", "seed", "stop", "presence_penalty", "frequency_penalty",
          "max_completion_tokens", "reasoning_effort")
PARAM_ALIASES = {"maxTokens": "max_tokens", "maxOutputTokens": "max_tokens", "max_new_tokens": "max_tokens",
                 "max_output_tokens": "max_tokens", "max_gen_len": "max_tokens", "topP": "top_p"}
# Gemini's `generationConfig` keys as litellm's params
GENERATION_CONFIG = {"temperature": "temperature", "maxOutputTokens": "max_tokens", "topP": "top_p",
                     "stopSequences": "stop", "seed": "seed", "presencePenalty": "presence_penalty",
                     "frequencyPenalty": "frequency_penalty"}
# where litellm takes a promptfoo `region:` / `projectId:` (the endpoint called), per litellm provider
REGION_PARAM = {"bedrock": "aws_region_name", "sagemaker": "aws_region_name", "sagemaker_chat": "aws_region_name",
                "vertex_ai": "vertex_location"}
JS_SUFFIXES = (".js", ".mjs", ".cjs")
HTTP_KEYS = {"url", "method", "headers", "body", "transformResponse", "responseParser", "stateful", "auth",
             "maxRetries", "tls", "sessionSource", "sessionParser"}


class Providers(Part):
    """promptfoo's providers (and its grader and embedding model) as evalspec's."""

    def __init__(self, source: Source) -> None:
        super().__init__(source)
        self.session_var: str | None = None  # a var the config sets to a fresh id per test (promptfoo's context.uuid)
        self.names: list[tuple[list[str], str | None]] = []  # each provider's promptfoo id and label -> its id
        self.grading = False  # converting a grader (judge, attacker): it is given no tools

    def providers(self, raw: Any) -> list[dict[str, object]]:
        items: list[Any] = raw if isinstance(raw, list) else [raw] if raw is not None else []
        out: list[dict[str, object]] = []
        self.names = []
        for item in items:
            if isinstance(item, dict) and len(item) == 1 and "id" not in item and isinstance(
                    next(iter(item.values())), dict):
                (pid, options), = item.items()
                item = {"id": pid, **options}
            converted = self.provider(item)
            known = [str(v) for v in ([item] if isinstance(item, str) else [item.get("id"), item.get("label")]
                                      if isinstance(item, dict) else []) if v]
            if converted is not None:
                base = slugify(str(converted.pop("_name")))
                converted = {"id": base if base not in {p["id"] for p in out} else f"{base}-{len(out) + 1}",
                             **converted}
                out.append(converted)
            self.names.append((known, str(converted["id"]) if converted is not None else None))
        return out

    def test_providers(self, refs: Any, where: str) -> list[str] | None:
        """A test's `providers:` (promptfoo's filter: labels, ids or `prefix:*` patterns) as the ids of the
        providers it runs on, or None when it runs on all; a reference to a provider that was not converted
        is noted (the test then runs on the others it names, or is left out)."""
        if refs is None:
            return None
        ids: list[str] = []
        for ref in refs if isinstance(refs, list) else [refs]:
            matched = [(names, pid) for names, pid in self.names
                       if any(fnmatch.fnmatchcase(name, str(ref)) for name in names)]
            ids += [pid for _, pid in matched if pid is not None and pid not in ids]
            if not matched or any(pid is None for _, pid in matched):
                self.source.note(f"{where}: provider {ref!r} (not converted)")
        if not ids:
            self.source.note(f"{where}: runs only on providers that were not converted (left out)")
        return ids

    def provider(self, item: Any) -> dict[str, object] | None:
        pid = item if isinstance(item, str) else item.get("id") if isinstance(item, dict) else None
        if not isinstance(pid, str):
            self.source.notes.append(f"provider {item!r}: no id")
            return None
        config = item.get("config") or {} if isinstance(item, dict) else {}
        if not isinstance(config, dict):
            self.source.notes.append(f"provider {pid}: config {config!r} (not a mapping)")
            return None
        label = item.get("label") if isinstance(item, dict) else None
        name = label or pid
        if pid.startswith("python:") and pid.split(":")[1].endswith(".py"):
            pid = "file://" + pid.removeprefix("python:")  # promptfoo's other spelling of a python provider
        if pid.startswith("file://") and Path(pid.split(":")[1]).suffix in (".yaml", ".yml", ".json"):
            return self.provider_file(pid, item)
        if pid.startswith("file://"):
            return self.file_provider(pid, config, label, name)
        if pid in ("http", "https") or pid.startswith(("http://", "https://")):
            return self.http(pid, config, name)
        if pid == "echo":
            self.source.files[ECHO_FILE] = ECHO_SOURCE
            return {"_name": name, "python": f"{ECHO_FILE}:respond"}
        prefix, sep, rest = pid.partition(":")
        if sep and prefix == LITELLM_PREFIX:
            api, colon, model = rest.partition(":")
            if colon and api in NOT_CHAT - {"completion"}:
                self.source.notes.append(f"provider {pid}: not a chat model")
                return None
            return self.model(pid, model if colon and api == "chat" else rest, config, name)
        if sep and prefix in MODEL_PREFIXES:
            if prefix == "sagemaker" and "transform" in config:
                self.source.notes.append(f"provider {pid}: config.transform (the prompt is rewritten before it is sent: "
                                         "no evalspec equivalent)")
                return None
            full = self.model_string(pid, prefix, rest, config)
            return None if full is None else self.model(pid, full, config, name)
        self.source.notes.append(f"provider {pid}: no evalspec equivalent")
        return None

    def model_string(self, pid: str, prefix: str, rest: str, config: dict[str, object]) -> str | None:
        """The litellm model string of `PREFIX:[API:]MODEL`, or None (noted) when it is not a chat model."""
        api, sep, model = rest.partition(":")
        if prefix == "sagemaker" and not sep:  # `sagemaker:ENDPOINT` with `config.modelType`
            api, sep, model = str(config.get("modelType") or "custom"), ":", rest
        if prefix == "sagemaker" and (prefix, api) not in CHAT_APIS and api != "embedding":
            self.source.notes.append(f"provider {pid}: a SageMaker endpoint of model type '{api}' (litellm reads "
                                     "only OpenAI-style and Hugging Face/JumpStart endpoints)")
            return None
        if sep and (prefix, api) in CHAT_APIS:
            route = CHAT_APIS[prefix, api] or MODEL_PREFIXES[prefix]
        elif sep and api in NOT_CHAT:
            self.source.notes.append(f"provider {pid}: not a chat model")
            return None
        else:
            route, model = MODEL_PREFIXES[prefix], rest  # a model name may hold colons (`nova-pro-v1:0`)
        if model in AGENT_SDKS:
            self.source.notes.append(f"provider {pid}: an agent SDK, not a model (no evalspec equivalent)")
            return None
        if not model or "nova-sonic" in model:  # Nova Sonic is speech to speech
            self.source.notes.append(f"provider {pid}: not a chat model")
            return None
        return f"{route}/{model}"

    def model(self, pid: str, full: str, config: dict[str, object], name: str) -> dict[str, object] | None:
        out: dict[str, object] = {"_name": name, "model": full}
        if full.startswith("openai/responses/"):
            out["client"] = "litellm"  # litellm sends `openai/responses/...` to the Responses API
        params = {k: config[k] for k in PARAMS if k in config}
        params |= {v: config[k] for k, v in PARAM_ALIASES.items() if k in config and v not in params}
        route = full.split("/", 1)[0]
        used = {*PARAMS, *PARAM_ALIASES, "apiBaseUrl", "apiHost", "apiKey"}
        if isinstance(config.get("region"), str) and route in REGION_PARAM:
            params[REGION_PARAM[route]] = config["region"]
            used.add("region")
        if isinstance(config.get("projectId"), str) and route == "vertex_ai":
            params["vertex_project"] = config["projectId"]
            used.add("projectId")
        generation = config.get("generationConfig")
        if isinstance(generation, dict) and set(generation) <= set(GENERATION_CONFIG):
            params |= {GENERATION_CONFIG[k]: v for k, v in generation.items()}
            used.add("generationConfig")
        reasoning = config.get("reasoning")
        if isinstance(reasoning, dict) and set(reasoning) == {"effort"} and "reasoning_effort" not in params:
            params["reasoning_effort"] = reasoning["effort"]  # the Responses API's form
            used.add("reasoning")
        if isinstance(config.get("apiVersion"), str) and route in ("azure", "azure_text"):
            params["api_version"] = config["apiVersion"]
            used.add("apiVersion")
        fmt = config.get("response_format")
        if isinstance(fmt, dict) and (fmt.get("type") in ("json_object", "text") or isinstance(
                fmt.get("json_schema"), dict)):  # the chat completions form, which litellm takes for any route
            params["response_format"] = fmt
            used.add("response_format")
        if isinstance(config.get("instructions"), str) and full.startswith("openai/responses/"):
            out["system"] = config["instructions"]  # the Responses API's system message
            used.add("instructions")
        if "tools" in config and self.grading:  # promptfoo's grader is not given the provider's tools
            used |= {"tools", "tool_choice"}
            self.source.note("judge: config.tools (a grader is not given tools)")
        elif "tools" in config and "functionToolCallbacks" not in config and declares_functions(config["tools"]):
            tools = self.tools(pid, full, config)
            if tools is None:
                return None
            out["tools"], out["answer_tool_calls"] = tools[0], False
            if tools[1] is not None:
                params["tool_choice"] = tools[1]
            used |= {"tools", "tool_choice"}
        if params:
            out["params"] = params
        base = config.get("apiBaseUrl") or config.get("apiHost")
        if isinstance(base, str):
            out["api_base"] = base if "://" in base else f"https://{base}"
        if isinstance(api_key := config.get("apiKey"), str):
            out["api_key"] = env_refs(api_key)
        if rest := sorted(set(config) - used - {"modelType"}):
            self.source.notes.append(f"provider {pid}: config keys {', '.join(rest)}")
        return out

    def tools(self, pid: str, full: str, config: dict[str, object]) -> tuple[list[dict[str, object]], Any] | None:
        """A model provider's function tools and tool_choice as evalspec's (its calls reported, as promptfoo
        records them), or None (noted) when the model would not be given the same tools."""
        route = "openai/responses" if full.startswith("openai/responses/") else full.split("/", 1)[0]
        try:
            tools = convert_tools(load_tools(config["tools"], self.source.path.parent), route)
            choice = convert_choice(config["tool_choice"], route) if "tool_choice" in config else None
        except NotExact as exc:
            self.source.notes.append(f"provider {pid}: {exc}: promptfoo gives the model its tools and records its calls; "
                                     "without the same tools it is another provider (not converted)")
            return None
        return tools, choice

    def provider_file(self, pid: str, item: Any) -> dict[str, object] | None:
        """`file://provider.yaml`: the provider written in a file of its own (its `id`, `config`, `label`)."""
        file = self.source.inside(pid[len("file://"):], f"provider {pid}")
        try:
            loaded = load_yaml(file.read_text(encoding="utf-8")) if file is not None else None
        except (OSError, yaml.YAMLError) as exc:
            self.source.notes.append(f"provider {pid}: cannot read it ({type(exc).__name__})")
            return None
        if not isinstance(loaded, dict) or not isinstance(loaded.get("id"), str) or loaded["id"].startswith(
                "file://") and Path(loaded["id"][len("file://"):]).suffix in (".yaml", ".yml", ".json"):
            self.source.notes.append(f"provider {pid}: not one provider with an id")
            return None
        if isinstance(item, dict) and item.get("label"):
            loaded = {**loaded, "label": item["label"]}
        return self.provider(loaded)

    def file_provider(self, pid: str, config: dict[str, object], label: Any, name: str) -> dict[str, object] | None:
        """`file://x.py[:function]` and `file://x.js|.mjs|.cjs[:export]`: an adapter beside the suite."""
        target = pid[len("file://"):]
        file, _, function = target.partition(":")
        suffix = Path(file).suffix
        if suffix not in (".py", *JS_SUFFIXES):
            why = ("a TypeScript provider: node runs it only with a TS loader; compile it to .js and import "
                   "again" if suffix in (".ts", ".mts", ".cts") else "no evalspec equivalent")
            self.source.notes.append(f"provider {pid}: {why}")
            return None
        relative = self.source.relative(file, f"provider {pid}")
        if relative is None:
            return None
        if suffix == ".py":
            source = PYTHON_ADAPTER.format(target=target, path=relative, function=function or "call_api",
                                           config=_data(config))
        else:
            folder = self.source.relative(".", f"provider {pid}") or "."
            options = {"id": pid, "config": config, **({"label": label} if label else {})}
            self.source.files[JS_RUNNER_FILE] = runner_source(JS_RUNNER)
            source = JS_ADAPTER.format(target=target, path=relative, folder=folder, runner=JS_RUNNER_FILE,
                                       options=_data(options), function=function or None)
        stem = f"promptfoo_{slugify(Path(file).stem)}"
        stub = next(f"{stem}{n or ''}.py" for n in itertools.count()
                    if self.source.files.get(f"{stem}{n or ''}.py", source) == source)  # one file per adapter
        self.source.files[stub] = source
        return {"_name": name, "python": f"{stub}:respond"}

    def http(self, pid: str, config: dict[str, object], name: str) -> dict[str, object] | None:
        url = config.get("url") or (pid if pid.startswith("http") and "://" in pid else None)
        if not isinstance(url, str):
            self.source.notes.append(f"provider {pid}: no url")
            return None
        session = self.session_var if config.get("sessionSource") != "server" else None
        if config.get("sessionSource") == "client":
            session = "sessionId"
        # the source's own text is sent as written: its `${X}` is no environment variable (`$${X}`), while
        # the auth promptfoo reads from the environment (`{{env.X}}`) becomes evalspec's `${X:-}` below
        url, config = plain(url), {**config, **{k: plain(config[k]) for k in ("headers", "body") if k in config}}
        http: dict[str, object] = {"url": self.swap(url, session)}
        if config.get("method"):
            http["method"] = str(config["method"]).upper()
        given = config.get("headers")
        headers = {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}
        if "auth" in config:
            auth = auth_form(config["auth"])
            if auth is None:
                kind = config["auth"].get("type") if isinstance(config["auth"], dict) else config["auth"]
                self.source.notes.append(f"provider {pid}: auth type {kind!r} (no evalspec equivalent; the target "
                                         "refuses calls without it)")
                return None
            where, key, value = auth
            if where == "query":
                sent = str(http["url"])
                http["url"] = sent + ("&" if "?" in sent else "?") + f"{key}={value}"
            else:
                headers[key] = value
        if headers:
            http["headers"] = self.swap(headers, session)
        if "body" in config:
            http["body"] = self.swap(config["body"], session)
        for key in ("signatureAuth", "transformRequest", "tls"):
            if key in config and not (key == "tls" and config[key] in ({}, {"rejectUnauthorized": True})):
                self.source.notes.append(f"provider {pid}: {key} (no evalspec equivalent; the target is not called "
                                         "the same way without it)")
                return None
        parser = "transformResponse" if "transformResponse" in config else "responseParser"
        if config.get(parser) is not None:
            path = response_path(config[parser])
            if path is not None:
                http["response"] = path
            else:
                self.source.notes.append(f"provider {pid}: {parser} {config[parser]!r} (give `response:` as JMESPath)")
        if config.get("stateful") is True:
            http["stateful"] = True
        if config.get("sessionParser") is not None:
            self.source.notes.append(f"provider {pid}: sessionParser {config['sessionParser']!r} (the server's session "
                                     "id is not read back: each message is sent without it)")
        if "maxRetries" in config:
            self.source.notes.append(f"provider {pid}: maxRetries (evalspec retries every call `options.retries` times)")
        if rest := sorted(set(config) - HTTP_KEYS - {"signatureAuth", "transformRequest"}):
            self.source.notes.append(f"provider {pid}: config keys {', '.join(rest)}")
        return {"_name": name if name not in ("http", "https") else "http", "http": http}

    def swap(self, value: Any, session: str | None) -> Any:
        """promptfoo's `{{prompt}}` is the message evalspec sends (`{{ message }}`), `{{env.X}}` the
        environment (`${X:-}`: unset is empty, as in promptfoo); the per-test session var is evalspec's
        `{{ thread_id }}`; a server session var the server never sent is empty."""
        if isinstance(value, str):
            value = regex.sub(r"\{\{\s*prompt\s*\}\}", "{{ message }}", env_refs(value))
            if session:
                value = regex.sub(r"\{\{\s*" + regex.escape(session) + r"\s*\}\}", "{{ thread_id }}", value)
            return regex.sub(r"\{\{\s*sessionId\s*\}\}", "{{ sessionId | default('') }}", value)
        if isinstance(value, dict):
            return {k: self.swap(v, session) for k, v in value.items()}
        if isinstance(value, list):
            return [self.swap(v, session) for v in value]
        return value

    def judge(self, raw: Any) -> Any:
        """`defaultTest.options.provider` (promptfoo's grader) as the suite's `judge:`."""
        if isinstance(raw, dict) and isinstance(raw.get("text"), (str, dict)):
            raw = raw["text"]  # {text: ..., embedding: ...}
        elif isinstance(raw, dict) and "embedding" in raw and "id" not in raw:
            return None  # only an embedding model: the embedder
        self.grading = True
        try:
            converted = self.provider(raw)
        finally:
            self.grading = False
        if converted is None:
            return None
        converted.pop("_name", None)
        if set(converted) == {"model"}:
            return converted["model"]
        return converted if "model" in converted else None

    def embedder(self, raw: Any) -> str | None:
        """`defaultTest.options.provider.embedding` (promptfoo's embedding model for `similar`) as the
        suite's `embedder:`, or None (noted when it names one evalspec cannot call)."""
        found = raw.get("embedding") if isinstance(raw, dict) else None
        pid = found if isinstance(found, str) else found.get("id") if isinstance(found, dict) else None
        if not isinstance(pid, str):
            return None
        prefix, _, rest = pid.partition(":")
        api, sep, model = rest.partition(":")
        config = found.get("config") if isinstance(found, dict) else None
        if config:
            self.source.notes.append(f"embedding provider {pid}: config keys {', '.join(sorted(config))}")
        if prefix == LITELLM_PREFIX and api == "embedding" and sep:
            return model
        if prefix in MODEL_PREFIXES and sep and api in ("embedding", "embeddings") and model:
            return f"{MODEL_PREFIXES[prefix]}/{model}"
        self.source.notes.append(f"embedding provider {pid}: no evalspec equivalent")
        return None


def _data(value: Any) -> Any:
    """A config as JSON data (YAML dates become text), so that its repr is a python literal in an adapter."""
    return json.loads(json.dumps(value, default=str))


def uuid_var(default_test: Any) -> str | None:
    """The var `defaultTest.options.transformVars: '{ ...vars, NAME: context.uuid }'` sets to a fresh id per
    test (promptfoo's client-side session), or None."""
    options = default_test.get("options") if isinstance(default_test, dict) else None
    transform = options.get("transformVars") if isinstance(options, dict) else None
    found = regex.fullmatch(r"\s*\{\s*\.\.\.vars\s*,\s*(\w+)\s*:\s*context\.uuid\s*,?\s*\}\s*;?\s*",
                            transform) if isinstance(transform, str) else None
    return found.group(1) if found else None
