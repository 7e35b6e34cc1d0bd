"""Suites from elsewhere: promptfoo configs, MT-Bench-101 data, spreadsheets (CSV) — and CSV back out.

Each importer turns its input into `ImportedSuite`s; `write_suites` writes them as YAML that validates
as written: whatever could not be converted is listed in a comment at the top of the suite (and
returned, for stderr), and a suite without a provider gets one to edit (`--provider`, or a python
stub next to the suite).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalspec.authoring.importers.shapes import mapping, mappings
from evalspec.config.interpolate import LITERAL_DOLLAR_BRACE, is_template
from evalspec.config.yamlfile import typographic_quotes
from evalspec.config.yamlfixes import mend
from evalspec.core.errors import ConfigError, Problem

STUB_FILE = "provider_stub.py"
STUB_SOURCE = '''"""A stand-in for the system under test, written by `evalspec import`.

Replace the body of `respond` with a call to your chatbot (or point the suite's `providers:` at it).
"""


def respond(messages, context):
    """messages: OpenAI-style history ending with the user turn to answer; context: thread_id, vars, ..."""
    return "(stub) " + messages[-1]["content"]
'''


@dataclass
class ImportedSuite:
    """One suite to write: its file name, its data, and what of the source was not converted."""

    filename: str
    data: dict[str, object]
    not_converted: list[str] = field(default_factory=list)
    source: str = ""
    files: dict[str, str] = field(default_factory=dict)  # extra files to write, relative to the suite
    # tests that check nothing in the source itself (no check was lost: there was none), e.g. promptfoo's
    # tests kept to read their output; `leave_out_unchecked` drops them beside tests that do check
    unchecked: list[str] = field(default_factory=list)
    # what of the imported folder was left out (a whole convo or file, with its reason), on every suite of it
    left_out: list[str] = field(default_factory=list)
    # (the source's checks kept, not converted) when the importer counted them; else `check_counts` estimates
    checks: tuple[int, int] | None = None


RAW_OPEN, RAW_CLOSE = "{% raw %}", "{% endraw %}"
_END_RAW = re.compile(r"\{%(-?\s*endraw\b)")  # what would close a raw block early
_END_RAW_KEPT = '{% endraw %}{{ "{%" }}{% raw %}'  # renders as "{%", the raw block going on after it


def plain(value: Any) -> Any:
    """Copied data (a name, a tag, a var, a reference answer) as text that `${ENV}` leaves alone: every
    `${` written `$${` (docs/en/rule-self-tests.md#verdicts-that-hold, "Imported text is text"). Mappings and lists are escaped item by item."""
    if isinstance(value, str):
        return value.replace("${", LITERAL_DOLLAR_BRACE)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def literal(value: Any) -> Any:
    """Copied data that evalspec renders as a template (a user or assistant turn, an assertion's value),
    so that it is sent as written: `plain`, and text holding `{{` or `{%` wrapped in {% raw %}…{% endraw %}."""
    if isinstance(value, str):
        text = plain(value)
        return RAW_OPEN + _END_RAW.sub(lambda m: _END_RAW_KEPT + m.group(1), text) + RAW_CLOSE \
            if is_template(text) else text
    if isinstance(value, dict):
        return {k: literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal(v) for v in value]
    return value


def unliteral(text: str) -> str:
    """The text `literal` wrapped (as loaded: `$${` already read as `${`), for writing it back out."""
    if text.startswith(RAW_OPEN) and text.endswith(RAW_CLOSE):
        return text[len(RAW_OPEN):-len(RAW_CLOSE)].replace(_END_RAW_KEPT, "{%")
    return text


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings, insertion order kept."""


def mended_if_plain(value: str) -> bool:
    """Whether evalspec's suite loader would read `value`, written plain (unquoted) as a key's value or a list
    item, as something else: it mends what look like typing mistakes (`price：100` is read as the key
    `price`, docs/en/suite-format.md). Words YAML 1.1 reads as another type (`yes`, `off`, `1:20`,
    `2024-01-01`) are quoted by the dumper itself: the loader reads YAML 1.1 as it does."""
    return any(mend(lead + value, "")[1] for lead in ("- ", "k: ", "- k: "))


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    """Every text value is written so that evalspec reads it back as this text (docs/en/importers.md): block
    style for several lines, YAML quotes for copied text wrapped in “…” or 「…」 (kept as written) and for
    text the loader would mend; otherwise plain, the dumper quoting what YAML 1.1 would read as a boolean,
    a number, a date or null."""
    if "\n" in value:
        style: str | None = "|"
    elif typographic_quotes(value) or mended_if_plain(value):
        style = "'"
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=1000)


def provider_from_spec(spec: str) -> dict[str, object]:
    """`--provider`: `model:NAME`, `http:URL`, `python:FILE.py:function`, a YAML mapping, or a bare model."""
    text = spec.strip()
    if text.startswith("{"):
        parsed = yaml.safe_load(text)
        if not isinstance(parsed, dict):
            raise ValueError(f"--provider {spec!r}: expected a mapping")
        return {"id": "target", **parsed} if "id" not in parsed else parsed
    kind, sep, rest = text.partition(":")
    if sep and kind == "python":
        return {"id": "target", "python": rest}
    if sep and kind == "http":
        return {"id": "target", "http": {"url": rest, "body": {"message": "{{ message }}"}, "response": "reply"}}
    if sep and kind == "model":
        return {"id": "target", "model": rest}
    return {"id": "target", "model": text}


def with_provider(suite: ImportedSuite, provider: str | None) -> None:
    """Give a suite without providers the one from `--provider`, or a python stub to edit."""
    tests = mappings(suite.data.get("tests"))
    if suite.data.get("providers") or (tests and all("transcript" in t for t in tests)):
        return  # recorded conversations call nothing
    if provider:
        entry = provider_from_spec(provider)
    else:
        entry = {"id": "stub", "python": f"{STUB_FILE}:respond"}
        suite.files.setdefault(STUB_FILE, STUB_SOURCE)
        suite.not_converted.append(f"no system under test in the source: edit {STUB_FILE} or the providers entry")
    ordered = {"providers": [entry]}
    suite.data = {**{k: v for k, v in suite.data.items() if k in ("description", "tags")}, **ordered,
                  **{k: v for k, v in suite.data.items() if k not in ("description", "tags", "providers")}}


def _written_checks(data: Any) -> int:
    """The checks written in a suite's data (a test's, its turns', `defaults`)."""
    if isinstance(data, dict):
        own = len(data["assert"]) if isinstance(data.get("assert"), list) else 0
        return own + sum(_written_checks(v) for k, v in data.items() if k != "assert")
    if isinstance(data, list):
        return sum(_written_checks(v) for v in data)
    return 0


def check_counts(suite: ImportedSuite) -> tuple[int, int]:
    """(the source's checks kept, not converted): the importer's own count, else the checks written (fragments
    included) and one per note of what was not converted."""
    if suite.checks is not None:
        return suite.checks
    fragments = sum(_written_checks(yaml.safe_load(text)) for name, text in suite.files.items()
                    if name.endswith((".yaml", ".yml")))
    return _written_checks(suite.data) + fragments, len(suite.not_converted)


def render_suite(suite: ImportedSuite) -> str:
    """The suite's YAML, with the source and everything not converted in a comment on top."""
    head = [f"# Imported by evalspec from {suite.source}" if suite.source else "# Imported by evalspec"]
    if suite.not_converted:
        head.append("# Not converted:")
        head += [f"#   - {line}" for line in suite.not_converted]
    if suite.left_out:
        head.append("# Left out of this import (not converted; the rest of the folder was written):")
        head += [f"#   - {line}" for line in suite.left_out]
    return "\n".join(head) + "\n" + dump_yaml(suite.data)


class ImportRefused(ConfigError):
    """The import would write a hollow suite (docs/en/recorded-conversations.md): nothing is written."""


class WouldOverwrite(ImportRefused):
    """The import would overwrite files evalspec did not write: nothing is written."""


def hollow_problems(suite: ImportedSuite) -> list[Problem]:
    """What makes an imported suite hollow: no test, a test that checks nothing (no check of its own, on
    its turns or from `defaults`), an empty user turn."""
    data, source = suite.data, suite.source or suite.filename
    inherited = bool(mapping(data.get("defaults")).get("assert"))
    tests = mappings(data.get("tests"))
    if not tests and not data.get("transcripts"):
        return [Problem(source, None, "", "no test could be imported: nothing to write"
                        + (f" ({suite.not_converted[0]})" if suite.not_converted else ""))]
    problems = []
    for i, test in enumerate(tests):
        name = str(test.get("id") or test.get("name") or f"test {i + 1}")
        entries = mappings(test.get("conversation") or test.get("transcript"))
        if not (test.get("assert") or inherited or any(e.get("assert") for e in entries)):
            why = "its source has no check either (a test kept to read its reply): add one" \
                if test.get("id") in suite.unchecked else \
                "none of its source's checks could be converted (see 'not converted' above)"
            problems.append(Problem(source, None, f"test '{name}'", f"checks nothing: {why}"))
        for j, entry in enumerate(entries):
            text = entry.get("user")
            if "user" in entry and not unliteral(str(text or "")).strip():
                problems.append(Problem(source, None, f"test '{name}', entry {j + 1}", "empty user turn"))
    return problems


def leave_out_unchecked(suite: ImportedSuite) -> None:
    """Leave out the tests that checked nothing in the source, beside tests that check something, with a
    note naming them: no check is lost, and no test is written that would pass having checked nothing.
    When every test is of that kind, they stay (and the suite is refused as hollow)."""
    tests = mappings(suite.data.get("tests"))
    unchecked = set(suite.unchecked)
    kept = [t for t in tests if t.get("id") not in unchecked]
    if unchecked and kept and len(kept) < len(tests):
        left = [str(t.get("id")) for t in tests if t.get("id") in unchecked]
        suite.data["tests"] = kept
        suite.not_converted.append(
            f"{len(left)} test(s) left out that check nothing in the source (kept there to read their replies; "
            f"--allow-empty writes them): {', '.join(left)}")
        suite.unchecked = []


def check_not_hollow(suites: list[ImportedSuite]) -> None:
    """Raise ImportRefused naming every hollow part of every suite (`--allow-empty` skips this)."""
    problems = [p for suite in suites for p in hollow_problems(suite)]
    if problems:
        raise ImportRefused(problems)


# what every file evalspec writes says near its top, so that importing again may replace it
WRITTEN_MARKS = ("Imported by evalspec", "evalspec import")


def marked(text: str) -> bool:
    """Whether a file's text says, in its first lines, that an import wrote it."""
    return any(mark in text[:600] for mark in WRITTEN_MARKS)


def _overwrites(path: Path, content: str) -> bool:
    """Whether writing `content` at `path` would replace what evalspec did not write: a file there that no
    import wrote and that says something else (or a path that cannot be read as a file)."""
    if not path.exists():
        return False
    try:
        old = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    return not marked(old) and old != content


def write_suites(suites: list[ImportedSuite], out_dir: Path, provider: str | None = None,
                 allow_empty: bool = False) -> list[Path]:
    """Write each suite (and its extra files) under `out_dir`; returns the paths written. A hollow
    suite is refused (ImportRefused, nothing written) unless `allow_empty`. Importing again replaces what
    the last import wrote (a python stub to edit excepted); a file evalspec did not write, such as the
    source itself when `-o` is its folder, is never overwritten: the import is refused, nothing written."""
    if not allow_empty:
        for suite in suites:
            leave_out_unchecked(suite)
        check_not_hollow(suites)
    files: list[tuple[Path, str, bool]] = []  # (path, content, replace what an earlier import wrote)
    for suite in suites:
        with_provider(suite, provider)
        path = out_dir / suite.filename  # a relative path: an imported folder's sub-folders are kept
        files.append((path, render_suite(suite), True))
        for name, content in suite.files.items():  # relative to the suite (a stub, code, fragments)
            if name.endswith((".yaml", ".yml")) and not marked(content):
                content = f"# Imported by evalspec from {suite.source or suite.filename}\n" + content
            files.append((path.parent / name, content, name != STUB_FILE))
    clashes = [Problem(str(p), None, "", "exists and was not written by evalspec: not overwritten; choose another -o")
               for p, content, _ in files if _overwrites(p, content)]
    if clashes:
        raise WouldOverwrite(clashes)
    written: list[Path] = []
    for path, content, replace in files:
        if path.exists() and not replace:
            continue  # the stub a user may have edited
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written
