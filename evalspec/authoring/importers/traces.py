"""`evalspec import traces FILE --format otel|langfuse`: production traces -> recorded conversations (the
JSONL that `transcripts:` grades, docs/en/recorded-conversations.md#from-traces).

Each span (OTel) or trace (Langfuse) is one exchange: the messages it sent and the reply it got. Exchanges
are gathered into conversations — one per `gen_ai.conversation.id` / `sessionId`, however far apart; one
without an id joins the conversation of the previous exchange without one when it started less than
`--session-gap` after it — and an exchange carrying the whole history adds only its new messages: those
after the longest prefix it shares with the conversation assembled so far. What cannot be converted is
named (span or trace id, and where it stands in the file), never dropped silently.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from evalspec.authoring.importers.shapes import mappings
from evalspec.core.errors import ConfigError, ControlFlow, Problem
from evalspec.core.exitcodes import ExitCode

ROLES = ("system", "user", "assistant", "tool")
_GAP = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_UNIT_NS = {"ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}
_FLAT = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")  # OpenLLMetry's one attribute per field


class Unconvertible(ControlFlow):
    """An exchange (or a part of it) that cannot become recorded messages: why."""


@dataclass
class Exchange:
    """One span or trace: what it sent and got, when, and in which conversation."""

    name: str  # "span 5b8aa5a2d2c872e8 (resourceSpans[0].scopeSpans[0].spans[3])"
    key: str  # the span's trace id or the trace's id: an anonymous conversation's id
    start: int | None  # unix nanoseconds
    conversation: str | None
    messages: list[dict[str, object]]
    metadata: dict[str, object] = field(default_factory=dict)


@dataclass
class Conversation:
    id: str
    start: int | None
    last: int | None
    messages: list[dict[str, object]] = field(default_factory=list)
    metadata: dict[str, object] = field(default_factory=dict)

    def add(self, exchange: Exchange) -> None:
        """The exchange's messages after the longest prefix they share with the conversation so far."""
        shared = 0
        for mine, theirs in zip(self.messages, exchange.messages, strict=False):
            if _same(mine) != _same(theirs):
                break
            shared += 1
        self.messages.extend(exchange.messages[shared:])
        self.last = exchange.start if exchange.start is not None else self.last


def _same(message: dict[str, object]) -> tuple[Any, ...]:
    """What makes two messages one (call ids aside: instrumentations do not always keep them)."""
    from evalspec.config.recorded import content_text, tool_calls_of  # not at `evalspec --help`

    calls = tuple((c["name"], json.dumps(c["arguments"], sort_keys=True, ensure_ascii=False))
                  for c in tool_calls_of(message.get("tool_calls") or [], 0))
    return message["role"], content_text(message.get("content")), calls


def parse_gap(text: str) -> int:
    """`30m`, `90s`, `1h30m`, `2d` -> nanoseconds."""
    compact = text.replace(" ", "").lower()
    found = _GAP.findall(compact)
    if not found or "".join(n + u for n, u in found) != compact or _GAP.sub("", compact):
        raise click.BadParameter(f"{text!r} is not a duration: write e.g. 30m, 90s, 2h or 1h30m")
    return int(sum(float(n) * _UNIT_NS[u] for n, u in found))


# -- messages: OTel parts, OpenAI chat messages ---------------------------------------------------

