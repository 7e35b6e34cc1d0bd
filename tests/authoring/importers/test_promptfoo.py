"""promptfoo configs become suites that validate as written and run against loopback servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from evalspec import run
from evalspec.config import load_suite
from evalspec.play.runner import RunOptions
from tests.authoring.importers.helpers import import_config
from tests.servers import LoopbackServer, OpenAIServer, Reply

CHAT_PROMPT = """[
  {"role": "system", "content": "{{ system_message }}"},
  {% for completion in _conversation %}
    {"role": "user", "content": "{{ completion.input }}"},
    {"role": "assistant", "content": "{{ completion.output }}"},
  {% endfor %}
  {"role": "user", "content": "{{ question }}"}
]
"""


def multi_turn_config(base: str) -> dict[str, Any]:
    return {
        "description": "Threads about founders and weather",
        "prompts": [{"id": "file://prompt.json", "label": "multi-turn"}],
        "providers": [{"id": "openai:chat:gpt-4o-mini", "config": {"apiBaseUrl": base, "apiKey": "sk-test-1234567",
                                                                   "temperature": 0}}],
        "defaultTest": {"vars": {"system_message": "You are a helpful assistant"},
                        "assert": [{"type": "not-contains", "value": "As an AI"}]},
        "tests": [
            {"vars": {"question": "Who founded Facebook?"}, "metadata": {"conversationId": "facebook"},
             "assert": [{"type": "icontains", "value": "founded"}]},
            {"vars": {"question": "Where does he live?"}, "metadata": {"conversationId": "facebook"},
             "assert": [{"type": "javascript", "value": "output.answer === 'Menlo Park'"},
                        {"type": "regex", "value": "live"}]},
            {"vars": {"question": "天气怎么样？"}, "metadata": {"conversationId": "weather"},
             "assert": [{"type": "contains-any", "value": ["天气", "weather"]}]},
        ],
    }


def test_conversation_tests_become_one_conversation_each_and_run(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "prompt.json").write_text(CHAT_PROMPT, encoding="utf-8")
    with OpenAIServer() as server:
        code, out, err = import_config(tmp_path, multi_turn_config(server.base))
        assert code == 0, err
        path = tmp_path / "out" / "promptfooconfig.yaml"
        text = path.read_text(encoding="utf-8")
        assert "# Not converted:" in text and "assertion 'javascript' reading output.answer" in text
        assert "assertion 'javascript' reading output.answer" in err
        suite = load_suite(path)  # validates as written
        assert [t.id for t in suite.tests] == ["facebook", "weather"]
        assert [t.text for t in suite.tests[0].conversation] == ["Who founded Facebook?", "Where does he live?"]
        assert suite.providers[0].config["model"] == "openai/gpt-4o-mini"
        assert suite.providers[0].config["system"] == "You are a helpful assistant"
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    calls = server.chats()
    second = next(c for c in calls if c["messages"][-1]["content"] == "Where does he live?")
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["temperature"] == 0
    by_id = {r["test_id"]: r for r in data["results"]}
    assert by_id["facebook"]["status"] == "passed" and by_id["weather"]["status"] == "passed"
    rules = [a["type"] for a in by_id["facebook"]["assertions"]]
    assert "not-contains" in rules and "icontains" in rules and "regex" in rules


def test_http_and_python_providers_are_converted_and_run(tmp_path: Path) -> None:
    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        return Reply(body={"result": {"text": f"bot heard: {body.get('input')}"}})

    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "provider.py").write_text(
        "def call_api(prompt, options, context):\n"
        "    return {'output': 'py heard: ' + prompt + ' / ' + context['vars']['city']}\n", encoding="utf-8")
    with LoopbackServer(handle) as server:
        config = {
            "prompts": ["Weather in {{ city }}?"],
            "providers": [{"id": "https", "label": "shop bot",
                           "config": {"url": server.url + "/chat", "method": "POST",
                                      "body": {"input": "{{prompt}}"}, "transformResponse": "json.result.text"}},
                          "file://provider.py"],
            "tests": [{"description": "Paris weather", "vars": {"city": "Paris"},
                       "assert": [{"type": "contains", "value": "{{ city }}"}, {"type": "starts-with", "value": "bot",
                                                                                "transform": "output.trim()"}]}],
        }
        code, out, err = import_config(tmp_path, config)
        assert code == 0, err
        path = tmp_path / "out" / "promptfooconfig.yaml"
        assert "transform" not in err  # `output.trim()` changes nothing a check reads: the check is kept as it is
        suite = load_suite(path)
        assert [p.id for p in suite.providers] == ["shop-bot", "file-provider-py"]
        assert suite.tests[0].name == "Paris weather"
        assert suite.providers[0].config["http"]["body"] == {"input": "{{ message }}"}
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    replies = {r["provider"]: r["transcript"][-1]["content"] for r in data["results"]}
    assert replies == {"shop-bot": "bot heard: Weather in Paris?", "file-provider-py": "py heard: Weather in Paris? / Paris"}
    statuses = {r["provider"]: r["status"] for r in data["results"]}
    assert statuses == {"shop-bot": "passed", "file-provider-py": "failed"}  # starts-with 'bot'


def test_a_config_without_providers_gets_a_stub_that_runs(tmp_path: Path) -> None:
    code, out, err = import_config(tmp_path, {"prompts": ["Say {{ word }}"], "tests": [
        {"vars": {"word": "你好"}, "assert": [{"type": "contains", "value": "你好"}]}]})
    assert code == 0, err
    path = tmp_path / "out" / "promptfooconfig.yaml"
    assert (tmp_path / "out" / "provider_stub.py").is_file()
    data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert data["results"][0]["status"] == "passed"
    assert data["results"][0]["transcript"][-1]["content"] == "(stub) Say 你好"


def test_test_data_is_sent_as_written_never_as_a_template_or_a_variable(
        tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent-0123456")
    question = "my key is ${OPENAI_API_KEY}; {{ 6 * 7 }} and {% raw %} stay text"
    with OpenAIServer() as server:
        config = {"description": "a bot that knows ${OPENAI_API_KEY}", "prompts": ["Q: {{ question }}"],
                  "providers": [{"id": "openai:chat:m", "config": {"apiBaseUrl": server.base}}],
                  "tests": [{"description": "about ${OPENAI_API_KEY}", "vars": {"question": question},
                             "assert": [{"type": "contains", "value": "{{ question }}"}]}]}
        code, out, err = import_config(tmp_path, config)
        assert code == 0, err
        path = tmp_path / "out" / "promptfooconfig.yaml"
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert [c["messages"][-1]["content"] for c in server.chats()] == [f"Q: {question}"]
    assert data["results"][0]["status"] == "passed"  # the check is the config's template, given the test's vars
    assert data["results"][0]["name"] == "about ${OPENAI_API_KEY}"
    assert load_suite(path).description == "a bot that knows ${OPENAI_API_KEY}"  # the suite's own text too


def test_prompt_templates_render_under_the_limits_of_a_suite(tmp_path: Path) -> None:
    loops = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
    # the nested loops hit the step limit, or on a loaded machine the time limit first: either is the limit
    for prompt, limits in (("{{ 'x' * 10 ** 10 }}", ("a repeated value",)),
                           (loops, ("loops ran more than", "took longer than"))):
        code, out, err = import_config(tmp_path, {"prompts": [prompt], "tests": [{"vars": {}}]}, "--allow-empty")
        assert code == 2 and "tests[0]: the prompt could not be rendered" in err, err
        assert any(limit in err for limit in limits), err
        assert not (tmp_path / "out").exists()


def test_file_references_outside_the_config_folder_are_refused(tmp_path: Path) -> None:
    (tmp_path / "private.txt").write_text("top secret text", encoding="utf-8")
    (tmp_path / "checks.py").write_text("def get_assert(output, context):\n    return True\n", encoding="utf-8")
    config = {"prompts": ["file://../private.txt"], "providers": [f"file://{tmp_path / 'checks.py'}"],
              "tests": [{"vars": {}, "assert": [{"type": "python", "value": "file://../checks.py"}]}]}
    code, out, err = import_config(tmp_path, config)
    assert code == 2, err
    assert err.count("is outside the config's folder") == 3 and "top secret text" not in out + err, err
    assert "prompts[0]: file://../private.txt" in err and "tests[0].assert[0]: file://../checks.py" in err, err


def test_a_nunjucks_loop_over_a_mapping_converts_and_a_template_error_is_an_import_problem(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "prompt.json").write_text(
        '[{% for m in history %}{% for role, content in m %}{"role": "{{ role }}", "content": {{ content | dump }}},'
        '{% endfor %}{% endfor %}{"role": "user", "content": {{ question | dump }}}]', encoding="utf-8")
    history = [{"user": "谁创办了 Facebook？"}, {"assistant": "扎克伯格"}]
    code, out, err = import_config(tmp_path, {"prompts": ["file://prompt.json"],
                                              "tests": [{"vars": {"history": history, "question": "他还创办了什么？"}}]}, "--allow-empty")
    assert code == 0, err
    turns = load_suite(tmp_path / "out" / "promptfooconfig.yaml").tests[0].conversation
    assert [(t.kind, t.text) for t in turns] == [("user", "谁创办了 Facebook？"), ("assistant", "扎克伯格"),
                                               ("user", "他还创办了什么？")]
    (tmp_path / "pf" / "prompt.json").write_text("{% for a, b in words %}{{ a }}{% endfor %}", encoding="utf-8")
    code, out, err = import_config(tmp_path, {"prompts": ["file://prompt.json"], "tests": [{"vars": {"words": ["abc"]}}]}, "--allow-empty")
    assert code == 2 and "tests[0]: the prompt could not be rendered with this test's vars: ValueError" in err, err


def test_latency_and_cost_thresholds_targets_litellm_providers_and_the_judge_convert(tmp_path: Path) -> None:
    code, out, err = import_config(tmp_path, {
        "prompts": ["{{ q }}"],
        "targets": ["google:gemini-2.0-flash", "xai:grok-3", "openrouter:meta/llama-3", "perplexity:sonar",
                    "litellm:groq/llama3-8b", "echo"],
        "defaultTest": {"options": {"provider": "anthropic:messages:claude-3-5-haiku"}},
        "tests": [{"vars": {"q": "你好"}, "assert": [{"type": "latency", "threshold": 5000},
                                                    {"type": "cost", "threshold": 0.01},
                                                    {"type": "llm-rubric", "value": "polite"}]}]})
    assert code == 0, err
    suite = load_suite(tmp_path / "out" / "promptfooconfig.yaml")
    models = [p.config.get("model") or p.config.get("python") for p in suite.providers]
    assert models == ["gemini/gemini-2.0-flash", "xai/grok-3", "openrouter/meta/llama-3", "perplexity/sonar",
                      "groq/llama3-8b", "promptfoo_echo.py:respond"]
    asserts = suite.tests[0].conversation[0].asserts
    assert [(a.type, a.value) for a in asserts[:2]] == [("latency", 5000), ("cost", 0.01)]
    assert suite.judge is not None and suite.judge.config["model"] == "anthropic/claude-3-5-haiku"


def test_tests_from_a_csv_file_are_read(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "tests.csv").write_text("q,__expected\n你好,contains: 您好\nhi,hello\n", encoding="utf-8")
    code, out, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["openai:gpt-4o-mini"],
                                              "tests": "file://tests.csv"})
    assert code == 0, err
    suite = load_suite(tmp_path / "out" / "promptfooconfig.yaml")
    assert [(t.conversation[0].text, [(a.type, a.value) for a in t.conversation[0].asserts]) for t in suite.tests] == \
        [("你好", [("contains", "您好")]), ("hi", [("regex", r"\Ahello\Z")])]  # promptfoo's equals is exact


def test_a_missing_python_file_is_refused_not_written(tmp_path: Path) -> None:
    code, out, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["file://provider.py"],
                                              "tests": [{"vars": {"q": "hi"}, "assert": [{"type": "contains", "value": "h"}]}]})
    assert code == 2 and "provider.py does not exist next to the config" in err
    assert not (tmp_path / "out").exists()


def test_one_line_javascript_checks_keep_their_meaning_and_run(tmp_path: Path) -> None:
    checks = ["output.includes('Say')", "output.length > 5", "output.length <= 3",
              "output.toLowerCase().includes('hello') || output.toLowerCase().includes('你好')",
              "JSON.parse(output).ok === true"]
    code, out, err = import_config(tmp_path, {"prompts": ["Say {{ word }}"], "providers": ["echo"], "tests": [
        {"vars": {"word": "你好"}, "assert": [{"type": "javascript", "value": c} for c in checks]}]})
    assert code == 0, err
    path = tmp_path / "out" / "promptfooconfig.yaml"
    suite = load_suite(path)
    assert [a.type for a in suite.tests[0].conversation[0].asserts] == ["contains", "regex", "regex", "regex",
                                                                        "javascript"]  # the JSON one runs in node
    results = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data["results"][0]["assertions"]
    assert [a["pass"] for a in results] == [True, True, False, True, None]  # "Say 你好" is 6 characters
    assert "SyntaxError" in results[4]["error"]  # not JSON: promptfoo's check threw, evalspec's is an error


def test_several_prompts_make_one_test_each(tmp_path: Path) -> None:
    code, out, err = import_config(tmp_path, {"prompts": ["Say {{ word }}", "Shout {{ word }}"], "providers": ["echo"],
                                              "tests": [{"vars": {"word": "hi"}, "assert": [
                                                  {"type": "icontains", "value": "hi"}]}]})
    assert code == 0, err
    suite = load_suite(tmp_path / "out" / "promptfooconfig.yaml")
    assert [t.conversation[0].text for t in suite.tests] == ["Say hi", "Shout hi"]
    assert "only the first" not in err


def test_store_output_as_becomes_a_capture_and_conversation_id_groups_any_prompt(tmp_path: Path) -> None:
    code, out, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["echo"], "tests": [
        {"vars": {"q": "ORD-7"}, "options": {"storeOutputAs": "order"}, "metadata": {"conversationId": "a"},
         "assert": [{"type": "contains", "value": "ORD"}]},
        {"vars": {"q": "status of {{ order }}"}, "metadata": {"conversationId": "a"},
         "assert": [{"type": "contains", "value": "status of ORD-7"}]},
        {"vars": {"q": "other"}, "metadata": {"conversationId": "b"}, "assert": [{"type": "contains", "value": "o"}]}]})
    assert code == 0, err
    path = tmp_path / "out" / "promptfooconfig.yaml"
    suite = load_suite(path)
    assert [len(t.conversation) for t in suite.tests] == [2, 1]
    assert suite.tests[0].conversation[0].capture == "order"
    data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert [r["status"] for r in data["results"]] == ["passed", "passed"]
    assert data["results"][0]["transcript"][2]["content"] == "status of ORD-7"


TEXT_CONVERSATION_PROMPT = """{% for completion in _conversation %}
User: {{ completion.input }}
Assistant: {{ completion.output }}
{% endfor %}
User: {{ question }}"""


def test_a_text_prompt_over_conversation_sends_the_users_words_not_the_scaffold(tmp_path: Path) -> None:
    code, out, err = import_config(tmp_path, {"prompts": [TEXT_CONVERSATION_PROMPT], "providers": ["echo"], "tests": [
        {"vars": {"question": "我叫张三"}, "assert": [{"type": "contains", "value": "张三"}]},
        {"vars": {"question": "我叫什么？"}, "assert": [{"type": "contains", "value": "什么"}]}]})
    assert code == 0, err
    path = tmp_path / "out" / "promptfooconfig.yaml"
    suite = load_suite(path)
    assert [t.text for t in suite.tests[0].conversation] == ["我叫张三", "我叫什么？"]  # no "\nUser: "
    data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert [m["content"] for m in data["results"][0]["transcript"]] == ["我叫张三", "我叫张三", "我叫什么？", "我叫什么？"]


def test_previous_messages_and_a_conversation_var_become_history_in_the_users_words(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "prompt.json").write_text("""[
  {% for message in previous_messages %}{% for role, content in message %}
    {"role": "{{ role }}", "content": {{ content | dump }}},
  {% endfor %}{% endfor %}
  {"role": "user", "content": {{ question | dump }}}
]""", encoding="utf-8")
    code, out, err = import_config(tmp_path, {
        "prompts": ["file://prompt.json"], "providers": ["echo"],
        "defaultTest": {"vars": {"previous_messages": [{"user": "Who founded Facebook?"},
                                                       {"assistant": "Mark Zuckerberg"}]}},
        "tests": [{"vars": {"question": "Other companies?"}, "assert": [{"type": "contains", "value": "Other"}]},
                  {"vars": {"_conversation": [{"input": "Plan a trip", "output": "Where to?"},
                                              {"input": "Italy", "output": "(recorded)"}]},
                   "assert": [{"type": "icontains", "value": "italy"}]}]})
    assert code == 0, err
    path = tmp_path / "out" / "promptfooconfig.yaml"
    written = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert "vars" not in written  # the history is in the turns, not a var
    first, second = load_suite(path).tests
    assert [(t.kind, t.text) for t in first.conversation] == [
        ("user", "Who founded Facebook?"), ("assistant", "Mark Zuckerberg"), ("user", "Other companies?")]
    # a conversation var with no words of the test's own: its last user message is sent, its reply left out
    assert [(t.kind, t.text) for t in second.conversation][-3:] == [
        ("user", "Plan a trip"), ("assistant", "Where to?"), ("user", "Italy")]
    data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert [r["status"] for r in data["results"]] == ["passed", "passed"]


def test_the_simulated_user_becomes_simulate_with_the_prompt_as_the_agents_system(tmp_path: Path) -> None:
    code, out, err = import_config(tmp_path, {
        "prompts": ["You are an airline agent. Book flights."], "providers": ["openai:gpt-4.1-mini"],
        "defaultTest": {"provider": {"id": "promptfoo:simulated-user", "config": {"maxTurns": 4}}},
        "tests": [{"description": "Budget traveler", "vars": {"instructions": "You are mia. You want a cheap seat."},
                   "assert": [{"type": "llm-rubric", "value": "Did mia get a cheap seat?"}]}]},
        "--provider", "model:openai/gpt-4.1-mini")
    assert code == 0, err
    written = yaml.safe_load((tmp_path / "out" / "promptfooconfig.yaml").read_text(encoding="utf-8"))
    (test,) = written["tests"]
    assert test["simulate"] == {"persona": "You are mia. You want a cheap seat.", "goal": "Budget traveler",
                                "max_turns": 4}
    assert test["assert"] == [{"llm-rubric": "Did mia get a cheap seat?"}] and "conversation" not in test
    assert written["providers"][0]["system"] == "You are an airline agent. Book flights."
    assert written["simulator"] == "openai/gpt-4o-mini"
