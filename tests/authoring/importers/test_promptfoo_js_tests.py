"""promptfoo's JavaScript test files (`tests: file://tests.js[:fn]`, `{path, config}`): run once at import by
node, in the config's folder, as promptfoo takes them; what cannot be run is a problem naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.authoring.importers.helpers import import_config, written

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")

FILES = {
    # CommonJS: the module is the function; it reads a file relative to the folder it runs in
    "common.js": "const fs = require('fs');\n"
                 "module.exports = () => fs.readFileSync('langs.txt', 'utf8').trim().split('\\n')\n"
                 "  .map((l) => ({vars: {lang: l}, assert: [{type: 'contains', value: l}]}));\n",
    "langs.txt": "French\n德语\n",
    # ESM (a .js with ESM syntax, no package.json): a default export, given the entry's config
    "esm.js": "export default function (config) {\n"
              "  return (config?.langs ?? ['Latin']).map((l) => ({vars: {lang: l}}));\n}\n",
    # a named async function, awaited, given the entry's config
    "named.mjs": "export async function cases(config) {\n"
                 "  await new Promise((done) => setTimeout(done, 5));\n"
                 "  console.log('loading'); process.stdout.write('{\"not\": \"tests\"}\\n');\n"
                 "  return [{vars: {lang: config.lang}, assert: [{type: 'icontains', value: config.lang}]}];\n}\n"
                 "export const other = 1;\n",
    # an exported array is the tests themselves
    "array.cjs": "module.exports = [{vars: {lang: 'Dutch'}, assert: [{type: 'contains', value: 'Dutch'}]}];\n",
    "throws.js": "module.exports = () => { throw new Error('no database here'); };\n",
    "mapping.js": "module.exports = () => ({vars: {lang: 'x'}});\n",
    "broken.js": "module.exports = () => [;\n",
    "withfn.js": "module.exports = () => [{vars: {lang: 'Welsh'}},\n"
                 "  {vars: {lang: 'Irish'}, assert: [{type: 'javascript', value: (output) => output.length > 0}]}];\n",
    "typed.ts": "export default (): object[] => [{vars: {lang: 'Greek'}}];\n",
}


def project(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    for name, text in FILES.items():
        (tmp_path / "pf" / name).write_text(text, encoding="utf-8")


def sent(tmp_path: Path) -> list[Any]:
    return [t["conversation"][0] for t in written(tmp_path)["tests"]]


def config(*tests: Any) -> dict[str, Any]:
    return {"prompts": ["Say it in {{ lang }}"], "providers": ["echo"],
            "defaultTest": {"assert": [{"type": "contains", "value": "Say"}]}, "tests": list(tests)}


def test_javascript_test_files_are_run_as_promptfoo_runs_them(tmp_path: Path) -> None:
    project(tmp_path)
    code, _, err = import_config(tmp_path, config(
        "file://common.js", {"path": "file://esm.js", "config": {"langs": ["Korean", "Thai"]}}, "file://esm.js",
        {"path": "file://named.mjs:cases", "config": {"lang": "Swahili"}}, "file://array.cjs",
        {"vars": {"lang": "inline"}}))
    assert code == 0, err
    assert sent(tmp_path) == [
        {"user": "Say it in French", "assert": [{"contains": "French"}]},
        {"user": "Say it in 德语", "assert": [{"contains": "德语"}]},
        {"user": "Say it in Korean"}, {"user": "Say it in Thai"}, {"user": "Say it in Latin"},
        {"user": "Say it in Swahili", "assert": [{"icontains": "Swahili"}]},
        {"user": "Say it in Dutch", "assert": [{"contains": "Dutch"}]}, {"user": "Say it in inline"}]


def test_a_tests_file_string_is_one_javascript_file(tmp_path: Path) -> None:
    project(tmp_path)
    data = config()
    data["tests"] = "file://common.js"
    code, _, err = import_config(tmp_path, data)
    assert code == 0, err
    assert [t["user"] for t in sent(tmp_path)] == ["Say it in French", "Say it in 德语"]


@pytest.mark.parametrize(("entry", "said"), [
    ("file://throws.js", "tests file://throws.js: throws.js gave no tests: Error: no database here"),
    ("file://mapping.js", "tests file://mapping.js: mapping.js gave a mapping, not a list of tests"),
    ("file://named.mjs:missing", "tests file://named.mjs:missing: named.mjs gave no tests: no export 'missing' "
                                 "(exported functions: cases)"),
    ("file://broken.js", "tests file://broken.js: broken.js gave no tests: SyntaxError: Unexpected token ';'"),
    ("file://none.js", "tests file://none.js: no such test file next to the config"),
])
def test_a_javascript_test_file_that_gives_no_tests_refuses_the_import_naming_it(
        tmp_path: Path, entry: str, said: str) -> None:
    project(tmp_path)
    code, _, err = import_config(tmp_path, config(entry))
    assert code == 2 and said in err, err
    assert "Traceback" not in err


def test_a_test_holding_a_javascript_function_is_not_converted(tmp_path: Path) -> None:
    project(tmp_path)
    code, _, err = import_config(tmp_path, config("file://withfn.js"))
    assert code == 0, err
    assert sent(tmp_path) == [{"user": "Say it in Welsh"}]
    assert "tests file://withfn.js: test 2 holds a JavaScript function (assert[0].value): not converted" in err


def test_typescript_test_files_need_a_node_that_strips_types(tmp_path: Path) -> None:
    from evalspec.core.node import node_version

    if node_version() >= (22, 18):
        pytest.skip("this node runs TypeScript")
    project(tmp_path)
    code, _, err = import_config(tmp_path, config("file://typed.ts", "file://array.cjs"))
    assert code == 0, err
    assert [t["user"] for t in sent(tmp_path)] == ["Say it in Dutch"]
    assert "tests file://typed.ts: a TypeScript test file, not converted: node 20." in err
    code, _, err = import_config(tmp_path, config("file://typed.ts"))
    assert code == 2 and "a TypeScript test file, not converted" in err and "Traceback" not in err


def test_without_node_a_javascript_test_file_refuses_the_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = import_config(tmp_path, config("file://array.cjs"))
    assert code == 2 and "tests file://array.cjs: a JavaScript test file, run by Node.js: no `node` on PATH" in err