def _json_text(value: Any) -> Any:
    """An attribute that holds JSON (or, in old instrumentations, a Python literal) as text, parsed."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise Unconvertible(f"not JSON ({exc.msg} at column {exc.colno}): {value[:120]!r}") from None


def chat_messages(raw: Any, what: str, notes: list[str]) -> list[dict[str, object]]:
    """A list of messages — OTel's parts-based ones or OpenAI chat messages — as OpenAI chat messages
    (tool calls `{id, type: function, function: {name, arguments}}`, one `tool` message per result)."""
    from evalspec.config.recorded import BadToolCalls, tool_calls_of

    raw = _json_text(raw)
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        raise Unconvertible(f"{what} is {type(raw).__name__}, not a list of messages")
    out: list[dict[str, object]] = []
    for k, message in enumerate(raw, 1):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            role = message.get("role") if isinstance(message, dict) else message
            raise Unconvertible(f"{what} message {k}: role {role!r} is not one of {', '.join(ROLES)}")
        converted = _from_parts(message, f"{what} message {k}", notes) if "parts" in message else [_openai(message)]
        for m in converted:
            try:
                if m.get("tool_calls"):
                    tool_calls_of(m["tool_calls"], k)  # the recorded reader's own rule, checked now
            except BadToolCalls as exc:
                raise Unconvertible(f"{what} message {k}: {exc}") from None
        out.extend(converted)
    return out


def _openai(message: dict[str, object]) -> dict[str, object]:
    kept = {k: message[k] for k in ("role", "content", "tool_calls", "tool_call_id", "finish_reason")
            if message.get(k) is not None}
    kept.setdefault("content", None)
    return kept


def _from_parts(message: dict[str, object], what: str, notes: list[str]) -> list[dict[str, object]]:
    role, parts = message["role"], message.get("parts")
    if not isinstance(parts, list):
        raise Unconvertible(f"{what}: parts is {type(parts).__name__}, not a list")
    texts: list[str] = []
    calls: list[dict[str, object]] = []
    results: list[dict[str, object]] = []
    for p, part in enumerate(parts, 1):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "tool_call" and isinstance(part.get("name"), str):
            args = part.get("arguments")
            calls.append({"id": str(part.get("id") or f"call_{len(calls) + 1}"), "type": "function",
                          "function": {"name": part["name"], "arguments": args if isinstance(args, str) else
                                       json.dumps(args if args is not None else {}, ensure_ascii=False)}})
        elif kind == "tool_call_response":
            response = part.get("response", part.get("result"))
            results.append({"role": "tool", "tool_call_id": str(part.get("id") or "").strip(),
                            "content": response if isinstance(response, str) else
                            json.dumps(response, ensure_ascii=False)})
        else:
            notes.append(f"{what} part {p} ({kind or type(part).__name__}) left out: not text, a tool call or "
                         "a tool result")
    if results:
        return results if not texts else [*results, {"role": role, "content": "\n".join(texts)}]
    out: dict[str, object] = {"role": role, "content": "\n".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    if isinstance(message.get("finish_reason"), str):
        out["finish_reason"] = message["finish_reason"]
    return [out]


def _reply(messages: list[dict[str, object]], name: str, notes: list[str]) -> list[dict[str, object]]:
    """An exchange's reply: its first output message (other choices named); none is no reply, kept as a
    null assistant message so that grading calls it an error rather than an empty reply."""
    if not messages:
        notes.append(f"{name}: no reply recorded (graded as no reply)")
        return [{"role": "assistant", "content": None}]
    if len([m for m in messages if m["role"] == "assistant"]) > 1:
        notes.append(f"{name}: {len(messages)} output messages (choices); the first is kept")
        return messages[:1]
    return messages


# -- OpenTelemetry (OTLP JSON) --------------------------------------------------------------------

def _any_value(value: Any) -> Any:
    """An OTLP JSON AnyValue as Python data."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values"))
    return None


def _attributes(raw: Any) -> dict[str, object]:
    return {a["key"]: _any_value(a.get("value")) for a in raw or [] if isinstance(a, dict) and "key" in a}


def _otlp_requests(path: Path, text: str) -> list[Any]:
    """The export's requests: one JSON object, or one per line (the collector's file exporter)."""
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as whole:
        requests = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    requests.append(json.loads(line))
                except json.JSONDecodeError:
                    bad = number if requests else whole.lineno
                    raise ConfigError([Problem(str(path), bad, "", f"not JSON ({whole.msg}): an OTLP JSON export "
                                               "is {\"resourceSpans\": [...]} (or one such object a line)")]) from None
        return requests


