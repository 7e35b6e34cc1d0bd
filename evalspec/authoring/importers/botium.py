"""BotiumScript (`.convo.txt`, `.pconvo.txt`, `.utterances.txt`) as evalspec suites (docs/en/state.md, §19).

A convo is a title line and `#me` / `#bot` sections: the lines of one `#me` are one user message, the
`#bot`s after it check its reply, matched as Botium does by default (`wildcardIgnoreCase`: a
case-insensitive search anywhere in the reply, `*` any text). `INCLUDE NAME` splices a partial convo
(`include:` of a fragment file written beside the suite), an utterance list named by a `#me` becomes a
matrix over its phrasings, `$name` in a `#bot` line captures that word for later turns, and `BUTTON x`
presses a button (`click:`). A convo using `$names` a scripting-memory file defines gets that file as its
`dataset:` (a JSONL beside the suite, one row a case): each `$name` is the row's value. The suites get an `http:` provider to edit (or `--provider`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalspec.authoring.importers import ImportedSuite, dump_yaml, literal, plain, provider_from_spec
from evalspec.authoring.importers.botium_files import Convo, Source, read_folder
from evalspec.authoring.importers.rasa import SourceRefused
from evalspec.authoring.importers.rasa_checks import jp_literal
from evalspec.core.errors import ConfigError, Problem
from evalspec.core.suggest import slugify

DEFAULT_PROVIDER: dict[str, object] = {
    "id": "bot",
    "http": {"url": "http://localhost:8080/chat", "body": {"session": "{{ thread_id }}", "text": "{{ message }}"},
             "response": "messages[].text", "parts": "messages", "state": "@", "stateful": True},
}
_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_TEXT_ASSERTERS = {f"TEXT_{kind}_{mode}{ic}" for kind in ("CONTAINS", "REGEXP", "WILDCARD", "WILDCARDEXACT")
                   for mode in ("ANY", "ALL") for ic in ("", "_IC")} | {"TEXT_EQUALS", "TEXT_EQUALS_IC", "TEXT"}
KNOWN_HOOKS = _TEXT_ASSERTERS | {
    "BUTTONS", "INTENT", "ENTITIES", "JSON_PATH", "INCLUDE", "BUTTON", "MEDIA", "CARDS", "FORM", "FORMS",
    "JSON_PATH_COUNT", "RESPONSE_LENGTH", "ENTITY_VALUES", "ENTITY_CONTENT", "INTENT_UNIQUE", "INTENT_CONFIDENCE",
    "PAUSE", "PAUSE_ASSERTER", "WAIT_FOR_BOT", "SET_SCRIPTING_MEMORY", "CLEAR_SCRIPTING_MEMORY", "UPDATE_CUSTOM",
    "SKIP_BOT_UNCONSUMED", "BOT_CONSUMED", "BOT_UNCONSUMED_COUNT", "CONDITIONAL_STEP_TIME_BASED",
    "CONDITIONAL_STEP_BUSINESS_HOURS", "CONDITIONAL_STEP_JSON_PATH_BASED", "ORDERED_LIST_TO_BUTTON", "LINKS",
    "CHECKLINK", "TEXT_WILDCARD", "SET_ACTIVITY_VALUE", "SET_SCRIPTING_MEMORY_FROM_JSON_PATH",
}


@dataclass
class _Out:
    """A convo (or a partial) being converted."""

    entries: list[dict[str, Any]] = field(default_factory=list)  # turns, includes and fragments: built here
    lead: list[dict[str, object]] = field(default_factory=list)  # a partial's checks before its first #me
    test_checks: list[dict[str, object]] = field(default_factory=list)
    turns: int = 0
    target: tuple[str, int] | None = None  # ("entry", index) or ("turns", N): what a #bot checks


def _hook(line: str) -> tuple[str, bool, list[str]] | None:
    """A logic hook / asserter line -> (NAME, negated, args); None for text."""
    match = re.match(r"(!?)([A-Z][A-Z0-9_]+)(?:\s+(.*))?\Z", line.strip())
    if not match:
        return None
    name, rest = match.group(2), match.group(3)
    if name not in KNOWN_HOOKS and not (rest and "|" in rest):
        return None
    args = [a.strip() for a in rest.split("|")] if rest and name != "INCLUDE" else [rest.strip()] if rest else []
    return name, bool(match.group(1)), args


def wildcard(text: str, anchored: bool = False, captured: frozenset[str] = frozenset(),
             group: str | None = None) -> str:
    """Botium's wildcard match as a regex: case-insensitive, `*` any text, `$name` a word (`(\\S+)` for
    `group`, a captured var's value for vars already captured)."""
    out = []
    for piece in re.split(r"(\*|\$[A-Za-z_][A-Za-z0-9_]*)", text):
        if piece == "*":
            out.append(".*")
        elif piece.startswith("$") and len(piece) > 1:
            name = piece[1:]
            out.append("(\\S+)" if name == group else "{{ " + name + " }}" if name in captured else "\\S+")
        else:
            out.append(re.escape(piece).replace("\\ ", " "))
    body = "".join(out)
    return "(?is)" + (f"^\\s*{body}\\s*$" if anchored else body)


