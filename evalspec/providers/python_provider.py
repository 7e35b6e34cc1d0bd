"""`python: FILE.py:function` — a function (sync or async) is the system under test.

The function runs through `evalspec.core.usercode`: whatever it raises (`SystemExit` included) is this
call's error, a sync function that hangs is abandoned on its thread, and a reply that is missing
(`None`, a dict without `content`) is an error, never an empty string.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec.config.strategies import HISTORY_KEY
from evalspec.core.errors import LoadError, ProviderError, UserCodeError
from evalspec.core.pyref import load_callable
from evalspec.core.usercode import call_user, describe
from evalspec.extend.kinds import SuiteView, provider_kind
from evalspec.extend.provider import (
    CallContext,
    ProviderResponse,
    as_parts,
    json_safe,
    normalize_finish_reason,
)
from evalspec.extend.replies import reply
from evalspec.extend.transcript import ChatMessage
from evalspec.providers import reads
from evalspec.providers.history import ContextStrategy, strategy_metadata

if TYPE_CHECKING:
    from evalspec.config.model import ProviderSpec


#: the files each module (FILE.py or module name, and the suite's folder) read while it was imported
_IMPORT_READS: dict[tuple[str, str], set[str]] = {}


class PythonProvider:
    reads_files = True  # its cache entries hold the files it read (evalspec.providers.reads)

    def __init__(self, pid: str, ref: str, base_dir: Path) -> None:
        # absolute once: every call's cache entry names the files it read relative to this folder
        self.id, self.ref, self.base_dir = pid, ref, Path(os.path.abspath(base_dir))
        self._fn: Any = None
        self.strategy = ContextStrategy()  # `history:` is attached by the provider pool
        self._module_key = (self.ref.rpartition(":")[0], str(self.base_dir))

    def cache_identity(self) -> dict[str, object]:
        # `module:function` is imported by name (sys.path), wherever the suite is: no path in the identity, so
        # a Ray worker (the suite unpacked elsewhere) finds the driver's cached replies
        return {"python": self.ref}

    def load(self) -> None:
        """Import the function now, so a bad reference stops the run before any call."""
        try:
            with reads.recording() as opened:  # what the module reads as it is imported counts for every call
                self._fn = load_callable(self.ref, self.base_dir)
            if opened:
                _IMPORT_READS.setdefault(self._module_key, set()).update(opened)
        except LoadError as exc:
            raise ProviderError(str(exc)) from exc
        except BaseException as exc:  # importing user code may even sys.exit()
            raise ProviderError(f"{self.ref!r}: importing failed: {describe(exc)}") from None

    async def respond(self, messages: list[ChatMessage], context: CallContext) -> ProviderResponse:
        if self._fn is None:
            self.load()
        sent, usage = await self.strategy.build(None, messages, context)
        ctx = {"thread_id": context.thread_id, "vars": dict(context.vars), "test_id": context.test_id,
               "turn": context.turn, "repeat": context.repeat,
               **({"state": dict(context.state)} if context.state is not None else {})}
        sent = named_results(sent)
        reads.note(_IMPORT_READS.get(self._module_key, ()))
        start = time.perf_counter()
        try:  # `sent` is the user's to change: every call's history is built afresh from the transcript
            result = await call_user(reads.carried(self._fn), sent, ctx)
        except UserCodeError as exc:
            raise ProviderError(f"{self.ref} raised {exc}") from None
        latency = (time.perf_counter() - start) * 1000
        return strategy_metadata(to_response(result, latency, self.ref), usage)


def named_results(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The history with each `role: tool` message named by the call it answers (`name`), as a python agent
    reads the results of its calls (docs/en/world.md#the-world-and-the-tools)."""
    if not any(m.get("role") == "tool" for m in messages):
        return list(messages)  # no tool results to name (nearly every turn): the same list, afresh
    names = {c["id"]: c["function"]["name"] for m in messages if m.get("role") == "assistant"
             for c in m.get("tool_calls") or []}

    def named(m: ChatMessage) -> ChatMessage:
        out = m.copy()
        out["name"] = names.get(m.get("tool_call_id", "")) or ""
        return out
    return [named(m) if m.get("role") == "tool" and "name" not in m else m for m in messages]


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _money(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def to_response(result: Any, latency: float, where: str) -> ProviderResponse:
    """A python provider's return value as a response; a missing reply is an error (docs/en/providers.md#no-reply)."""
    if isinstance(result, str):
        return ProviderResponse(str(result), latency)
    if result is None:
        return reply(ProviderResponse("", latency), None, where,
                     "it returned None (return a string or a dict with 'content')")
    if not isinstance(result, dict):
        raise ProviderError(f"{where} returned {type(result).__name__}; expected a string or a dict with 'content'")
    content = result.get("content")
    tool_calls = result.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise ProviderError(f"{where} returned 'tool_calls' as {type(tool_calls).__name__}; expected a list")
    if content is not None and not isinstance(content, str):
        raise ProviderError(f"{where} returned 'content' as {type(content).__name__}; expected a string")
    usage = result.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    metadata = result.get("metadata")
    state = result.get("state")  # the bot's own state after the turn (docs/en/state.md)
    if state is not None and not isinstance(state, dict):
        raise ProviderError(f"{where} returned 'state' as {type(state).__name__}; expected a dict")
    parts = result.get("parts")
    finish = result.get("finish_reason")  # why the model behind it stopped (`stop`, `length`, ...)
    if finish is not None and not isinstance(finish, str):
        raise ProviderError(f"{where} returned 'finish_reason' as {type(finish).__name__}; expected a string")
    response = ProviderResponse("", latency, tokens=_count(usage.get("total_tokens")),
                                prompt_tokens=_count(usage.get("prompt_tokens")),
                                completion_tokens=_count(usage.get("completion_tokens")),
                                cost=_money(result.get("cost")), tool_calls=json_safe(tool_calls) or None,
                                metadata=json_safe(metadata) if isinstance(metadata, dict) else {},
                                state=json_safe(state) if state is not None else None,
                                parts=as_parts(parts, f"{where} returned 'parts':") if parts is not None else None,
                                finish_reason=normalize_finish_reason(finish))
    keys = ", ".join(map(repr, list(result)[:8])) or "none"
    why = ("its 'content' is None and there are no tool calls" if "content" in result
           else f"the dict has no 'content' (keys: {keys})")
    return reply(response, content, where, why)


# -- the `python` kind ---------------------------------------------------------------------------

def python_ref_problems(raw: Mapping[str, object]) -> list[tuple[tuple[str, ...], str]]:
    ref = raw["python"]
    if isinstance(ref, str) and ":" not in ref:
        return [(("python",), f"provider '{raw.get('id')}': '{ref}' is not FILE.py:function or module:function")]
    return []


def python_problems(spec: ProviderSpec, suite: SuiteView) -> list[str]:
    """A function that cannot be imported, found before any call."""
    try:
        PythonProvider(spec.id, str(spec.config["python"]), suite.path.parent).load()
    except ProviderError as exc:
        return [str(exc)]
    return []


@provider_kind("python", schema={"type": "string",
                                 "description": "FILE.py:function (relative to the suite) or module:function"},
               doc="FILE.py:function or module:function, called as respond(messages, context)",
               keys={"history": HISTORY_KEY}, check=python_ref_problems, preflight=python_problems)
def build_python(spec: ProviderSpec, suite: SuiteView) -> PythonProvider:
    """A python provider whose cache identity covers its file and the `.py` files of its folder tree, so
    editing the provider or a module it imports is a cache miss."""
    base_dir = suite.path.parent
    provider = PythonProvider(spec.id, str(spec.config["python"]), base_dir)
    target = provider.ref.rpartition(":")[0]
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        identity: dict[str, object] = {"python": provider.ref, "sha256": source_digest(path) if path.is_file() else "missing"}
        provider.cache_identity = lambda: identity  # type: ignore[method-assign]
    return provider


SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", "env"}
MAX_SOURCE_FILES = 1000
MAX_WALKED_ENTRIES = 20_000  # a provider beside a large data folder must not make every run slow


def source_digest(path: Path) -> str:
    """sha256 over `path` and the `.py` files under its folder (up to 1,000, hidden and virtualenv
    folders skipped), each named by its relative path."""
    root = path.parent
    digest = hashlib.sha256(b"entry:" + path.name.encode() + b"\0" + path.read_bytes())
    files: list[Path] = []
    walked = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        files.extend(Path(folder) / n for n in sorted(names) if n.endswith(".py"))
        walked += len(names) + len(dirs)
        if len(files) >= MAX_SOURCE_FILES or walked >= MAX_WALKED_ENTRIES:
            break
    for file in files[:MAX_SOURCE_FILES]:
        try:
            data = file.read_bytes()
        except OSError:
            data = b"<unreadable>"
        digest.update(file.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()
