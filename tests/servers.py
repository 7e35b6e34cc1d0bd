"""Loopback servers the tests start: an OpenAI-compatible chat server and a stateful HTTP chatbot."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Script = Callable[[dict[str, Any], int], Reply]


def chat_body(content: str, model: str = "test-model", prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def tool_call_body(calls: list[tuple[str, Any]], content: str | None = None, prefix: str = "call") -> dict[str, Any]:
    """A chat completion that asks for tool calls: [(name, arguments)], arguments as an object or raw text."""
    body = chat_body(content or "")
    body["choices"][0]["message"] = {"role": "assistant", "content": content, "tool_calls": [
        {"id": f"{prefix}_{i}", "type": "function",
         "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)}}
        for i, (name, args) in enumerate(calls, 1)]}
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


class AgentScript:
    """A scripted agent: `plan[user message]` is a list of rounds, each a list of (tool, arguments).

    Round k of a turn is answered when k assistant messages follow the turn's user message; after the
    last round the answer is `done: ` + the tool results of the turn, joined by ` | `. Deterministic in
    the request, so a cached rerun and both clients see the same conversation.
    """

    def __init__(self, plan: dict[str, list[list[tuple[str, Any]]]]) -> None:
        self.plan = plan

    def __call__(self, request: dict[str, Any], n: int) -> Reply:
        messages = request["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        after = messages[last_user + 1:]
        rounds = self.plan.get(messages[last_user]["content"], [])
        done = sum(1 for m in after if m["role"] == "assistant")
        if done < len(rounds):
            return Reply(body=tool_call_body(rounds[done], prefix=f"call_{last_user}_{done}"))
        results = [str(m["content"]) for m in after if m["role"] == "tool"]
        return Reply(body=chat_body("done: " + " | ".join(results) if results else f"echo: {messages[last_user]['content']}"))


def echo(request: dict[str, Any], n: int) -> Reply:
    """Answers `echo: <last user message>`; embeddings are made from character counts."""
    if "input" in request:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(texts)]
        return Reply(body={"object": "list", "data": data, "model": request.get("model"),
                           "usage": {"prompt_tokens": 1, "total_tokens": 1}})
    last = next((m["content"] for m in reversed(request["messages"]) if m["role"] == "user"), "")
    return Reply(body=chat_body(f"echo: {last}", model=request.get("model", "test-model")))


def _vector(text: str) -> list[float]:
    """A bag of characters in 64 buckets: texts sharing characters are similar."""
    vector = [0.0] * 64
    for ch in text:
        if not ch.isspace():
            vector[ord(ch) % 64] += 1.0
    return vector


class LoopbackServer:
    """A ThreadingHTTPServer on 127.0.0.1 with a free port, recording every JSON request it gets."""

    def __init__(self, handle: Callable[[str, str, dict[str, Any], dict[str, str]], Reply]) -> None:
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._handle = handle
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"_raw": raw.decode(errors="replace")}
                with server._lock:
                    server.requests.append(body)
                    server.paths.append(self.path)
                reply = server._handle(self.command, self.path, body, {k.lower(): v for k, v in self.headers.items()})
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body if isinstance(reply.body, (bytes, str)) else json.dumps(reply.body)
                data = payload.encode() if isinstance(payload, str) else payload
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_POST = do_GET = do_PUT = do_PATCH = do_DELETE = _serve  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        # a short poll: `shutdown()` waits for the loop's next look at its flag (0.5 s by default)
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                        daemon=True)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reset(self) -> None:
        """Forget what was recorded, as a new server would (a server shared by several tests)."""
        with self._lock:
            self.requests.clear()
            self.paths.clear()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class OpenAIServer(LoopbackServer):
    """`/v1/chat/completions` and `/v1/embeddings`, answered by `script(request, n)` (n counts chat calls)."""

    def __init__(self, script: Script = echo) -> None:
        self.calls = 0
        self.auth: list[str | None] = []

        def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
            self.auth.append(headers.get("authorization"))
            if path.endswith("/chat/completions") or path.endswith("/embeddings"):
                n = self.calls
                self.calls += 1
                return script(body, n)
            return Reply(404, {"error": {"message": f"no route {path}"}})

        super().__init__(handle)

    def reset(self) -> None:
        super().reset()
        self.calls = 0
        self.auth.clear()

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def chats(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "messages" in r]


class ChatbotServer(LoopbackServer):
    """A stateful chatbot: POST /chat {session, text} keeps each session's history on the server."""

    def __init__(self) -> None:
        self.sessions: dict[str, list[str]] = {}

        def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
            if path == "/chat":
                history = self.sessions.setdefault(str(body.get("session")), [])
                history.append(str(body.get("text")))
                name = next((h.split("我叫", 1)[1][:2] for h in history if "我叫" in h), None)
                return Reply(body={"data": {"reply": f"[{len(history)}] 收到：{body.get('text')}"
                                            + (f"（{name}）" if name else "")}})
            if path == "/stateless":
                msgs = body.get("messages") or []
                users = [m["content"] for m in msgs if m["role"] == "user"]
                return Reply(body={"answer": f"{len(users)} user messages, last: {users[-1] if users else ''}"})
            return Reply(404, {"error": "no route"})

        super().__init__(handle)

    def reset(self) -> None:
        super().reset()
        self.sessions.clear()


