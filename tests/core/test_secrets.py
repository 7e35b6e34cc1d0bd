"""Secrets never reach an output: implicit env keys, `${TOKEN}` in names, across all suites of a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from evalspec.core.redact import implicit_secrets
from tests.servers import OpenAIServer, Reply, chat_body

KEY = "sk-implicit-0123456789abcdef"
TOKEN = "bot-token-9876543210"


def echo_auth(request: dict[str, Any], n: int, server: list[OpenAIServer]) -> Reply:
    return Reply(body=chat_body(f"your header was {server[0].auth[-1]}"))


def test_implicit_key_and_env_token_are_masked_in_every_output_of_every_suite(tmp_path: Path) -> None:
    holder: list[OpenAIServer] = []
    with OpenAIServer(lambda r, n: echo_auth(r, n, holder)) as server:
        holder.append(server)
        # suite a uses the key implicitly (no api_key); suite b names the token in a test name
        (tmp_path / "a.yaml").write_text(f"""\
description: uses OPENAI_API_KEY from the environment
providers:
  - id: m
    model: openai/m
    api_base: {server.base}
tests:
  - id: leak
    conversation:
      - user: what is my key?
        assert: [{{contains: nothing-like-this}}]
""", encoding="utf-8")
        (tmp_path / "b.yaml").write_text(f"""\
description: "token ${{BOT_TOKEN}} in the description"
providers:
  - id: m
    model: openai/m
    api_base: {server.base}
    api_key: sk-local-000
tests:
  - name: "login with ${{BOT_TOKEN}}"
    description: "uses ${{BOT_TOKEN}}"
    conversation:
      - user: "say {KEY}"
        assert: [{{contains: "{KEY}-not-there"}}]
""", encoding="utf-8")
        env = {**os.environ, "OPENAI_API_KEY": KEY, "BOT_TOKEN": TOKEN, "PYTHONIOENCODING": "utf-8"}
        proc = subprocess.run([sys.executable, "-m", "evalspec", "run", "a.yaml", "b.yaml", "-o", "out/run.json",
                               "--html", "out/r.html", "--junit", "out/r.xml", "--md", "out/r.md", "--no-cache"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"Bearer {KEY}" in server.auth  # it really was sent (the two suites run in any order), and echoed back
    outputs = {"console": proc.stdout + proc.stderr}
    outputs.update({p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "out").iterdir()})
    outputs.update({str(p.relative_to(tmp_path)): p.read_text(encoding="utf-8")
                    for p in (tmp_path / ".evalspec" / "runs").glob("*/*")})
    assert len(outputs) >= 6
    leaks = [name for name, text in outputs.items() if KEY in text or TOKEN in text]
    assert not leaks, leaks
    data = json.loads(outputs["run.json"])
    assert "***" in data["results"][0]["transcript"][1]["content"]
    assert data["results"][1]["name"] == "login with ***"
    # re-grading the recorded transcripts keeps every secret masked and finds every record again
    graded = subprocess.run([sys.executable, "-m", "evalspec", "grade", "out/run.json", "-o", "out/graded.json"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    text = (tmp_path / "out" / "graded.json").read_text(encoding="utf-8")
    assert KEY not in text and TOKEN not in text and KEY not in graded.stdout + graded.stderr
    assert "no longer in the suite" not in graded.stdout + graded.stderr


def test_implicit_secrets_are_the_provider_keys_a_model_call_would_read() -> None:
    env = {"OPENAI_API_KEY": "sk-openai-123456", "ANTHROPIC_API_KEY": "sk-ant-1234567", "PORT": "8080123",
           "AWS_SECRET_ACCESS_KEY": "aws-secret-123456"}
    assert implicit_secrets(["anthropic/claude"], env) == {"sk-openai-123456", "sk-ant-1234567"}
    assert implicit_secrets(["bedrock/claude"], env) == {"sk-openai-123456", "aws-secret-123456"}
    assert implicit_secrets([], env) == set()


def test_a_run_s_implicit_secrets_cover_simulator_attacker_and_history_models(tmp_path: Path) -> None:
    from evalspec.config.loader import load_suite
    from evalspec.core.redact import run_secrets

    (tmp_path / "bot.py").write_text("def respond(m, c):\n    return 'ok'\n", encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text("""\
providers:
  - id: py
    python: bot.py:respond
    history: {mode: summary, turns: 1, model: mistral/small}
tests:
  - id: sim
    simulate: {persona: p, goal: g, max_turns: 2, model: groq/llama}
  - id: attack
    attack: {goal: g, strategy: crescendo, max_turns: 2, model: {model: deepseek/chat, api_base: "http://127.0.0.1:1/v1"}}
    assert: [{not-contains: x}]
