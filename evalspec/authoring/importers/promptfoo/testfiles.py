"""promptfoo's `tests: file://…` entries: CSV, JSONL, YAML and JSON test files read inside the config's folder;
python and JavaScript test generators called once, at import."""

from __future__ import annotations

import datetime
import itertools
import json
from pathlib import Path
from typing import Any

import regex
import yaml

from evalspec.authoring.importers.promptfoo.runners import TEST_GENERATOR, runner_source
from evalspec.authoring.importers.promptfoo.source import Part, is_glob, load_yaml, short

# what promptfoo runs (scripts) or encodes (base64, PDF text) instead of reading a var file as text
_RUN_OR_ENCODED = {".js", ".cjs", ".mjs", ".ts", ".py", ".pdf", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp",
                   ".tif", ".tiff", ".svg", ".ico", ".avif", ".heic", ".mp3", ".wav", ".ogg", ".flac", ".m4a",
                   ".aac", ".mp4", ".webm", ".mov", ".avi", ".mkv"}


GENERATOR_SECONDS = 60
_PY_GENERATOR = r"(?:file://)?[^:]+\.py:\w+"
_JS_GENERATOR = r"(?:file://)?([^:]+\.(?:js|cjs|mjs|ts|cts|mts))(?::(\w+))?"


def _js_json(value: Any) -> str:
    """What JavaScript's JSON.stringify writes for a YAML timestamp promptfoo reads as a Date (UTC)."""
    if isinstance(value, datetime.datetime):
        moment = value.astimezone(datetime.timezone.utc) if value.tzinfo else value
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if isinstance(value, datetime.date):
        return f"{value.isoformat()}T00:00:00.000Z"
    raise TypeError(f"{type(value).__name__} is not JSON data")