class RateLimited:
    """A script behind a token bucket of `rate` requests a second (`burst` deep, default `rate`): a request
    that finds it empty is answered 429 at once (with `Retry-After: <retry_after>` when given), as real APIs
    do; the others get `script`'s reply after `delay` seconds. `limited` counts the 429s, `times` the
    monotonic arrival time of every request and whether it was answered 429."""

    def __init__(self, script: Script = echo, rate: float = 20, *, burst: float | None = None,
                 retry_after: str | None = None, delay: float = 0.0) -> None:
        self.script, self.rate, self.burst = script, rate, burst if burst is not None else rate
        self.retry_after, self.delay = retry_after, delay
        self.tokens, self.at = self.burst, time.monotonic()
        self.limited = 0
        self.times: list[tuple[float, bool]] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], n: int) -> Reply:
        with self._lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
            self.at = now
            refused = self.tokens < 1
            if refused:
                self.limited += 1
            else:
                self.tokens -= 1
            self.times.append((now, refused))
        if refused:
            headers = {"retry-after": self.retry_after} if self.retry_after is not None else {}
            return Reply(429, {"error": {"message": "rate limit exceeded", "type": "requests"}}, headers)
        reply = self.script(request, n)
        reply.delay = max(reply.delay, self.delay)
        return reply


def llama_cpp_like(script: Script) -> Script:
    """`script` behind llama-cpp-python's server's format rules: `response_format` of type `json_schema`
    is refused with HTTP 500 (its pydantic error over several lines, as llama-cpp-python 0.3 sends it); `text` and `json_object`
    (with or without a `schema`) pass."""
    def serve(request: dict[str, Any], n: int) -> Reply:
        kind = (request.get("response_format") or {}).get("type", "text")
        if kind not in ("text", "json_object"):
            return Reply(500, {"error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                                                    "'response_format', 'type'), 'msg': \"Input should be 'text' or "
                                                    f"'json_object'\", 'input': '{kind}'}}\n\n  File \"app.py\", line "
                                                    "376, in create_chat_completion\n    POST /v1/chat/completions",
                                         "type": "internal_server_error", "param": None, "code": None}})
        return script(request, n)
    return serve


def form_of(request: dict[str, Any]) -> str:
    """Which structured-output form a request asked for: json_schema, json_object+schema, json_object,
    ollama_format or none."""
    fmt = request.get("response_format")
    if isinstance(fmt, dict):
        return "json_object+schema" if fmt.get("type") == "json_object" and "schema" in fmt else str(fmt.get("type"))
    return "ollama_format" if "format" in request else "none"