""", encoding="utf-8")
    env = {"MISTRAL_API_KEY": "mistral-key-123", "GROQ_API_KEY": "groq-key-123", "DEEPSEEK_API_KEY": "ds-key-123",
           "COHERE_API_KEY": "cohere-key-123"}
    secrets = run_secrets([load_suite(path)], env)
    assert {"mistral-key-123", "groq-key-123", "ds-key-123"} <= secrets
    assert "cohere-key-123" not in secrets


def test_validation_errors_mask_url_query_secrets_and_env_values_of_every_suite(
        in_tmp: Path, monkeypatch: Any) -> None:
    from tests.helpers import invoke

    monkeypatch.setenv("MY_TOKEN", "tok-secret-777777")
    (in_tmp / "a.yaml").write_text("""\
providers:
  - id: bot
    http:
      url: "http//127.0.0.1:9/chat?access_token=qs-token-123456&lang=zh-cn"
      body: {q: "{{ message }}"}
      response: reply
  - id: m
    model: openai/x
    api_base: "127.0.0.1:9/v1?api-key=qs-key-654321&region=eu"
tests:
  - id: t
    conversation:
      - user: "hi ${MY_TOKEN} {{ nope }}"
""", encoding="utf-8")
    (in_tmp / "b.yaml").write_text("""\
providers: [{id: m, model: openai/x, api_base: "http://127.0.0.1:9/v1"}]
tests:
  - id: u
    conversation:
      - user: "the other suite's qs-token-123456 and tok-secret-777777 {{ nope }}"
""", encoding="utf-8")
    for command in ("validate", "run"):
        code, out = invoke(command, "a.yaml", "b.yaml")
        assert code == 2, out
        assert "malformed URL" in out and "'nope' is undefined" in out, out
        for secret in ("qs-token-123456", "qs-key-654321", "tok-secret-777777"):
            assert secret not in out, (command, out)
        assert "access_token=***&lang=zh-cn" in out and "api-key=***&region=eu" in out, out
        assert "hi *** {{ nope }}" in out and "the other suite's *** and ***" in out, out


def test_judge_eval_expands_env_in_its_judge_mapping_and_masks_the_key_in_every_output(
        in_tmp: Path, monkeypatch: Any) -> None:
    from tests.helpers import invoke

    def passing(request: dict[str, Any], n: int) -> Reply:
        return Reply(body=chat_body(json.dumps({"reason": "r", "pass": True})))

    line = {"transcript": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
            "assert": {"llm-rubric": "answers"}, "label": True}
    (in_tmp / "l.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    monkeypatch.setenv("JUDGE_KEY", "sk-judge-from-env-123456")
    with OpenAIServer(passing) as server:
        for key, sent in (("${JUDGE_KEY}", "sk-judge-from-env-123456"), ("sk-judge-literal-98765", None)):
            judge = f'{{model: openai/j, api_base: "{server.base}", api_key: "{key}"}}'
            code, out = invoke("judge-eval", "l.jsonl", "--judge", judge, "-o", "e.json", "--no-cache")
            assert code == 0, out
            sent = sent or key
            assert server.auth[-1] == f"Bearer {sent}"  # the variable's value was sent, not its name
            written = (in_tmp / "e.json").read_text(encoding="utf-8")
            assert sent not in written and sent not in out
            assert json.loads(written)["judge"]["api_key"] == "***"
    code, out = invoke("judge-eval", "l.jsonl", "--judge", "{model: openai/j, api_key: '${NOT_SET_ANYWHERE}'}")
    assert code == 2 and "NOT_SET_ANYWHERE is not set" in out, out


def test_judge_mapping_that_is_not_yaml_says_so_and_how_to_quote_it(in_tmp: Path, monkeypatch: Any) -> None:
    """`{model: M, api_key: ${KEY}}` (unquoted `${`) is no YAML mapping: exit 2 saying so, with the fix,
    not "'{model: openai' is not a provider litellm knows", and the key's value is never printed."""
    from tests.helpers import invoke

    (in_tmp / "l.jsonl").write_text(json.dumps({"transcript": [{"role": "user", "content": "hi"}],
                                                                "assert": {"llm-rubric": "x"}, "label": True})
                                    + "\n", encoding="utf-8")
    monkeypatch.setenv("JUDGE_KEY", "sk-judge-from-env-123456")
    for judge in ("{model: openai/j, api_key: ${JUDGE_KEY}}", "{model: openai/j, api_key: sk-lit-55555 ]"):
        code, out = invoke("judge-eval", "l.jsonl", "--judge", judge)
        assert code == 2, out
        assert "is not a YAML mapping" in out and "api_key: '${KEY}'" in out, out
        assert "litellm" not in out and "sk-judge-from-env-123456" not in out and "sk-lit-55555" not in out, out