# Botium's scripting-memory functions (`$now`, `$random(10)`, `$env(NAME)`, ...): values Botium computes
_FUNCTIONS = {"now", "now_EN", "now_DE", "now_ISO", "date", "date_EN", "date_DE", "date_ISO", "time", "time_EN",
              "time_DE", "time_ISO", "time_HH_MM", "time_HH", "time_H_A", "timestamp", "tomorrow", "yesterday",
              "date_add", "date_subtract", "year", "month", "month_MM", "day_of_month", "day_of_week", "random",
              "random10", "uniqid", "projectname", "testsessionname", "testcasename", "env", "cap", "msg", "func"}
_ENV = re.compile(r"\$env\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)")


def _user_text(text: str, captured: set[str], notes: list[str], where: str, memory: frozenset[str] = frozenset()) -> str:
    """A `#me` text: a captured `$name` or one the scripting memory defines is its value (`{{ name }}`);
    `$env(NAME)` is the environment variable (`${NAME}`, docs/en/importers.md#coming-from-botium)."""
    pieces = []
    for piece in re.split(r"(\$env\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\)|\$[A-Za-z_][A-Za-z0-9_]*)", text):
        if env := _ENV.fullmatch(piece):
            pieces.append("${" + env.group(1) + "}")
        elif piece.startswith("$") and (piece[1:] in captured or piece[1:] in memory):
            pieces.append("{{ " + piece[1:] + " }}")
        elif piece.startswith("$") and piece[1:] in _FUNCTIONS:
            notes.append(f"{where}: Botium's {piece} function is not converted: sent as written")
            pieces.append(literal(piece))
        else:
            if piece.startswith("$") and len(piece) > 1 and piece[1:] not in memory:
                notes.append(f"{where}: {piece} is not captured by an earlier #bot line: sent as written")
            pieces.append(literal(piece))
    return "".join(pieces)


