"""promptfoo's prompt functions (`prompts: [file://prompt.js:fn]`, `file://prompt.py:fn`) rendered at import:
called for each test and provider with `{vars, provider: {id, label}, config}` as promptfoo calls them, the
JavaScript in node, the python in a python process of its own, both started once in the config's folder."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from evalspec.authoring.importers.promptfoo.runners import PROMPT_WORKER, runner_source
from evalspec.authoring.importers.promptfoo.source import Part, Source
from evalspec.core.errors import GradingError
from evalspec.core.node import NodeWorker, answer_of, node_binary, typescript_problem

FUNCTION_SECONDS = 60
FUNCTION_FILE = r"(.+\.(?:js|cjs|mjs|ts|cts|mts|py))(?::([\w.]+))?"



@dataclass(frozen=True)
class PromptFunction:
    """A prompt promptfoo gets by calling the user's code: the file, its function ("" for a JavaScript
    module's default export) and the prompt entry's `config`."""

    file: Path
    function: str
    written: str
    config: Any = field(default=None, compare=False)

    @property
    def python(self) -> bool:
        return self.file.suffix == ".py"


class PromptFunctions(Part):
    def __init__(self, source: Source) -> None:
        super().__init__(source)
        self.prompt_providers: list[tuple[str, Any]] = []  # promptfoo's (id, label) of each provider: a function's
        self._workers: dict[bool, NodeWorker] = {}  # the process prompt functions run in: python (True) or node
        self._failed: set[PromptFunction] = set()  # called once: a function that failed is not called again

    def prompt_function(self, target: str, config: Any, where: str) -> list[Any] | None:
        """The prompt of a `file://prompt.js[:fn]` or `file://prompt.py:fn` entry (noted when it cannot be
        called at import: [] ); None when `target` names no script."""
        found = regex.fullmatch(FUNCTION_FILE, target)
        if found is None:
            return None
        written = f"file://{target}"
        path = self.source.inside(found[1], where)
        if path is None:
            return []
        if not path.is_file():
            self.source.notes.append(f"prompt {written}: no such file next to the config")
            return []
        function = found[2] or ""
        if path.suffix == ".py" and not function:
            self.source.notes.append(f"prompt {written}: a python prompt script run whole (its output the prompt): not "
                                     "converted; name its function (file://prompt.py:fn)")
            return []
        if path.suffix != ".py" and node_binary() is None:
            self.source.problem(where, f"prompt {written}: a JavaScript prompt function, run by Node.js: no `node` on PATH")
            return []
        if (why := typescript_problem(path)) is not None:
            self.source.notes.append(f"prompt {written}: a TypeScript prompt function, not converted: {why}")
            return []
        return [PromptFunction(path, function, written, config)]

    def function_prompt(self, prompt: PromptFunction, variables: dict[str, object], where: str) -> str | None:
        """The prompt `prompt` gives this test's vars (a template still, as promptfoo renders it after the
        function), the same for every provider; None when it cannot be said (a problem or a note, once:
        a function that failed is not called again, so one that hangs costs its time limit once)."""
        if prompt in self._failed:
            return None
        givens: dict[str, str] = {}
        for pid, label in self.prompt_providers or [("", None)]:
            context = {"vars": variables, "provider": {"id": pid, "label": label}, "config": prompt.config or {}}
            called, result = self._call(prompt, context, where)
            text = self._prompt_text(prompt, result, where) if called else None
            if text is None:
                self._failed.add(prompt)
                return None
            givens[pid] = text
        if len(set(givens.values())) > 1:
            self.source.problem(where, f"prompt {prompt.written} gives each provider a different prompt "
                                f"({', '.join(givens)}); a suite sends one conversation to every provider: import "
                                "each provider on its own")
            self._failed.add(prompt)
            return None
        return next(iter(givens.values()))

    def _call(self, prompt: PromptFunction, context: dict[str, object], where: str) -> tuple[bool, Any]:
        """(True, what the function returned), or (False, None) after a problem."""
        worker = self._workers.get(prompt.python)
        try:
            if worker is None or not worker.alive():
                cwd = str(self.source.path.parent.resolve())
                worker = NodeWorker(sys.executable, cwd, [sys.executable, "-c", runner_source(PROMPT_WORKER)]) if prompt.python \
                    else NodeWorker(node_binary() or "node", cwd)
                self._workers[prompt.python] = worker
            request = {"op": "call", "file": str(prompt.file), "fn": prompt.function, "args": [context],
                       "must_call": True}
            answer = answer_of(worker, request, FUNCTION_SECONDS, "the time a prompt function may take at import")
        except (GradingError, OSError) as exc:
            self.source.problem(where, f"prompt {prompt.written}: {exc}")
            return False, None
        if not answer.get("ok"):
            self.source.problem(where, f"prompt {prompt.written} gave no prompt: {answer.get('message')}")
            return False, None
        if answer.get("functions"):
            self.source.problem(where, f"prompt {prompt.written} gave a JavaScript function, not a prompt")
            return False, None
        return True, answer.get("result")

    def _prompt_text(self, prompt: PromptFunction, result: Any, where: str) -> str | None:
        """promptfoo's use of what a prompt function returns: a text is the prompt; `{prompt, config}` its
        prompt (the config, settings of the provider's, is noted); other data is sent as JSON (chat messages)."""
        if isinstance(result, dict) and "prompt" in result:
            if result.get("config"):
                self.source.notes.append(f"prompt {prompt.written}: the provider settings it returns (config: "
                                         f"{', '.join(map(str, result['config']))})")
            result = result["prompt"]
        if isinstance(result, str):
            return result
        if isinstance(result, list):
            messages = [self._text_message(m) for m in result]
            if any(m is None for m in messages):
                self.source.notes.append(f"prompt {prompt.written}: gives messages that are not text (images, audio, "
                                         "several parts): not converted")
                return None
            return json.dumps(messages, ensure_ascii=False)
        if isinstance(result, dict):
            return json.dumps(result, ensure_ascii=False)
        got = "nothing" if result is None else type(result).__name__
        self.source.problem(where, f"prompt {prompt.written} gave {got}, not a text or messages")
        return None

    @staticmethod
    def _text_message(message: Any) -> dict[str, object] | None:
        """A chat message whose content is text (or one text part), with its text as content; None otherwise."""
        if not isinstance(message, dict) or "role" not in message:
            return None
        content = message.get("content", "")
        if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
                and content[0].get("type") == "text" and isinstance(content[0].get("text"), str):
            content = content[0]["text"]
        if not isinstance(content, str) or set(message) - {"role", "content", "name"}:
            return None
        return {**message, "content": content}

    def close_functions(self) -> None:
        """Stop the processes prompt functions ran in."""
        for worker in self._workers.values():
            worker.stop()
        self._workers = {}