# -- secrets by construction (docs/en/suite-format.md#secrets) ------------------------------------------

BEARER = "sk-live-4f9a8b7c6d5e3a21"
CLIENT_SECRET = 'cs "q"/x+y 密钥-77'  # changes under URL-encoding and JSON-escaping
ACCESS = "qs-access-8642"
RASA_TOKEN = "rasa-tok-1357"
BROKEN_KEY = "brk-key-97531"
TENANT = "tenant-env-2468"  # from ${TENANT_ID}: a value from the environment is a secret whatever its name
SHORT = "k9z"  # under 4 characters: masked where it stands only


def encoded_forms(secret: str) -> set[str]:
    from urllib.parse import quote, quote_plus

    return {secret, quote(secret), quote(secret, safe=""), quote_plus(secret),
            json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}


def echo_request(method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
    """A bot that echoes its request: as JSON (escaped), and URL-encoded both ways."""
    from urllib.parse import quote, quote_plus

    seen = json.dumps({"url": path, "headers": headers, "body": body})
    if path.startswith("/fail"):
        return Reply(500, {"error": {"message": f"cannot serve {path}: {seen}"}})
    return Reply(body={"reply": f"you sent {seen} | {json.dumps(seen, ensure_ascii=False)} | {quote(seen)} | "
                                f"{quote_plus(seen)} | {quote(path, safe='')}"})


def test_written_secrets_and_their_encoded_forms_are_masked_in_every_output(tmp_path: Path) -> None:
    from tests.servers import LoopbackServer, RasaServer

    with LoopbackServer(echo_request) as bot, RasaServer(token=RASA_TOKEN) as rasa:
        (tmp_path / "s.yaml").write_text(f"""\
providers:
  - id: echo
    http:
      url: "{bot.url}/chat?lang=zh&access_token={ACCESS}"
      headers:
        Authorization: "Bearer {BEARER}"
        X-Api-Key: {SHORT}
        X-Tenant: "${{TENANT_ID}}"
      body:
        message: "{{{{ message }}}}"
        max_tokens: 512
        auth: {{client_secret: '{CLIENT_SECRET}'}}
      response: reply
  - id: rasa
    rasa: {{url: "{rasa.url}", token: {RASA_TOKEN}}}
  - id: broken
    http: {{url: "{bot.url}/fail?key={BROKEN_KEY}", response: reply}}
options: {{retries: 0}}
tests:
  - id: echoed
    providers: [echo, rasa]
    conversation:
      - user: 你好
        assert: [{{not-contains: 没有这个词}}]
  - id: fails
    providers: [broken]
    conversation:
      - user: hi
        assert: [{{not-contains: nothing}}]
""", encoding="utf-8")
        env = {**os.environ, "TENANT_ID": TENANT, "PYTHONIOENCODING": "utf-8"}
        proc = subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "-o", "out/run.json",
                               "--html", "out/r.html", "--junit", "out/r.xml", "--md", "out/r.md"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # `fails` is an error
    data = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    replies = [m["content"] for r in data["results"] for m in r["transcript"] if m["role"] == "assistant"]
    assert any("you sent" in reply for reply in replies), replies  # the echo really came back
    outputs = {"console": proc.stdout + proc.stderr}
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix != ".yaml":
            outputs[str(path.relative_to(tmp_path))] = path.read_bytes().decode("utf-8", errors="replace")
    assert any("responses.sqlite" in name for name in outputs), sorted(outputs)  # the cache was written
    assert any("journal" in name or name.startswith(".evalspec/runs") for name in outputs), sorted(outputs)
    leaks = sorted((name, form) for name, text in outputs.items()
                   for secret in (BEARER, CLIENT_SECRET, ACCESS, RASA_TOKEN, BROKEN_KEY, TENANT)
                   for form in encoded_forms(secret) if form in text)
    assert not leaks, leaks
    echo = data["suites"][0]["providers"][0]
    assert echo["http"]["body"]["max_tokens"] == 512  # `max_tokens` is no secret
    assert echo["http"]["headers"] == {"Authorization": "***", "X-Api-Key": "***", "X-Tenant": "***"}
    assert echo["http"]["body"]["auth"] == {"client_secret": "***"}
    assert data["suites"][0]["providers"][1]["rasa"]["token"] == "***"
    assert "access_token=***" in echo["http"]["url"]
    assert "HTTP 500" in data["results"][-1]["error"] and "key=***" in data["results"][-1]["error"]
