"""promptfoo providers become evalspec providers that call the same system: JavaScript providers through
node, http providers with their response path, auth and session, and model ids as litellm names them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from evalspec import run
from evalspec.app.cli.main import main
from evalspec.authoring.importers.promptfoo.http_forms import response_path
from evalspec.config import load_suite
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM
from tests.servers import LoopbackServer, Reply

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def import_config(tmp_path: Path, config: dict[str, Any], files: dict[str, str] | None = None) -> tuple[int, str]:
    src = tmp_path / "pf"
    src.mkdir(exist_ok=True)
    for name, text in (files or {}).items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text, encoding="utf-8")
    (src / "promptfooconfig.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    result = CliRunner().invoke(main, ["import", "promptfoo", str(src / "promptfooconfig.yaml"),
                                       "-o", str(tmp_path / "out")])
    return result.exit_code, result.stderr


def written(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((tmp_path / "out" / "promptfooconfig.yaml").read_text(encoding="utf-8"))
    return data


JS_FILES = {
    # a class (CommonJS), called with the rendered prompt, the test's vars and its own config
    "shout.js": "class Shout {\n"
                "  constructor(options) { this.mark = options.config.mark; this.label = options.label; }\n"
                "  id() { return 'shout'; }\n"
                "  async callApi(prompt, context) {\n"
                "    console.log('noise that is not the reply');\n"
                "    return { output: `${prompt.toUpperCase()} ${context.vars.city}${this.mark} (${this.label})`,\n"
                "             tokenUsage: { total: 7, prompt: 3, completion: 4 }, cost: 0.25 };\n"
                "  }\n"
                "}\n"
                "module.exports = Shout;\n",
    # an ES module whose default export is a class with callApi as a field
    "whisper.mjs": "export default class Whisper {\n"
                   "  callApi = async (prompt) => ({ output: prompt.toLowerCase() });\n"
                   "}\n",
    "failing.mjs": "export default { callApi: async () => ({ error: 'quota exceeded' }) };\n",
    "throwing.cjs": "module.exports = async function callApi(prompt) { throw new Error('boom on ' + prompt); };\n",
    "typed.ts": "export default class Typed { async callApi(prompt: string) { return { output: prompt }; } }\n",
}


@needs_node
def test_javascript_providers_run_through_node_and_their_errors_are_errors(tmp_path: Path) -> None:
    config = {
        "prompts": ["Weather in {{ city }}?"],
        "providers": [{"id": "file://shout.js", "label": "shouter", "config": {"mark": "!"}}, "file://whisper.mjs",
                      "file://failing.mjs", "file://throwing.cjs", "file://typed.ts"],
        "tests": [{"vars": {"city": "Paris"}, "assert": [{"type": "contains", "value": "PARIS"}]}],
    }
    code, err = import_config(tmp_path, config, JS_FILES)
    assert code == 0, err
    assert "file://typed.ts: a TypeScript provider" in err
    out = tmp_path / "out"
    assert (out / "promptfoo_js_runner.mjs").is_file()
    suite = load_suite(out / "promptfooconfig.yaml")
    assert [p.id for p in suite.providers] == ["shouter", "file-whisper-mjs", "file-failing-mjs", "file-throwing-cjs"]
    data = run([out / "promptfooconfig.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    records = {r["provider"]: r for r in data["results"]}
    assert {p: r["status"] for p, r in records.items()} == {
        "shouter": "passed", "file-whisper-mjs": "failed", "file-failing-mjs": "error", "file-throwing-cjs": "error"}
    assert records["shouter"]["transcript"][-1]["content"] == "WEATHER IN PARIS? Paris! (shouter)"
    assert records["file-whisper-mjs"]["transcript"][-1]["content"] == "weather in paris?"
    assert "quota exceeded" in str(records["file-failing-mjs"])
    assert "boom on Weather in Paris?" in str(records["file-throwing-cjs"])
    assert data["summary"]["tokens"] == 7


@needs_node
def test_a_javascript_provider_that_outlasts_its_time_or_finds_no_node_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"slow.js": "module.exports = { callApi: () => new Promise(() => setTimeout(() => {}, 60000)) };\n"}
    config = {"prompts": ["hi"], "providers": ["file://slow.js"],
              "tests": [{"assert": [{"type": "contains", "value": "hi"}]}]}
    code, err = import_config(tmp_path, config, files)
    assert code == 0, err
    adapter = tmp_path / "out" / "promptfoo_slow.py"
    adapter.write_text(adapter.read_text(encoding="utf-8").replace("TIMEOUT = 300", "TIMEOUT = 0.5"),
                       encoding="utf-8")
    data = run([tmp_path / "out" / "promptfooconfig.yaml"],
               options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert data["results"][0]["status"] == "error"
    assert "took more than 0.5 s" in str(data["results"][0])
    monkeypatch.setenv("PATH", str(tmp_path))  # no node on the path
    data = run([tmp_path / "out" / "promptfooconfig.yaml"],
               options=RunOptions(run_dir=tmp_path / "run2", use_cache=False)).data
    assert "node is not installed" in str(data["results"][0])


def test_model_ids_become_the_litellm_model_that_calls_the_same_api(tmp_path: Path) -> None:
    ids = {
        "openai:responses:gpt-4.1": "openai/responses/gpt-4.1",
        "openai:completion:gpt-3.5-turbo-instruct": "text-completion-openai/gpt-3.5-turbo-instruct",
        "bedrock:converse:us.anthropic.claude-sonnet-4-6": "bedrock/converse/us.anthropic.claude-sonnet-4-6",
        "bedrock:amazon.nova-pro-v1:0": "bedrock/amazon.nova-pro-v1:0",
        "sagemaker:jumpstart:my-endpoint": "sagemaker/my-endpoint",
        "sagemaker:openai:my-chat-endpoint": "sagemaker_chat/my-chat-endpoint",
        "vertex:claude-sonnet-4-6": "vertex_ai/claude-sonnet-4-6",
        "azure:chat:my-deployment": "azure/my-deployment",
        "huggingface:text-generation:gemma-7b-it": "huggingface/gemma-7b-it",
        "replicate:meta/llama-4-scout-instruct": "replicate/meta/llama-4-scout-instruct",
        "ollama:chat:llama3.2:1b": "ollama_chat/llama3.2:1b",
        "ollama:llama3.2": "ollama/llama3.2",
        "cloudflare-ai:chat:@cf/meta/llama-3-8b-instruct": "cloudflare/@cf/meta/llama-3-8b-instruct",
        "cerebras:llama-4-scout-17b-16e-instruct": "cerebras/llama-4-scout-17b-16e-instruct",
        "groq:openai/gpt-oss-120b": "groq/openai/gpt-oss-120b",
    }
    not_chat = ["openai:image:gpt-image-1", "openai:realtime:gpt-4o-realtime-preview", "bedrock:kb:my-kb",
                "google:live:gemini-2.5-flash", "sagemaker:embedding:emb", "huggingface:text-classification:x",
                "replicate:image:black-forest-labs/flux-dev", "azure:assistant:asst_1", "sagemaker:anthropic:claude"]
    providers = [{"id": pid, "label": f"p{i}", "config": {"region": "eu-west-1", "apiKey": "sk-test-12345678",
                                                         "maxTokens": 50}}
                 for i, pid in enumerate([*ids, *not_chat])]
    providers[0]["config"] |= {"instructions": "Answer in French.",  # the Responses API's own forms
                               "response_format": {"type": "json_schema", "name": "x", "schema": {}}}
    providers[1]["config"]["response_format"] = {"type": "json_object"}
    providers[6]["config"] = {"generationConfig": {"temperature": 0, "maxOutputTokens": 9}}
    providers[7]["config"] |= {"apiVersion": "2024-10-21", "reasoning": {"effort": "high"}}
    code, err = import_config(tmp_path, {"prompts": ["hi"], "providers": providers,
                                         "tests": [{"assert": [{"type": "contains", "value": "hi"}]}]})
    assert code == 0, err
    out = {p["id"]: p for p in written(tmp_path)["providers"]}
    assert out["p0"]["system"] == "Answer in French."
    assert "provider openai:responses:gpt-4.1: config keys region, response_format" in err
    assert out["p1"]["params"]["response_format"] == {"type": "json_object"}
    assert [p["model"] for p in out.values()] == list(ids.values())
    assert out["p0"]["client"] == "litellm"  # litellm sends `openai/responses/...` to the Responses API
    assert out["p2"]["params"] == {"max_tokens": 50, "aws_region_name": "eu-west-1"}
    assert out["p6"]["params"] == {"temperature": 0, "max_tokens": 9}
    assert out["p7"]["params"] == {"max_tokens": 50, "reasoning_effort": "high", "api_version": "2024-10-21"}
    for pid in not_chat[:-1]:
        assert f"provider {pid}: not a chat model" in err
    assert "sagemaker:anthropic:claude: a SageMaker endpoint of model type 'anthropic'" in err
    load_suite(tmp_path / "out" / "promptfooconfig.yaml")  # validates as written


@pytest.mark.parametrize(("transform", "path"), [
    ("json.choices[0].message.content", "choices[0].message.content"),
    ("json?.data?.reply", "data.reply"),
    ("(json) => json", "@"),
    ("json => json.result", "result"),
    ("(json, text) => json.output[0]", "output[0]"),
    ("(json) => { return json['a-b'].text; }", '"a-b".text'),
    ("(json, text) => text", None),
    ("(json, text) => json?.response || json?.error || text", None),
    ("(json) => json.items.map(i => i.text).join(' ')", None),
    ("json.items[-1]", None),
    ("file://parser.js", None),
])
def test_transform_response_converts_only_what_a_jmespath_finds_exactly(transform: str, path: str | None) -> None:
    assert response_path(transform) == path


def test_http_auth_sessions_and_response_paths_call_the_target_as_promptfoo_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[dict[str, Any], dict[str, str], str]] = []

    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        seen.append((body, headers, path))
        return Reply(body={"reply": {"text": f"heard {body['message']}"}})

    monkeypatch.setenv("PF_TARGET_KEY", "k-123")
    with LoopbackServer(handle) as server:
        target = {"url": server.url + "/chat", "method": "POST",
                  "body": {"message": "{{prompt}}", "session": "{{sessionId}}"},
                  "transformResponse": "(json) => json.reply.text", "maxRetries": 2, "stateful": True}
        config = {
            "prompts": ["{{ q }}"],
            "providers": [
                {"id": "http", "label": "keyed", "config": {
                    **target, "auth": {"type": "api_key", "value": "{{env.PF_TARGET_KEY}}", "placement": "header",
                                       "keyName": "X-API-Key"}}},
                {"id": "http", "label": "bearer", "config": {
                    **target, "url": server.url + "/b", "responseParser": "json.reply.text",
                    "auth": {"type": "bearer", "token": "t-9"}}},
                {"id": "http", "label": "oauth", "config": {**target, "auth": {"type": "oauth", "tokenUrl": "x"}}},
                {"id": "http", "label": "mtls", "config": {**target, "tls": {"certPath": "c.pem"}}},
            ],
            "defaultTest": {"options": {"transformVars": "{ ...vars, sessionId: context.uuid }"}},
            "tests": [{"vars": {"q": "one"}, "assert": [{"type": "contains", "value": "heard one"}]},
                      {"vars": {"q": "two"}, "assert": [{"type": "contains", "value": "heard one"}]}],
        }
        code, err = import_config(tmp_path, config)
        assert code == 0, err
        assert "auth type 'oauth'" in err and "tls (no evalspec equivalent" in err
        assert "maxRetries" in err and "transformVars" not in err
        providers = written(tmp_path)["providers"]
        assert [p["id"] for p in providers] == ["keyed", "bearer"]
        assert providers[0]["http"]["headers"] == {"X-API-Key": "${PF_TARGET_KEY:-}"}
        assert providers[0]["http"]["stateful"] is True
        data = run([tmp_path / "out" / "promptfooconfig.yaml"],
                   options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    statuses = sorted((r["provider"], r["test_id"], r["status"]) for r in data["results"])
    assert statuses == [("bearer", "test-1", "passed"), ("bearer", "test-2", "failed"),
                        ("keyed", "test-1", "passed"), ("keyed", "test-2", "failed")]
    keyed = [(body, headers) for body, headers, path in seen if path == "/chat"]
    assert {headers.get("x-api-key") for _, headers in keyed} == {"k-123"}
    assert {headers.get("authorization") for body, headers, path in seen if path == "/b"} == {"Bearer t-9"}
    sessions = {body["session"] for body, _ in keyed}
    assert len(sessions) == 2 and "" not in sessions  # one id per test, as promptfoo's context.uuid


def test_a_server_session_the_target_never_sent_is_empty_not_an_error(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []

    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        bodies.append(body)
        return Reply(body={"text": "ok " + body["input"]})

    with LoopbackServer(handle) as server:
        config = {"prompts": ["{{ q }}"],
                  "providers": [{"id": server.url + "/chat", "config": {
                      "body": {"input": "{{prompt}}", "sid": "{{sessionId}}"}, "transformResponse": "json.text",
                      "sessionParser": "data.headers['x-session-id']"}}],
                  "tests": [{"vars": {"q": "hello"}, "assert": [{"type": "contains", "value": "ok hello"}]}]}
        code, err = import_config(tmp_path, config)
        assert code == 0, err
        assert "sessionParser" in err
        data = run([tmp_path / "out" / "promptfooconfig.yaml"],
                   options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert data["results"][0]["status"] == "passed"
    assert bodies == [{"input": "hello", "sid": ""}]  # promptfoo's first request has no session either


def test_a_python_provider_imports_the_modules_beside_it(tmp_path: Path) -> None:
    files = {"agent.py": "def answer(text):\n    return 'agent says ' + text\n",
             "provider.py": "from agent import answer\n\n"
                            "def call_api(prompt, options, context):\n    return {'output': answer(prompt)}\n"}
    config = {"prompts": ["hi"], "providers": ["file://provider.py"],
              "tests": [{"assert": [{"type": "equals", "value": "agent says hi"}]}]}
    code, err = import_config(tmp_path, config, files)
    assert code == 0, err
    data = run([tmp_path / "out" / "promptfooconfig.yaml"],
               options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert data["results"][0]["status"] == "passed"


def test_two_python_providers_each_import_their_own_agent_module(tmp_path: Path) -> None:
    files = {f"{who}/{name}": text for who in ("shop", "bank") for name, text in (
        ("agent.py", f"def answer(text):\n    return {who!r} + ' says ' + text\n"),
        ("provider.py", "from agent import answer\n\n"
                        "def call_api(prompt, options, context):\n    return {'output': answer(prompt)}\n"))}
    config = {"prompts": ["hi"], "providers": ["file://shop/provider.py", "file://bank/provider.py"],
              "tests": [{"assert": [{"type": "icontains-any", "value": ["shop says hi", "bank says hi"]}]}]}
    code, err = import_config(tmp_path, config, files)
    assert code == 0, err
    data = run([tmp_path / "out" / "promptfooconfig.yaml"],
               options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert sorted(r["transcript"][1]["content"] for r in data["results"]) == ["bank says hi", "shop says hi"]


def test_a_tests_providers_filter_runs_it_on_the_converted_providers_it_names(tmp_path: Path) -> None:
    config = {"prompts": ["{{ q }}"],
              "providers": [{"id": "echo", "label": "fast"}, {"id": "echo", "label": "smart"},
                            {"id": "openai:image:gpt-image-1", "label": "painter"}],
              "tests": [{"description": "quick", "vars": {"q": "2+2"}, "providers": ["fast"],
                         "assert": [{"type": "contains", "value": "2+2"}]},
                        {"description": "any echo", "vars": {"q": "hi"}, "providers": ["ech*"],
                         "assert": [{"type": "contains", "value": "hi"}]},
                        {"description": "painted", "vars": {"q": "a cat"}, "providers": ["painter"],
                         "assert": [{"type": "contains", "value": "cat"}]},
                        {"description": "everywhere", "vars": {"q": "yes"},
                         "assert": [{"type": "contains", "value": "yes"}]}]}
    code, err = import_config(tmp_path, config)
    assert code == 0, err
    assert "painted: runs only on providers that were not converted (left out)" in err
    tests = {t["name"]: t.get("providers") for t in written(tmp_path)["tests"]}
    assert tests == {"quick": ["fast"], "any echo": ["fast", "smart"], "everywhere": None}
    data = run([tmp_path / "out" / "promptfooconfig.yaml"],
               options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert sorted((r["test_id"], r["provider"]) for r in data["results"]) == [
        ("any-echo", "fast"), ("any-echo", "smart"), ("everywhere", "fast"), ("everywhere", "smart"),
        ("quick", "fast")]


def test_a_provider_in_a_file_of_its_own_and_the_python_prefix_convert(tmp_path: Path) -> None:
    files = {"providers/fast.yaml": "id: openai:chat:gpt-4.1-mini\nlabel: fast\nconfig: {temperature: 0.2}\n",
             "bot.py": "def call_api(prompt, options, context):\n    return {'output': 'bot: ' + prompt}\n"}
    config = {"prompts": ["hi"], "providers": ["file://providers/fast.yaml", "python:bot.py", "file://gone.yaml"],
              "tests": [{"assert": [{"type": "contains", "value": "hi"}]}]}
    code, err = import_config(tmp_path, config, files)
    assert code == 0, err
    assert "provider file://gone.yaml: cannot read it" in err
    providers = written(tmp_path)["providers"]
    assert providers[0] == {"id": "fast", "model": "openai/gpt-4.1-mini", "params": {"temperature": 0.2}}
    assert providers[1]["python"] == "promptfoo_bot.py:respond"


def test_prompt_in_a_check_is_the_prompt_sent_and_the_embedding_model_is_the_embedder(tmp_path: Path) -> None:
    config = {"prompts": ["It is {{ condition }} outside."],
              "providers": [{"id": "echo"}, {"id": "sagemaker:llama:ep", "config": {"transform": "return prompt"}}],
              "defaultTest": {"assert": [{"type": "equals", "value": "{{prompt}}"},
                                         {"type": "similar", "value": "{{ prompt }}", "threshold": 0.7}],
                              "options": {"provider": {"embedding": {"id": "sagemaker:embedding:emb-ep"}}}},
              "tests": [{"vars": {"condition": "sunny"}}]}
    code, err = import_config(tmp_path, config)
    assert code == 0, err
    assert "sagemaker:llama:ep: config.transform" in err
    suite = written(tmp_path)
    assert suite["embedder"] == "sagemaker/emb-ep"
    assert suite["tests"][0]["vars"]["prompt"] == "It is sunny outside."
    load_suite(tmp_path / "out" / "promptfooconfig.yaml")  # `{{prompt}}` renders: it validates


@LITELLM  # `client: litellm` in this process
def test_an_openai_responses_provider_calls_the_responses_api(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        calls.append((path, body))
        text = "bonjour" if body.get("instructions") or "French" in str(body.get("input")) else "hello"
        return Reply(body={"id": "resp_1", "object": "response", "created_at": 0, "status": "completed",
                           "model": "gpt-4.1", "output": [{"type": "message", "id": "msg_1", "status": "completed",
                                                           "role": "assistant", "content": [
                                                               {"type": "output_text", "text": text,
                                                                "annotations": []}]}],
                           "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}})

    with LoopbackServer(handle) as server:
        config = {"prompts": ["greet me"],
                  "providers": [{"id": "openai:responses:gpt-4.1", "config": {
                      "apiBaseUrl": server.url + "/v1", "apiKey": "sk-test-12345678", "instructions": "In French.",
                      "max_output_tokens": 20}}],
                  "tests": [{"assert": [{"type": "equals", "value": "bonjour"}]}]}
        code, err = import_config(tmp_path, config)
        assert code == 0, err
        data = run([tmp_path / "out" / "promptfooconfig.yaml"],
                   options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert data["results"][0]["status"] == "passed"
    assert [path for path, _ in calls] == ["/v1/responses"]
    assert calls[0][1]["model"] == "gpt-4.1" and calls[0][1]["max_output_tokens"] == 20