def otel_exchanges(path: Path, text: str, notes: list[str], counts: dict[str, int]) -> Iterator[Exchange]:
    spans: list[tuple[str, dict[str, object], dict[str, object], dict[str, object]]] = []
    for r, request in enumerate(_otlp_requests(path, text)):
        if not isinstance(request, dict) or not isinstance(request.get("resourceSpans"), list):
            raise ConfigError([Problem(str(path), None, "", "not an OTLP JSON trace export: expected an object "
                                       "with 'resourceSpans': [{resource, scopeSpans: [{spans: [...]}]}]")])
        for i, rs in enumerate(request["resourceSpans"]):
            resource = _attributes(((rs or {}).get("resource") or {}).get("attributes"))
            scopes = (rs or {}).get("scopeSpans") or (rs or {}).get("instrumentationLibrarySpans") or []
            for j, scope in enumerate(scopes):
                for k, span in enumerate((scope or {}).get("spans") or []):
                    where = f"{f'line {r + 1} ' if r else ''}resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                    if isinstance(span, dict):
                        spans.append((where, span, _attributes(span.get("attributes")), resource))
    # a span without a conversation id takes its trace's, when the trace names exactly one
    by_trace: dict[str, set[str]] = {}
    for _, span, attrs, _ in spans:
        if attrs.get("gen_ai.conversation.id"):
            by_trace.setdefault(str(span.get("traceId")), set()).add(str(attrs["gen_ai.conversation.id"]))
    for where, span, attrs, resource in spans:
        counts["spans"] += 1
        name = f"span {span.get('spanId') or '?'} ({where})"
        try:
            sent, got = _span_messages(span, attrs, name, notes)
        except Unconvertible as exc:
            notes.append(str(exc) if str(exc).startswith(name) else f"{name}: {exc}")
            counts["not_converted"] += 1
            continue
        if sent is None and got is None:
            counts["without_messages"] += 1
            continue
        ids = by_trace.get(str(span.get("traceId")), set())
        conversation = attrs.get("gen_ai.conversation.id") or (next(iter(ids)) if len(ids) == 1 else None)
        start = str(span.get("startTimeUnixNano") or "")
        metadata = {"service": resource["service.name"]} if resource.get("service.name") else {}
        yield Exchange(name, str(span.get("traceId") or span.get("spanId")),
                       int(start) if start.isdigit() else None,
                       str(conversation) if conversation else None,
                       [*(sent or []), *_reply(got or [], name, notes)], metadata)


def _span_messages(span: dict[str, object], attrs: dict[str, object], name: str,
                   notes: list[str]) -> tuple[list[dict[str, object]] | None, list[dict[str, object]] | None]:
    """What a span sent and got: `gen_ai.input/output.messages`, else the older `gen_ai.prompt` /
    `gen_ai.completion` (span events, span attributes, or one attribute per field)."""
    events = {e.get("name"): _attributes(e.get("attributes")) for e in mappings(span.get("events"))}
    sent_raw = attrs.get("gen_ai.input.messages", attrs.get("gen_ai.prompt",
                         events.get("gen_ai.content.prompt", {}).get("gen_ai.prompt")))
    got_raw = attrs.get("gen_ai.output.messages", attrs.get("gen_ai.completion",
                        events.get("gen_ai.content.completion", {}).get("gen_ai.completion")))
    flat = _flat_messages(attrs)
    sent = chat_messages(sent_raw, f"{name}: input", notes) if sent_raw is not None else flat.get("prompt")
    got = chat_messages(got_raw, f"{name}: output", notes) if got_raw is not None else flat.get("completion")
    return sent, got


def _flat_messages(attrs: dict[str, object]) -> dict[str, list[dict[str, object]]]:
    """OpenLLMetry's `gen_ai.prompt.0.role`, `gen_ai.completion.0.tool_calls.0.name`, ... as messages."""
    found: dict[str, dict[int, dict[str, Any]]] = {}  # a slot holds its fields and its calls' fields
    for key, value in attrs.items():
        if m := _FLAT.match(key):
            slot = found.setdefault(m[1], {}).setdefault(int(m[2]), {})
            field_name, _, rest = m[3].partition(".")
            if field_name == "tool_calls" and (c := re.match(r"(\d+)\.(\w+)$", rest)):
                call = slot.setdefault("calls", {}).setdefault(int(c[1]), {})
                call[c[2]] = value
            else:
                slot[m[3]] = value
    out: dict[str, list[dict[str, object]]] = {}
    for kind, slots in found.items():
        messages = []
        for _, slot in sorted(slots.items()):
            message = {"role": slot.get("role", "assistant" if kind == "completion" else "user"),
                       "content": slot.get("content")}
            calls = [c for _, c in sorted(slot.get("calls", {}).items())]
            if calls:
                message["tool_calls"] = [{"id": str(c.get("id") or f"call_{n}"), "type": "function", "function":
                                          {"name": c.get("name"), "arguments": c.get("arguments") or "{}"}}
                                         for n, c in enumerate(calls, 1)]
            message.update({k: slot[k] for k in ("tool_call_id", "finish_reason") if slot.get(k)})
            messages.append(message)
        out[kind] = chat_messages(messages, kind, [])
    return out