def _quoted_field(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else json.dumps(name, ensure_ascii=False)


def _jmespath(path: str) -> str | None:
    """A JSONPath (`$.a.b[*].c`, `$['first name']`, `$.items[?(@.type == 'text')].text`) as JMESPath
    (`a.b[].c`, `"first name"`, `items[?type == 'text'].text`); None when it cannot be converted."""
    import jmespath

    if ".." in path:  # recursive descent: JMESPath has none
        return None
    out = re.sub(r"^\$\.?", "", path.strip())
    out = re.sub(r"\[\*\]", "[]", out)
    out = re.sub(r"\[\?\((.*?)\)\]", lambda m: "[?" + re.sub(r"@\.", "", m.group(1)) + "]", out)
    out = re.sub(r"\[['\"]([^'\"]+)['\"]\]", lambda m: "." + _quoted_field(m.group(1)), out).lstrip(".")
    out = ".".join(_quoted_field(p) if " " in p and not p.startswith('"') and "[" not in p else p
                   for p in out.split(".")) if "[?" not in out else out
    try:
        jmespath.compile(out or "@")
    except jmespath.exceptions.JMESPathError:
        return None
    return out or "@"


class _Converter:
    def __init__(self, partials: dict[str, Convo], utterances: dict[str, list[str]], notes: list[str]) -> None:
        self.partials, self.utterances, self.notes = partials, utterances, notes
        self.fragments: dict[str, str] = {}  # file (relative to the suite) -> YAML
        self.matrix: dict[str, list[str]] = {}
        self.captured: set[str] = set()
        self.memory: set[str] = set()  # the $names scripting memory defines: values, never captures

    def asserter(self, name: str, negated: bool, args: list[str], where: str) -> list[dict[str, object]]:
        no = "not-" if negated else ""
        ic = name.endswith("_IC")
        base = name[:-3] if ic else name
        if base.startswith("TEXT"):  # an argument naming an utterance list stands for its phrasings
            args = [p for a in args for p in (self.utterances.get(a) or [a])]
            checks = self._text_checks(base, ic, negated, args)
            if checks is not None:
                return checks
        if name == "BUTTONS":
            if not args or args == [""]:
                self.notes.append(f"{where}: BUTTONS without titles (any button) not converted")
                return []
            return [{f"{no}buttons": plain(args)}]
        if name == "INTENT" and args:
            return [{f"{no}state": {"path": "intent", "equals": plain(args[0])}}]
        if name == "ENTITIES" and args:
            return [{f"{no}state": plain(f"contains(entities[].entity, {jp_literal(a)})")} for a in args if a]
        if name == "ENTITY_VALUES" and any(args):  # every value among the entities' values
            return [{f"{no}state": plain(f"contains(entities[].value, {jp_literal(a)})")} for a in args if a]
        if name == "ENTITY_CONTENT" and len(args) > 1 and args[0]:  # the entity's values hold every one given
            entity = jp_literal(args[0])
            return [{f"{no}state": plain(f"contains(entities[?entity == {entity}].value, {jp_literal(a)})")}
                    for a in args[1:] if a]
        if name == "JSON_PATH" and args:
            converted = _jmespath(args[0])
            if converted is None:
                self.notes.append(f"{where}: JSON_PATH {args[0]}: not converted (no JMESPath equivalent)")
                return []
            path = converted
            if len(args) < 2:
                return [{f"{no}state": {"path": plain(path), "exists": True}}]
            if "[]" in path or "[?" in path:  # a projection: a list of values
                return [{f"{no}state": plain(f"contains({path}, {jp_literal(args[1])})")}]
            return [{f"{no}state": {"path": plain(path), "equals": plain(args[1])}}]
        self.notes.append(f"{where}: {'!' if negated else ''}{name}{' ' + ' | '.join(args) if args else ''}: not converted")
        return []

    def _text_checks(self, base: str, ic: bool, negated: bool, args: list[str]) -> list[dict[str, object]] | None:
        """A TEXT_* asserter on the reply's text (its utterance lists expanded), or None when it is no such
        asserter this form converts."""
        no = "not-" if negated else ""
        if base in ("TEXT_EQUALS", "TEXT") and not any(args):  # no argument: any text (`!`: none)
            return [{f"{no}regex": "(?s)."}]
        if base in ("TEXT_CONTAINS_ANY", "TEXT_CONTAINS_ALL") and args:
            if base.endswith("ANY") or negated:
                if not ic and base.endswith("ANY"):
                    return [{f"{no}contains-any": literal(args)}]
                joined = "|".join(re.escape(a) for a in args) if base.endswith("ANY") \
                    else "".join(f"(?=.*{re.escape(a)})" for a in args)
                return [{f"{no}regex": plain(("(?is)" if ic else "(?s)") + ("" if base.endswith("ANY") else "^") + joined)}]
            return [{"icontains": literal(a)} for a in args] if ic else [{"contains-all": literal(args)}]
        if base in ("TEXT_REGEXP_ANY", "TEXT_REGEXP_ALL") and args:
            flag = "(?i)" if ic else ""
            if base.endswith("ANY") or len(args) == 1:
                return [{f"{no}regex": plain(flag + "|".join(f"(?:{a})" for a in args))}]
            if negated:
                return [{"not-regex": plain("(?s)" + flag + "^" + "".join(f"(?=.*(?:{a}))" for a in args))}]
            return [{"regex": plain(flag + a)} for a in args]
        if base in ("TEXT_WILDCARD_ANY", "TEXT_WILDCARD_ALL", "TEXT_WILDCARDEXACT_ANY", "TEXT_WILDCARDEXACT_ALL") and args:
            exact = "EXACT" in base
            flag = "(?is)" if ic else "(?s)"
            bodies = [wildcard(a, exact, frozenset(self.captured))[len("(?is)"):] for a in args]
            if base.endswith("ANY") or len(bodies) == 1:
                return [{f"{no}regex": plain(flag + "|".join(f"(?:{b})" for b in bodies))}]
            return [{"regex": plain(flag + b)} for b in bodies] if not negated else \
                [{"not-regex": plain(flag + "^" + "".join(f"(?=.*(?:{b}))" for b in bodies))}]
        if base in ("TEXT_EQUALS", "TEXT") and args and any(args):  # equals any of its arguments
            if ic or len(args) > 1:
                body = "|".join(re.escape(a) for a in args)
                return [{f"{no}regex": plain(("(?i)" if ic else "") + "^\\s*"
                                             + (f"(?:{body})" if len(args) > 1 else body) + "\\s*$")}]
            return [{f"{no}equals": literal(args[0])}]
        return None

    def bot(self, lines: list[str], where: str) -> tuple[list[dict[str, object]], dict[str, object], list[str]]:
        """A #bot section -> (checks, captures, INCLUDE names)."""
        checks: list[dict[str, object]] = []
        captures: dict[str, object] = {}
        includes: list[str] = []
        texts: list[str] = []
        for line in lines:
            hook = _hook(line)
            if hook is None:
                texts.append(line)
                continue
            name, negated, args = hook
            if name == "INCLUDE":
                includes += args
            else:
                checks += self.asserter(name, negated, args, where)
        text = "\n".join(texts).strip()
        if text:
            negated = text.startswith("!")
            if negated:
                text = text[1:]
            no = "not-" if negated else ""
            if text in self.utterances:
                phrasings = self.utterances[text]
                checks.insert(0, {f"{no}regex": plain("(?is)" + "|".join(f"(?:{wildcard(p)[5:]})" for p in phrasings))})
            else:
                names = [n for n in _VAR.findall(text) if n not in self.captured and n not in self.memory]
                known = frozenset(self.captured | self.memory)  # values: the scripting memory's from the dataset row
                if "*" not in text and not _VAR.search(text):
                    checks.insert(0, {f"{no}icontains": literal(text)})
                elif "*" not in text and not names:  # only values: contains the text with them put in
                    checks.insert(0, {f"{no}icontains": _user_text(text, set(known), [], where)})
                else:
                    checks.insert(0, {f"{no}regex": plain(wildcard(text, captured=known))})
                if not negated:
                    for name in names:
                        captures[name] = {"regex": plain(wildcard(text, captured=frozenset(self.captured), group=name))}
        return checks, captures, includes

    def attach(self, out: _Out, checks: list[dict[str, object]], captures: dict[str, object], where: str,
               fragment: bool) -> None:
        if out.target is None:
            if fragment:
                out.lead += checks
            elif checks:
                self.notes.append(f"{where}: a #bot before the first #me (the bot's greeting) is not checked")
            if captures:
                self.notes.append(f"{where}: capture of {', '.join('$' + n for n in captures)} before the first #me")
            return
        kind, n = out.target
        if kind == "entry":
            entry = out.entries[n]
            if checks:
                entry.setdefault("assert", []).extend(checks)
            if captures:
                entry.setdefault("capture", {}).update(captures)
                self.captured.update(captures)
        else:
            if fragment and checks:
                self.notes.append(f"{where}: a #bot right after a nested INCLUDE is not checked (a fragment has "
                                  "no test-level checks)")
            else:
                out.test_checks += [{**c, "scope": {"turns": [n]}} for c in checks]
            if captures:
                self.notes.append(f"{where}: capture of {', '.join('$' + n for n in captures)} right after an "
                                  "INCLUDE is not converted")

    def include(self, out: _Out, name: str, stack: tuple[str, ...], where: str, fragment: bool) -> None:
        partial = self.partials.get(name)
        if partial is None:
            raise SourceRefused(f"INCLUDE {name}: no partial convo (.pconvo.txt) titled {name!r}")
        if name in stack:
            raise SourceRefused("INCLUDE cycle: " + " -> ".join([*stack, name]))
        frag_file = f"{slugify(name) or 'partial'}.yaml"
        sub = self.convert(partial, (*stack, name), fragment=True)
        self.attach(out, sub.lead, {}, where, fragment)
        body = dump_yaml({"conversation": sub.entries})
        self.fragments["fragments/" + frag_file] = (f"# Fragment imported by evalspec from {partial.rel}\n"
                                                    + body)
        out.entries.append({"include": (frag_file if fragment else "fragments/" + frag_file)})
        if sub.turns:
            out.turns += sub.turns
            out.target = ("turns", out.turns)

    def convert(self, convo: Convo, stack: tuple[str, ...], fragment: bool = False) -> _Out:
        out = _Out()
        for head, lines, number in convo.sections:
            where = f"{convo.rel}:{convo.where_unit}{number}"
            if head == "#me":
                texts, includes, click = [], [], None
                for line in lines:
                    hook = _hook(line)
                    if hook is None:
                        texts.append(line)
                    elif hook[0] == "INCLUDE":
                        includes += hook[2]
                    elif hook[0] == "BUTTON" and hook[2]:
                        click = " | ".join(hook[2])
                    else:
                        self.notes.append(f"{where}: #me {hook[0]}: not converted")
                text = "\n".join(texts).strip()
                entry: dict[str, object]
                if click is not None:
                    value = _user_text(click, self.captured, self.notes, where, frozenset(self.memory))
                    entry = {"click": value} if out.turns or fragment else {"user": value}
                    if text:
                        self.notes.append(f"{where}: the text beside BUTTON is not sent ({text[:40]!r})")
                elif text in self.utterances:
                    key = slugify(text).replace("-", "_") or "utterance"
                    self.matrix[key] = plain(list(dict.fromkeys(self.utterances[text])))  # one id a phrasing
                    entry = {"user": "{{ " + key + " }}"}
                elif text or not includes:
                    entry = {"user": _user_text(text, self.captured, self.notes, where, frozenset(self.memory))}
                else:
                    entry = {}
                if entry:
                    out.entries.append(entry)
                    out.turns += 1
                    out.target = ("entry", len(out.entries) - 1)
                for name in includes:
                    self.include(out, name, stack, where, fragment)
            elif head == "#bot":
                checks, captures, includes = self.bot(lines, where)
                self.attach(out, checks, captures, where, fragment)
                for name in includes:
                    self.include(out, name, stack, where, fragment)
            elif head == "#include":  # `#include NAME` (or one partial's name a line)
                for line in lines:
                    hook = _hook(line)
                    for name in hook[2] if hook and hook[0] == "INCLUDE" else [line.strip()] if line.strip() else []:
                        self.include(out, name, stack, where, fragment)
            else:
                for line in lines:
                    hook = _hook(line)
                    if hook and hook[0] == "INCLUDE":
                        for name in hook[2]:
                            self.include(out, name, stack, where, fragment)
                    elif line.strip():
                        self.notes.append(f"{where}: {head} {line.strip()[:60]}: not converted")
        return out


def convo_test(convo: Convo, source: Source, notes: list[str]) -> tuple[dict[str, object], dict[str, str]]:
    """One convo -> (its test, its fragment files). Raises SourceRefused (an INCLUDE that cannot be resolved)."""
    conv = _Converter(source.partials, source.utterances, notes)
    conv.memory = {k for _, rows in source.memory for row in rows for k in row if k != "id"}
    out = conv.convert(convo, (convo.title,))
    test: dict[str, object] = {"id": slugify(convo.title)[:60] or "convo", "name": plain(convo.title)}
    written = json.dumps([out.entries, out.test_checks, conv.fragments], ensure_ascii=False)
    if used := {n for n in conv.memory if "{{ " + n + " }}" in written}:
        test["dataset"] = _memory_dataset(source, used, notes, convo.title)
    if conv.matrix and "dataset" not in test:
        test["matrix"] = conv.matrix
    elif conv.matrix:
        test["vars"] = {key: values[0] for key, values in conv.matrix.items()}
        notes.append(f"{convo.title}: utterance phrasings are not expanded in a scripting-memory convo (its "
                     f"dataset rows are its instances): the first phrasing of each is sent")
    test["conversation"] = out.entries
    if out.test_checks:
        test["assert"] = out.test_checks
    return test, conv.fragments


def _suite_name(rel: str) -> str:
    path = Path(rel)
    stem = re.sub(r"\.(p?convo)?\.?(txt|ya?ml|json|csv|xlsx)\Z", "", path.name, flags=re.IGNORECASE)
    return str(path.parent / f"{slugify(stem) or 'convo'}.yaml")


def _unique_ids(tests: list[dict[str, object]]) -> None:
    seen: dict[str, int] = {}
    for test in tests:
        tid = str(test["id"])
        n = seen[tid] = seen.get(tid, 0) + 1
        if n > 1:
            test["id"] = f"{test['id']}-{n}"


def _memory_jsonl(source: Source, rel: str) -> str:
    """The dataset a scripting-memory file is written as, beside the suite, named after it (`-2`, `-3` after
    the name when files in other sub-folders have the same name: one name, one file)."""
    taken: dict[str, str] = {}
    for other, _ in source.memory:
        stem = slugify(Path(other).name.split(".")[0].split(" (")[0]) or "memory"
        name, n = f"{stem}.jsonl", 1
        while name in taken.values():
            n += 1
            name = f"{stem}-{n}.jsonl"
        taken[other] = name
    return taken[rel]


def _memory_dataset(source: Source, used: set[str], notes: list[str], title: str) -> str:
    """The dataset of a convo whose `$names` the scripting memory defines (docs/en/importers.md#coming-from-botium):
    the memory file that defines most of them; names only another file defines are listed."""
    rel, rows = max(source.memory, key=lambda m: len(used & {k for row in m[1] for k in row}))
    if missing := sorted(used - {k for row in rows for k in row}):
        notes.append(f"{title}: {', '.join('$' + n for n in missing)} defined in another scripting-memory file than "
                     f"{rel}: one dataset a test, so these are not filled in")
    return _memory_jsonl(source, rel)


def _memory_files(source: Source, tests: list[dict[str, object]]) -> dict[str, str]:
    """The scripting-memory files `tests` use, as JSONL datasets: one row a case, its name the row's `id`
    (left out when two cases share a name, so that each row keeps its own instance id)."""
    files: dict[str, str] = {}
    wanted = {t["dataset"] for t in tests if "dataset" in t}
    for rel, rows in source.memory:
        if (name := _memory_jsonl(source, rel)) not in wanted:
            continue
        names = [row.get("id") for row in rows]
        unique = all(names) and len(set(names)) == len(names)
        files[name] = "".join(json.dumps(row if unique else {k: v for k, v in row.items() if k != "id"},
                                         ensure_ascii=False) + "\n" for row in rows)
    return files


def import_botium(target: Path, provider: str | None = None, allow_empty: bool = False
                  ) -> tuple[list[ImportedSuite], list[tuple[str, str]]]:
    """A BotiumScript file (partials, utterances and scripting memory from its folder), or a folder read
    recursively (sub-folders kept) -> (suites, convos left out with their reasons). Convo by convo: a convo
    that cannot be converted, or would check nothing, is left out and named (by its path relative to the
    folder) at the top of every suite written from the folder; `allow_empty` keeps convos that check nothing."""
    from evalspec.authoring.importers import hollow_problems

    root = target.parent if target.is_file() else target
    files = sorted(p for p in (root.rglob("*") if target.is_dir() else root.iterdir())
                   if p.is_file() and "node_modules" not in p.parts)
    source = read_folder(files, root)
    left_out: list[tuple[str, str]] = list(source.unread)
    if target.is_file():
        rel = str(target.relative_to(root))
        source.convos = [c for c in source.convos if c.rel == rel]
        if not source.convos and not left_out:
            raise ConfigError([Problem(str(target), None, "", "expected a BotiumScript convo file (.convo.txt, "
                                       ".convo.yml, .convo.json, .convo.csv, .xlsx) or a folder")])
    by_file: dict[str, list[tuple[dict[str, object], dict[str, str], list[str]]]] = {}
    for convo in source.convos:
        name = f"{convo.rel} ({convo.title})" if sum(c.rel == convo.rel for c in source.convos) > 1 else convo.rel
        notes: list[str] = []
        try:
            test, fragments = convo_test(convo, source, notes)
        except SourceRefused as exc:
            left_out.append((name, str(exc)))
            continue
        probe = ImportedSuite(filename="", data={"tests": [test]}, not_converted=notes, source=convo.rel)
        hollow = [] if allow_empty else hollow_problems(probe)
        if hollow:
            why = "; ".join(f"{p.path + ': ' if p.path else ''}{p.message.split(': ')[0]}" for p in hollow)
            lost = [n.split(": ", 1)[-1] for n in notes]
            left_out.append((name, why + (f" ({'; '.join(lost[:3])})" if lost else " (its source checks nothing)")))
            continue
        by_file.setdefault(convo.rel, []).append((test, fragments, notes))
    suites = []
    for rel, converted in by_file.items():
        tests = [t for t, _, _ in converted]
        _unique_ids(tests)
        fragments = {k: v for _, f, _ in converted for k, v in f.items()}
        memory_files = _memory_files(source, tests)
        data: dict[str, object] = {"description": f"Imported from BotiumScript {rel}",
                                "providers": [provider_from_spec(provider) if provider else DEFAULT_PROVIDER],
                                "tests": tests}
        suites.append(ImportedSuite(filename=_suite_name(rel), data=data, source=rel,
                                    not_converted=[n for _, _, notes in converted for n in notes],
                                    files={**fragments, **memory_files}))
    left = [f"{name}: {why}" for name, why in left_out]
    for suite in suites:
        suite.left_out = left
    return suites, left_out