class RasaBot:
    """The assistant behind `RasaServer`, as a tiny booking flow over Rasa trackers: `试驾` starts
    `book_test_drive` (sets `car_model`, asks the day with buttons), a day (its button's payload
    `/choose_day{"day": "..."}` or the title) books it (`booking_id`) and completes the flow; anything else
    is a greeting. Usable without a server (a test's HTTP or python bot that answers as Rasa would)."""

    SLOTS = ("car_model", "day", "booking_id", "city")

    def __init__(self) -> None:
        self.trackers: dict[str, dict[str, Any]] = {}
        self.bookings = 0

    def reset(self) -> None:
        self.trackers.clear()
        self.bookings = 0

    def tracker(self, sender: str) -> dict[str, Any]:
        return self.trackers.setdefault(sender, {
            "sender_id": sender, "slots": {name: None for name in self.SLOTS},
            "latest_message": {"intent": {}, "entities": [], "text": None}, "events": [],
            "latest_action_name": "action_listen", "active_loop": {}, "paused": False})

    def event(self, tracker: dict[str, Any], event: dict[str, Any]) -> None:
        tracker["events"].append({**event, "timestamp": time.time()})
        if event.get("event") == "slot":
            tracker["slots"][event["name"]] = event.get("value")

    def turn(self, sender: str, text: str, metadata: Any) -> list[dict[str, Any]]:
        tracker = self.tracker(sender)
        add = lambda **event: self.event(tracker, event)  # noqa: E731
        replies: list[dict[str, Any]] = []

        def utter(name: str, reply: str, **extra: Any) -> None:
            add(event="action", name=name)
            add(event="bot", text=reply, data={k: v for k, v in extra.items()}, metadata={"utter_action": name})
            replies.append({"recipient_id": sender, "text": reply, **extra})

        day = None
        if text.startswith("/choose_day"):
            day = json.loads(text[len("/choose_day"):])["day"]
        elif text in ("周六", "周日"):
            day = text
        if "试驾" in text:
            intent, entities = "book_test_drive", [{"entity": "car_model", "value": "瑶光", "start": 3, "end": 5}]
        elif day is not None:
            intent, entities = "choose_day", [{"entity": "day", "value": day}]
        else:
            intent, entities = "greet", []
        message = {"intent": {"name": intent, "confidence": 0.97}, "entities": entities, "text": text}
        tracker["latest_message"] = message
        add(event="user", text=text, parse_data=message, metadata=metadata or {}, input_channel="rest")
        if intent == "book_test_drive":
            add(event="flow_started", flow_id="book_test_drive")
            add(event="stack", update=json.dumps([{"op": "add", "path": "/0", "value": {
                "frame_id": "F1", "flow_id": "book_test_drive", "step_id": "ask_day", "type": "flow"}}]))
            add(event="slot", name="car_model", value="瑶光")
            utter("utter_ask_day", "您想哪天来试驾？",
                  buttons=[{"title": "周六", "payload": '/choose_day{"day": "周六"}'},
                           {"title": "周日", "payload": '/choose_day{"day": "周日"}'}])
        elif intent == "choose_day":
            self.bookings += 1
            booking = f"B-{self.bookings:04d}"
            add(event="slot", name="day", value=day)
            add(event="action", name="action_book_test_drive")
            add(event="slot", name="booking_id", value=booking)
            city = tracker["slots"].get("city")
            utter("utter_booked", f"已为您预约{day}试驾，预约号 {booking}" + (f"，{city}店见" if city else ""),
                  image="https://example.invalid/map.png")
            add(event="flow_completed", flow_id="book_test_drive", step_id="END")
            add(event="stack", update=json.dumps([{"op": "remove", "path": "/0"}]))
        else:
            utter("utter_greet", "您好！有什么可以帮您？", custom={"handoff": False})
        add(event="action", name="action_listen")
        return replies


class RasaServer(LoopbackServer):
    """A Rasa assistant (`RasaBot`) as its REST channel and tracker API answer (the JSON shapes of Rasa's
    docs). `POST /conversations/{id}/tracker/events` appends events (seeding); with `token` set, every
    request needs `?token=` (else 401)."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.bot = RasaBot()

        def handle(method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
            from urllib.parse import parse_qs, unquote, urlsplit

            url = urlsplit(path)
            if self.token is not None and parse_qs(url.query).get("token") != [self.token]:
                return Reply(401, {"version": "3.10", "status": "failure", "reason": "NotAuthenticated"})
            parts = [unquote(p) for p in url.path.split("/") if p]
            if method == "POST" and parts == ["webhooks", "rest", "webhook"]:
                return Reply(body=self.bot.turn(str(body["sender"]), str(body["message"]), body.get("metadata")))
            if len(parts) >= 3 and parts[0] == "conversations" and parts[2] == "tracker":
                tracker = self.bot.tracker(parts[1])
                if method == "GET" and len(parts) == 3:
                    return Reply(body=tracker)
                if method == "POST" and parts[3:] == ["events"]:
                    for event in body if isinstance(body, list) else [body]:
                        self.bot.event(tracker, event)
                    return Reply(body=tracker)
            return Reply(404, {"status": "failure", "reason": f"no route {method} {url.path}"})

        super().__init__(handle)

    @property
    def trackers(self) -> dict[str, dict[str, Any]]:
        return self.bot.trackers

    def reset(self) -> None:
        super().reset()
        self.bot.reset()