# -- Langfuse -------------------------------------------------------------------------------------

def langfuse_exchanges(path: Path, text: str, notes: list[str], counts: dict[str, int]) -> Iterator[Exchange]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError([Problem(str(path), exc.lineno, "", f"not JSON ({exc.msg}): a Langfuse export is a "
                                   "JSON array of traces, or the API's {\"data\": [...]}")]) from None
    traces = data.get("data") if isinstance(data, dict) and "data" in data else data
    if isinstance(traces, dict) and "id" in traces and ("input" in traces or "output" in traces):
        traces = [traces]  # one trace, as the trace page downloads it
    if not isinstance(traces, list) or not all(isinstance(t, dict) for t in traces):
        shape = f"an object with keys {', '.join(list(data)[:6])}" if isinstance(data, dict) else type(data).__name__
        raise ConfigError([Problem(str(path), None, "", f"not a Langfuse trace export ({shape}): expected a JSON "
                                   "array of traces, or {\"data\": [traces]}, each with id, timestamp, input, "
                                   "output and sessionId")])
    for k, trace in enumerate(traces):
        counts["spans"] += 1
        name = f"trace {trace.get('id') or '?'} ({'data' if isinstance(data, dict) else ''}[{k}])"
        try:
            exchange = _trace_exchange(trace, name, notes)
        except Unconvertible as exc:
            notes.append(str(exc) if str(exc).startswith(name) else f"{name}: {exc}")
            counts["not_converted"] += 1
            continue
        if exchange is None:
            counts["without_messages"] += 1
            continue
        yield exchange


def _trace_exchange(trace: dict[str, object], name: str, notes: list[str]) -> Exchange | None:
    given, answer = trace.get("input"), trace.get("output")
    if given is None and answer is None:
        return None
    if isinstance(given, dict) and isinstance(given.get("messages"), list):
        given = given["messages"]
    sent: list[dict[str, object]]
    got: list[dict[str, object]]
    if isinstance(given, str):
        sent = [{"role": "user", "content": given}]
    elif isinstance(given, list):
        sent = chat_messages(given, f"{name}: input", notes)
    else:
        raise Unconvertible(f"input is {type(given).__name__}, not a list of chat messages")
    if isinstance(answer, str):
        got = [{"role": "assistant", "content": answer}]
    elif isinstance(answer, dict) and ("content" in answer or "tool_calls" in answer or "parts" in answer):
        got = chat_messages({"role": "assistant", **answer}, f"{name}: output", notes)
    elif isinstance(answer, list):
        got = chat_messages(answer, f"{name}: output", notes)
    elif answer is None:
        got = []
    else:
        raise Unconvertible(f"output is {type(answer).__name__} without 'content': not a chat message")
    start = _iso_ns(trace.get("timestamp"))
    if start is None and not trace.get("sessionId"):
        raise Unconvertible(f"no sessionId and no timestamp ({trace.get('timestamp')!r}) to place it by")
    metadata = {k: trace[v] for k, v in (("user", "userId"), ("trace_name", "name")) if trace.get(v)}
    return Exchange(name, str(trace.get("id") or name), start,
                    str(trace["sessionId"]) if trace.get("sessionId") else None,
                    [*sent, *_reply(got, name, notes)], metadata)


def _iso_ns(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 10**9)


# -- assembling and writing -----------------------------------------------------------------------

