"""promptfoo's ways of laying out tests and prompts: scenarios, prompt files with several prompts, globs,
tests that share a description (SPEC §19)."""

from __future__ import annotations

from pathlib import Path

from tests.authoring.importers.helpers import import_config, written


def test_scenarios_run_each_test_once_per_config_entry(tmp_path: Path) -> None:
    config = {"prompts": ["Translate into {{ language }}: {{ input }}"], "providers": ["echo"],
              "scenarios": [{"description": "translations",
                             "config": [{"vars": {"language": "Spanish", "word": "Hola"}},
                                        {"vars": {"language": "French", "word": "Bonjour"},
                                         "assert": [{"type": "contains", "value": "French"}]}],
                             "tests": [{"description": "Hello", "vars": {"input": "Hello"},
                                        "assert": [{"type": "icontains", "value": "{{ word }}"}]}]}]}
    code, _, err = import_config(tmp_path, config)
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert [(t["id"], t["name"]) for t in tests] == [("hello-spanish", "Hello [Spanish]"), ("hello-french", "Hello [French]")]
    assert [t["conversation"][0]["user"] for t in tests] == ["Translate into Spanish: Hello", "Translate into French: Hello"]
    assert tests[0]["vars"]["word"] == "Hola" and tests[1]["vars"]["word"] == "Bonjour"
    assert tests[1]["conversation"][0]["assert"] == [{"contains": "French"}, {"icontains": "{{ word }}"}]
    assert "scenarios" not in err


def test_a_txt_prompt_file_holds_several_prompts_and_a_glob_names_several_files(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "prompts.txt").write_text("Say {{ w }}\n---\n  Shout {{ w }}  \n", encoding="utf-8")
    (tmp_path / "pf" / "prompt_b.txt").write_text("Whisper {{ w }}\n", encoding="utf-8")
    code, _, err = import_config(tmp_path, {"prompts": ["file://prompt*.txt"], "providers": ["echo"],
                                            "tests": [{"vars": {"w": "hi"}, "assert": [{"type": "contains", "value": "hi"}]}]})
    assert code == 0, err
    sent = sorted(t["conversation"][0]["user"] for t in written(tmp_path)["tests"])
    assert sent == ["Say hi", "Shout hi", "Whisper hi"]


def test_tests_that_share_a_description_stay_tests_of_their_own(tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["echo"], "tests": [
        {"description": "same", "vars": {"q": "one"}, "assert": [{"type": "contains", "value": "one"}]},
        {"description": "same", "vars": {"q": "two"}, "assert": [{"type": "contains", "value": "two"}]}]})
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert [t["id"] for t in tests] == ["same", "same-2"]
    assert [len(t["conversation"]) for t in tests] == [1, 1]


def test_the_load_filter_reads_json_text_as_promptfoo_s_does(tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {"prompts": ["Tone: {{ (style | load).tone }}"], "providers": ["echo"],
                                            "tests": [{"vars": {"style": '{"tone": "正式"}'},
                                                       "assert": [{"type": "is-valid-function-call"}]}]})
    assert code == 0, err
    (test,) = written(tmp_path)["tests"]
    assert test["conversation"][0] == {"user": "Tone: 正式", "assert": [{"tool-args-valid": True}]}


def test_list_vars_and_file_globs_make_one_test_per_combination(tmp_path: Path) -> None:
    (tmp_path / "pf" / "articles").mkdir(parents=True)
    (tmp_path / "pf" / "articles" / "a.txt").write_text("猫\n", encoding="utf-8")
    (tmp_path / "pf" / "articles" / "b.txt").write_text("dog", encoding="utf-8")
    code, _, err = import_config(tmp_path, {
        "prompts": ["{{ lang }}: {{ article }} {{ history | length }}"], "providers": ["echo"],
        "defaultTest": {"vars": {"lang": ["en", "zh"]}},
        "tests": [{"description": "sum", "vars": {"article": "file://articles/*", "history": [{"a": 1}]},
                   "assert": [{"type": "contains", "value": "{{ lang }}"}]}]})
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert [t["conversation"][0]["user"] for t in tests] == ["en: 猫 1", "en: dog 1", "zh: 猫 1", "zh: dog 1"]
    assert [t["name"] for t in tests][:2] == ["sum [en, articles/a.txt]", "sum [en, articles/b.txt]"]
    assert len({t["id"] for t in tests}) == 4