class TestFiles(Part):
    """promptfoo's tests, `defaultTest` and scenarios as test mappings, their files and generators read."""

    def external_tests(self, raw: Any) -> list[Any]:
        """`tests:` as a list of test mappings: `file://x.csv|jsonl|yaml|json` entries read (inside the
        config's folder), a CSV's columns as vars (`__expected`, `__description` as promptfoo reads them)."""
        items = raw if isinstance(raw, list) else [raw]
        out: list[Any] = []
        for item in items:
            generator = item.get("path") if isinstance(item, dict) and set(item) <= {"path", "config"} else item
            config = item.get("config") if isinstance(item, dict) else None
            if isinstance(generator, str) and regex.fullmatch(_PY_GENERATOR, generator):
                out.extend(self._generated(generator, config))
                continue
            if isinstance(generator, str) and (js := regex.fullmatch(_JS_GENERATOR, generator)) \
                    and not is_glob(generator):
                out.extend(self._js_generated(js[1], js[2] or "", config))
                continue
            if not isinstance(item, str):
                out.append(item)
                continue
            target = item.removeprefix("file://")
            if ".xlsx#" in target:  # an Excel file's sheet
                target = target.partition("#")[0]
            for file in self._globbed(target):
                out.extend(self._test_file(file, item))
        return out

    def _generated(self, target: str, config: Any) -> list[Any]:
        """The tests a promptfoo python generator (`file://tests.py:fn`, with its `config`) returns, called as
        promptfoo calls it: in a python process of its own, in the config's folder, `fn(config)` or `fn()`."""
        import subprocess
        import sys

        file, _, function = target.removeprefix("file://").partition(":")
        where = f"tests {target}"
        path = self.source.inside(file, where)
        if path is None:
            return []
        if not path.is_file():
            return self._missing(file)
        args = [] if config is None else [config]
        try:
            done = subprocess.run([sys.executable, "-c", runner_source(TEST_GENERATOR), str(path), function, json.dumps(args)],
                                  cwd=path.parent, capture_output=True, encoding="utf-8", errors="replace",
                                  timeout=GENERATOR_SECONDS)
        except subprocess.TimeoutExpired:
            self.source.problem(where, f"the generator took longer than {GENERATOR_SECONDS} s")
            return []
        try:
            tests = json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 and done.stdout else None
        except json.JSONDecodeError:
            tests = None
        if not isinstance(tests, list):
            tail = (done.stderr.strip().splitlines() or [f"it printed {done.stdout[-200:]!r}"])[-1]
            self.source.problem(where, f"the generator did not return a list of tests: {tail}")
            return []
        return tests

    def _js_generated(self, file: str, function: str, config: Any) -> list[Any]:
        """The tests a promptfoo JavaScript test file gives, taken as promptfoo takes them: its export named
        `function` (else its default export, else the module), called with the entry's `config` and awaited
        when it is a function, else the exported array itself; run once, by node, in the config's folder."""
        from evalspec.core.errors import GradingError
        from evalspec.core.node import call_once, node_binary, typescript_problem

        where = f"tests file://{file}{':' + function if function else ''}"
        path = self.source.inside(file, where)
        if path is None:
            return []
        if not path.is_file():
            return self._missing(file)
        if node_binary() is None:
            self.source.problem(where, "a JavaScript test file, run by Node.js: no `node` on PATH (install Node.js 18 or "
                                "later and import again)")
            return []
        if (why := typescript_problem(path)) is not None:
            self.source.notes.append(f"{where}: a TypeScript test file, not converted: {why}")
            return []
        request = {"op": "call", "file": str(path), "fn": function, "args": [] if config is None else [config]}
        try:
            answer = call_once(request, GENERATOR_SECONDS, str(self.source.path.parent.resolve()),
                               "the time a test generator may take at import")
        except GradingError as exc:
            self.source.problem(where, str(exc))
            return []
        if not answer.get("ok"):
            printed = "; ".join(str(line) for line in answer.get("logs") or [])[:300]
            self.source.problem(where, f"{path.name} gave no tests: {answer.get('message')}"
                                + (f" (it printed: {printed})" if printed else ""))
            return []
        tests = answer.get("result")
        if not isinstance(tests, list):
            got = "nothing" if tests is None else f"a {type(tests).__name__.replace('dict', 'mapping')}"
            self.source.problem(where, f"{path.name} gave {got}, not a list of tests")
            return []
        holding = {int(at[1:at.index("]")]): at[at.index("]") + 1:].lstrip(".") or "the test itself"
                   for at in reversed(answer.get("functions") or [])}
        for k, at in sorted(holding.items()):
            self.source.notes.append(f"{where}: test {k + 1} holds a JavaScript function ({at}): not converted")
        return [test for k, test in enumerate(tests) if k not in holding]

    def _globbed(self, target: str) -> list[Path]:
        if is_glob(target):
            return self.source.matches(target) or self._missing(target)
        file = self.source.inside(target, f"tests {target}")
        if file is None:
            return []
        return [file] if file.is_file() else self._missing(target)

    def _missing(self, target: str) -> list[Path]:
        self.source.problem(f"tests file://{target}", "no such test file next to the config: copy it there and import again")
        return []

    def _test_file(self, file: Path, written: str) -> list[Any]:
        import csv

        suffix = file.suffix.lower()
        if suffix == ".xlsx":
            return [self._csv_test(row) for row in self._sheet_rows(file, written)]
        try:
            text = file.read_text(encoding="utf-8-sig")
            if suffix == ".csv":
                return [self._csv_test(row) for row in csv.DictReader(text.splitlines())]
            if suffix == ".jsonl":
                return [json.loads(line) for line in text.splitlines() if line.strip()]
            if suffix in (".yaml", ".yml", ".json"):
                loaded = json.loads(text) if suffix == ".json" else load_yaml(text)
                return loaded if isinstance(loaded, list) else [loaded]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError, csv.Error) as exc:
            self.source.problem(f"tests {written}", f"cannot read {file.name}: {exc}")
            return []
        self.source.notes.append(f"tests {written}: a {suffix or 'suffixless'} test file (CSV, JSONL, YAML or JSON are read)")
        return []

    def _sheet_rows(self, file: Path, written: str) -> list[dict[str, object]]:
        """An Excel file's first sheet (or `file://tests.xlsx#Sheet` 's) as CSV-like rows: the first row
        names the columns. Reading it needs openpyxl (`pip install 'evalspec[xlsx]'`)."""
        try:
            import openpyxl
        except ImportError:
            self.source.problem(f"tests {written}", f"reading {file.name} needs openpyxl: pip install 'evalspec[xlsx]'")
            return []
        sheet_name = written.partition("#")[2]
        try:
            book = openpyxl.load_workbook(file, read_only=True, data_only=True)
            sheet = book[sheet_name] if sheet_name else book.worksheets[0]
            rows = [["" if v is None else str(v) for v in row] for row in sheet.iter_rows(values_only=True)]
        except (OSError, KeyError, ValueError) as exc:
            self.source.problem(f"tests {written}", f"cannot read {file.name}: {exc}")
            return []
        header = rows[0] if rows else []
        return [dict(zip(header, row)) for row in rows[1:] if any(row)]

    def _csv_test(self, row: dict[str, object]) -> dict[str, object]:
        test: dict[str, object] = {"vars": {k: v for k, v in row.items() if k and not k.startswith("__")}}
        asserts: list[dict[str, object]] = []
        for key, value in row.items():
            if not key or not key.startswith("__expected") or not value:
                continue
            kind, sep, rest = str(value).partition(":")
            if sep and regex.fullmatch(r"[a-z][a-z-]*", kind.strip()):
                kind = kind.strip()
                asserts.append({"type": "llm-rubric" if kind == "grade" else kind, "value": rest.strip()})
            else:
                asserts.append({"type": "equals", "value": value})
        if asserts:
            test["assert"] = asserts
        if row.get("__description"):
            test["description"] = row["__description"]
        return test

    def default_test(self, raw: Any) -> dict[str, object]:
        """`defaultTest:` as a mapping: written inline, or `file://defaults.yaml|json` read next to the config."""
        if not isinstance(raw, str):
            if raw is not None and not isinstance(raw, dict):
                self.source.notes.append(f"defaultTest: {raw!r} (not a mapping)")
            return raw if isinstance(raw, dict) else {}
        target = raw.removeprefix("file://")
        file = self.source.inside(target, f"defaultTest {raw}")
        if file is None:
            return {}
        if not file.is_file():
            self.source.problem(f"defaultTest {raw}", "no such file next to the config: copy it there and import again")
            return {}
        loaded = self._test_file(file, f"defaultTest {raw}")
        if len(loaded) == 1 and isinstance(loaded[0], dict):
            return loaded[0]
        self.source.problem(f"defaultTest {raw}", f"{file.name} does not hold one mapping (vars, assert, options)")
        return {}

    def var_files(self, variables: dict[str, object], where: str) -> dict[str, object]:
        """The vars with `file://` values read as promptfoo reads them when it renders a prompt: a text file's
        content trimmed, a YAML file as compact JSON. Files promptfoo runs or encodes (scripts, PDFs, images,
        audio, video) stay as written, noted: their value would differ."""
        out = dict(variables)
        for key, value in variables.items():
            if not isinstance(value, str) or not value.startswith("file://") or is_glob(value):
                continue  # a glob is one test per file (`var_combinations`), each read here in its own test
            target = value[len("file://"):]
            suffix = Path(target).suffix.lower()
            if suffix in _RUN_OR_ENCODED:
                self.source.notes.append(f"{where}: var '{key}' reads {value} (promptfoo runs or encodes it; kept as written)")
                continue
            file = self.source.inside(target, f"{where}: var '{key}'")
            if file is None:
                continue
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                self.source.problem(f"{where}: var '{key}'", f"cannot read {value}: {exc}; copy it next to the config")
                continue
            if suffix in (".yaml", ".yml"):
                try:
                    text = json.dumps(load_yaml(text), ensure_ascii=False, separators=(",", ":"),
                                      default=_js_json)
                except (yaml.YAMLError, ValueError, TypeError) as exc:  # an alias holding itself, !!binary
                    self.source.problem(f"{where}: var '{key}'", f"{value} is not YAML promptfoo can send: {exc}")
                    continue
            out[key] = text.strip()
        return out

    def scenario_tests(self, raw: Any) -> list[Any]:
        """promptfoo's `scenarios:`: every test of a scenario once for each of its `config` entries, the
        entry's vars under the test's and its checks before the test's (as promptfoo merges them)."""
        out: list[Any] = []
        for k, scenario in enumerate(raw if isinstance(raw, list) else []):
            if not isinstance(scenario, dict) or not isinstance(scenario.get("config"), list):
                self.source.notes.append(f"scenarios[{k}]: no list of `config` entries")
                continue
            tests: list[Any] = scenario["tests"] if isinstance(scenario.get("tests"), list) else [{}]
            for data in (d for d in scenario["config"] if isinstance(d, dict)):
                data_vars: dict[str, object] = data["vars"] if isinstance(data.get("vars"), dict) else {}
                firsts = [str(v) for v in data_vars.values() if isinstance(v, (str, int, float))][:1]
                which = str(data.get("description") or "".join(firsts))[:40]
                for test in (t for t in tests if isinstance(t, dict)):
                    test_vars: dict[str, object] = test["vars"] if isinstance(test.get("vars"), dict) else {}
                    name = str(test.get("description") or scenario.get("description") or f"scenario {k + 1}")
                    out.append({**data, **test, "vars": {**data_vars, **test_vars},
                                "assert": [*self._scenario_checks(data, k), *self._scenario_checks(test, k)],
                                "description": f"{name} [{which}]" if which else name})
        return out

    def _scenario_checks(self, part: dict[str, object], k: int) -> list[Any]:
        """A scenario entry's or test's `assert:` list (anything else noted, not read item by item)."""
        checks = part.get("assert")
        if checks is not None and not isinstance(checks, list):
            self.source.notes.append(f"scenarios[{k}].assert: {short(checks)} (not a list of checks)")
        return checks if isinstance(checks, list) else []

    def var_combinations(self, tests: list[Any], default_vars: dict[str, object]) -> list[Any]:
        """promptfoo's var combinations: a test whose vars (the defaults' under its own) hold a list of
        texts, or a `file://` glob, is one test per combination of their values (lists of other things,
        such as a `_conversation`, stay one value)."""
        out: list[Any] = []
        for test in tests:
            if not isinstance(test, dict):
                out.append(test)  # noted where the tests are read
                continue
            own = test.get("vars") if isinstance(test.get("vars"), dict) else None
            merged = {**default_vars, **(own or {})}
            choices = {key: self._var_values(key, value) for key, value in merged.items()}
            if all(len(v) == 1 for v in choices.values()):
                out.append(test)
                continue
            keys = list(choices)
            for combination in itertools.product(*(choices[k] for k in keys)):
                values = dict(zip(keys, combination))
                which = ", ".join(str(values[k]).removeprefix("file://") for k in keys if len(choices[k]) > 1)
                name = str(test.get("description") or "test")
                out.append({**test, "vars": values, "description": f"{name} [{which[:60]}]"})
        return out

    def _var_values(self, key: str, value: Any) -> list[Any]:
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return list(value)
        if isinstance(value, str) and value.startswith("file://") and is_glob(value):
            folder = self.source.path.parent.resolve()
            inside = [f"file://{p.relative_to(folder).as_posix()}" for p in self.source.matches(value[len("file://"):])
                      if p.is_file()]
            if not inside:
                self.source.problem(f"var '{key}'", f"no file matches {value} next to the config")
            return inside or [value]
        return [value]