def assemble(exchanges: list[Exchange], gap_ns: int, source: str) -> list[Conversation]:
    """Exchanges in start order -> conversations: one per id; one without joins the last such
    conversation when it started less than the gap after that conversation's last exchange."""
    by_id: dict[str, Conversation] = {}
    anonymous: list[Conversation] = []
    order = sorted(enumerate(exchanges), key=lambda e: (e[1].start is None, e[1].start or 0, e[0]))
    for _, exchange in order:
        if exchange.conversation is not None:
            conversation = by_id.get(exchange.conversation)
            if conversation is None:
                conversation = by_id[exchange.conversation] = Conversation(
                    exchange.conversation, exchange.start, exchange.start,
                    metadata={"source": source, "conversation_id": exchange.conversation})
        else:
            last = anonymous[-1] if anonymous else None
            near = last is not None and last.last is not None and exchange.start is not None \
                and exchange.start - last.last < gap_ns
            if last is None or not near:
                last = Conversation(f"{source}-{exchange.key}", exchange.start, exchange.start,
                                    metadata={"source": source})
                anonymous.append(last)
            conversation = last
        conversation.metadata.update(exchange.metadata)
        conversation.add(exchange)
    found = sorted([*by_id.values(), *anonymous], key=lambda c: (c.start is None, c.start or 0))
    seen: dict[str, int] = {}
    for conversation in found:  # ids are unique in a log (docs/en/recorded-conversations.md)
        seen[conversation.id] = seen.get(conversation.id, 0) + 1
        if seen[conversation.id] > 1:
            conversation.id = f"{conversation.id}-{seen[conversation.id]}"
        if conversation.start is not None:
            conversation.metadata["started"] = datetime.fromtimestamp(
                conversation.start / 10**9, tz=timezone.utc).isoformat().replace("+00:00", "Z")
    return found


def import_traces(path: Path, kind: str, gap_ns: int) -> tuple[list[Conversation], list[str], dict[str, int]]:
    """The conversations of one export, what was not converted, and the counts for the summary."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError([Problem(str(path), None, "", f"not UTF-8 text ({exc.reason})")]) from None
    notes: list[str] = []
    counts = {"spans": 0, "without_messages": 0, "not_converted": 0}
    read = otel_exchanges if kind == "otel" else langfuse_exchanges
    exchanges = list(read(path, text, notes, counts))
    return assemble(exchanges, gap_ns, kind), notes, counts


@click.command(name="traces")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "kind", type=click.Choice(["otel", "langfuse"]), required=True,
              help="otel: an OTLP JSON export with GenAI spans; langfuse: a Langfuse trace export")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="the JSONL to write (default: stdout)")
@click.option("--session-gap", "gap", default="30m", show_default=True,
              help="spans or traces without a conversation id join one when closer than this (e.g. 30m, 2h)")
@click.option("--allow-empty", is_flag=True, help="write the file even when no conversation was found")
def traces(file: str, kind: str, out: str | None, gap: str, allow_empty: bool) -> None:
    """Production traces (OpenTelemetry GenAI spans, Langfuse traces) -> recorded conversations (JSONL)
    that `transcripts:` grades."""
    gap_ns = parse_gap(gap)
    try:
        conversations, notes, counts = import_traces(Path(file), kind, gap_ns)
    except ConfigError as exc:
        for problem in exc.problems:
            click.echo(f"error {problem}", err=True)
        sys.exit(ExitCode.CONFIG_ERROR)
    for note in notes:
        click.echo(f"not converted: {note}", err=True)
    unit = "spans" if kind == "otel" else "traces"
    click.echo(f"read {counts['spans']} {unit}: {len(conversations)} conversation(s); {counts['not_converted']} "
               f"not converted; {counts['without_messages']} without chat messages"
               f"{' (not GenAI calls)' if kind == 'otel' else ' (no input or output)'}", err=True)
    if not conversations and not allow_empty:
        click.echo(f"error {file}: no conversation found: no {unit} with chat messages "
                   f"({'gen_ai.input.messages / gen_ai.output.messages' if kind == 'otel' else 'input / output'}); "
                   "nothing was written (--allow-empty writes an empty file)", err=True)
        sys.exit(ExitCode.CONFIG_ERROR)
    lines = "".join(json.dumps({"id": c.id, "messages": c.messages, "metadata": c.metadata}, ensure_ascii=False)
                    + "\n" for c in conversations)
    if out is None:
        click.echo(lines, nl=False)
        return
    Path(out).write_text(lines, encoding="utf-8")
    click.echo(f"wrote {out}", err=True)