def test_a_glob_var_that_matches_nothing_refuses_the_import(tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {"prompts": ["{{ a }}"], "providers": ["echo"],
                                            "tests": [{"vars": {"a": "file://none/*.txt"},
                                                       "assert": [{"type": "contains", "value": "x"}]}]})
    assert code == 2 and "no file matches file://none/*.txt next to the config" in err


def test_a_python_test_generator_is_called_as_promptfoo_calls_it(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "cases.py").write_text(
        "def make(config=None):\n"
        "    langs = (config or {}).get('languages', ['French'])\n"
        "    return [{'vars': {'lang': l}, 'assert': [{'type': 'contains', 'value': l}]} for l in langs]\n\n"
        "def broken():\n    raise ValueError('no data')\n\n"
        "def chatty():\n    import sys\n    sys.stdout.write('loading')\n    sys.stdout.flush()\n"
        "    sys.stdout.buffer.write(b' \\xff\\xfe')\n    return make()\n", encoding="utf-8")
    code, _, err = import_config(tmp_path, {"prompts": ["Say it in {{ lang }}"], "providers": ["echo"], "tests": [
        "file://cases.py:make", {"path": "file://cases.py:make", "config": {"languages": ["德语", "Italian"]}}]})
    assert code == 0, err
    sent = [t["conversation"][0]["user"] for t in written(tmp_path)["tests"]]
    assert sent == ["Say it in French", "Say it in 德语", "Say it in Italian"]
    code, _, err = import_config(tmp_path, {"prompts": ["{{ lang }}"], "providers": ["echo"],
                                            "tests": ["file://cases.py:broken"]})
    assert code == 2 and "the generator did not return a list of tests: ValueError: no data" in err
    # what a generator prints (without a newline, not even UTF-8) is not read as its tests
    code, _, err = import_config(tmp_path, {"prompts": ["{{ lang }}"], "providers": ["echo"],
                                            "tests": ["file://cases.py:chatty"]})
    assert code == 0, err
    assert [t["conversation"][0]["user"] for t in written(tmp_path)["tests"]] == ["French"]


def test_an_excel_file_of_tests_is_read_like_a_csv(tmp_path: Path) -> None:
    import pytest

    openpyxl = pytest.importorskip("openpyxl")
    (tmp_path / "pf").mkdir()
    book = openpyxl.Workbook()
    book.active.append(["language", "body", "__expected"])
    book.active.append(["French", "Hello world", "icontains:bonjour"])
    other = book.create_sheet("zh")
    other.append(["language", "body", "__expected"])
    other.append(["中文", "你好", "contains:你好"])
    book.save(tmp_path / "pf" / "tests.xlsx")
    code, _, err = import_config(tmp_path, {"prompts": ["{{ language }}: {{ body }}"], "providers": ["echo"],
                                            "tests": ["file://tests.xlsx", "file://tests.xlsx#zh"]})
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert [t["conversation"][0] for t in tests] == [
        {"user": "French: Hello world", "assert": [{"icontains": "bonjour"}]},
        {"user": "中文: 你好", "assert": [{"contains": "你好"}]}]



def test_yaml_and_templates_read_and_print_values_as_promptfoo_does(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "promptfooconfig.yaml").write_text(
        "prompts: ['Answer {{ a }} at {{ t }}, mode {{ m }}, country {{ c }}; {{ b }} {{ f }} [{{ d }}] {{ l }}']\n"
        "providers: [echo]\n"
        "tests:\n  - vars: {a: yes, t: 12:30, m: off, c: NO, b: true, f: 1.0, d: null, l: [1, 2]}\n"
        "    assert: [{type: contains, value: 'yes'}]\n", encoding="utf-8")
    from click.testing import CliRunner

    from evalspec.app.cli.main import main

    result = CliRunner().invoke(main, ["import", "promptfoo", str(tmp_path / "pf" / "promptfooconfig.yaml"),
                                       "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.stderr
    (test,) = written(tmp_path)["tests"]
    assert test["conversation"][0]["user"] == "Answer yes at 12:30, mode off, country NO; true 1 [] 1,2"
