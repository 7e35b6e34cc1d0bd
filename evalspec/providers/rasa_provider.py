"""`rasa: {url, token}` — a Rasa assistant through its REST channel and tracker API (docs/en/state.md).

Each turn is `POST {url}/webhooks/rest/webhook` `{sender: thread_id, message, metadata}`; the answer is a
list of messages (the reply: their texts joined by a newline; the parts: each with its buttons, image and
custom payload). The bot's state is then read from `GET {url}/conversations/{thread_id}/tracker`. A test's
`state: {slots: ...}` is sent before turn 1 as `slot` events (`POST .../tracker/events`). The assistant
keeps the conversation itself (stateful: only the new message is sent); `token` goes as `?token=`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from evalspec.config.interpolate import is_template
from evalspec.core.errors import ProviderError
from evalspec.extend.kinds import SuiteView, provider_kind
from evalspec.extend.provider import CallContext, ProviderResponse, as_parts, url_problem
from evalspec.extend.replies import reply
from evalspec.extend.transcript import ChatMessage
from evalspec.providers.openai_compat import load_transport, make_client, status_error, transport_error

if TYPE_CHECKING:
    import httpx

    from evalspec.config.model import ProviderSpec

STATE_KEYS = ("slots", "slots_set", "intent", "entities", "actions", "utterances", "flows_started",
              "flows_completed", "flows_cancelled", "active_flow", "active_loop")


class RasaProvider:
    def __init__(self, pid: str, config: Mapping[str, object]) -> None:
        self.id = pid
        written = config["rasa"]
        rasa: Mapping[str, object] = written if isinstance(written, Mapping) else {}
        self.url = str(rasa["url"]).rstrip("/")
        self.token = rasa.get("token")
        self._client: httpx.AsyncClient | None = None

    def cache_identity(self) -> dict[str, object]:
        return {"rasa": {"url": self.url}}  # the token decides nothing of the answer

    def cache_request(self, messages: list[ChatMessage], context: CallContext) -> dict[str, object]:
        """The message as sent, without the thread id (the cache key's request part)."""
        return {"message": messages[-1]["content"], "metadata": context.metadata or {}}

    def _params(self) -> dict[str, str]:
        return {"token": str(self.token)} if self.token else {}

    async def _send(self, method: str, path: str, body: Any = None) -> Any:
        import httpx

        if self._client is None:
            self._client = make_client()
        url = self.url + path
        try:
            response = await self._client.request(method, url, params=self._params(),
                                                  **({"json": body} if body is not None else {}))
        except httpx.HTTPError as exc:
            raise transport_error(exc, url) from exc
        if response.status_code >= 400:
            raise status_error(response, url)
        try:
            return response.json()
        except ValueError:
            raise ProviderError(f"{url}: the answer is not JSON: {response.text[:200]!r}") from None

    def _tracker(self, thread_id: str) -> str:
        return f"/conversations/{quote(thread_id, safe='')}/tracker"

    async def seed(self, context: CallContext) -> None:
        """The test's `state:` slots, as `slot` events before turn 1 (docs/en/state.md)."""
        slots = (context.state or {}).get("slots")
        if isinstance(slots, dict) and slots:
            events = [{"event": "slot", "name": str(name), "value": value} for name, value in slots.items()]
            await self._send("POST", self._tracker(context.thread_id) + "/events", events)

    async def respond(self, messages: list[ChatMessage], context: CallContext) -> ProviderResponse:
        start = time.perf_counter()
        body = {"sender": context.thread_id, "message": messages[-1]["content"], "metadata": context.metadata or {}}
        answer = await self._send("POST", "/webhooks/rest/webhook", body)
        latency = (time.perf_counter() - start) * 1000
        parts = as_parts(answer, "the REST channel's answer")
        tracker = await self._send("GET", self._tracker(context.thread_id))
        if not isinstance(tracker, dict):
            raise ProviderError(f"the tracker is {type(tracker).__name__}, expected an object")
        # the reply is the texts of the messages; none with text or buttons is no reply (an error of the turn)
        return reply(ProviderResponse(content="", latency_ms=latency, state=tracker_state(tracker), parts=parts,
                                      metadata={"status": 200}), None, self.id,
                     f"the REST channel answered {json.dumps(answer, ensure_ascii=False)[:200]}: no message "
                     "with text or buttons")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def tracker_state(tracker: Mapping[str, object]) -> dict[str, object]:
    """The state docs/en/state.md reads from a Rasa tracker: every key present, "this turn" the events after the
    last `user` event."""
    written = tracker.get("events")
    events = [e for e in written if isinstance(e, dict)] if isinstance(written, list) else []
    last_user = max((i for i, e in enumerate(events) if e.get("event") == "user"), default=-1)
    turn = events[last_user + 1:]
    latest = tracker.get("latest_message") or {}
    intent = latest.get("intent") if isinstance(latest, dict) else None
    entities = latest.get("entities") if isinstance(latest, dict) else None

    def flows(kind: str) -> list[Any]:
        return [e.get("flow_id") for e in turn if e.get("event") == kind]

    stack = tracker.get("stack")
    frames = stack if isinstance(stack, list) else replay_stack(events)
    active = next((f.get("flow_id") for f in reversed(frames) if isinstance(f, dict) and f.get("type") == "flow"),
                  None)
    slots = tracker.get("slots")
    active_loop = tracker.get("active_loop")
    # an older tracker: the last `active_loop` event says
    loop = active_loop if isinstance(active_loop, dict) else \
        next((e for e in reversed(events) if e.get("event") == "active_loop"), {})
    return {
        "slots": dict(slots) if isinstance(slots, dict) else {},
        "slots_set": {e.get("name"): e.get("value") for e in turn if e.get("event") == "slot"},
        "intent": intent.get("name") if isinstance(intent, dict) else None,
        "entities": [{"entity": e.get("entity"), "value": e.get("value")}
                     for e in entities or [] if isinstance(e, dict)],
        "actions": [e.get("name") for e in turn if e.get("event") == "action"],
        "utterances": [(e.get("metadata") or {}).get("utter_action") for e in turn if e.get("event") == "bot"],
        "flows_started": flows("flow_started"),
        "flows_completed": flows("flow_completed"),
        "flows_cancelled": flows("flow_cancelled"),
        "active_flow": active,
        "active_loop": loop.get("name") or None,  # the form / loop active after the turn
    }


def replay_stack(events: list[dict[str, object]]) -> list[Any]:
    """The dialogue stack after `events`: each `stack` event's `update` is a JSON patch (a list of
    operations, or that list as JSON text) over the frames; `add`, `replace` and `remove` are applied."""
    frames: list[Any] = []
    for event in events:
        if event.get("event") != "stack":
            continue
        update = event.get("update")
        if isinstance(update, str):
            try:
                update = json.loads(update)
            except ValueError:
                continue
        for op in update if isinstance(update, list) else []:
            if isinstance(op, dict):
                _apply(frames, op)
    return frames


def _apply(frames: list[Any], op: Mapping[str, object]) -> None:
    steps = [s for s in str(op.get("path", "")).split("/") if s]
    if not steps:
        if op.get("op") in ("add", "replace") and isinstance(value := op.get("value"), list):
            frames[:] = value
        return
    index = len(frames) if steps[0] == "-" else int(steps[0]) if steps[0].isdigit() else None
    if index is None:
        return
    kind = op.get("op")
    if len(steps) == 1:
        if kind == "add":
            frames.insert(index, op.get("value"))
        elif kind == "replace" and index < len(frames):
            frames[index] = op.get("value")
        elif kind == "remove" and index < len(frames):
            del frames[index]
    elif index < len(frames) and isinstance(frames[index], dict) and kind in ("add", "replace"):
        frames[index][steps[1]] = op.get("value")


# -- the `rasa` kind -----------------------------------------------------------------------------

RASA_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "minLength": 1, "description": "the Rasa server, e.g. http://127.0.0.1:5005"},
        "token": {"type": "string", "description": "the server's auth token, sent as ?token="},
    },
    "additionalProperties": False,
    "required": ["url"],
}


def rasa_url_problems(raw: Mapping[str, object]) -> list[tuple[tuple[str, ...], str]]:
    rasa = raw["rasa"]
    url = rasa.get("url") if isinstance(rasa, dict) else None
    wrong = url_problem(url) if isinstance(url, str) and not is_template(url) else None
    return [(("rasa", "url"), f"provider '{raw.get('id')}': {wrong}")] if wrong else []


def rasa_problems(spec: ProviderSpec, suite: SuiteView) -> list[str]:
    url = (spec.config.get("rasa") or {}).get("url")
    if not isinstance(url, str) or not url:
        return ["rasa needs a `url`"]
    wrong = url_problem(url)
    return [wrong] if wrong else []


def prepare_rasa(spec: ProviderSpec) -> None:
    """The transport, imported before the run's first call."""
    load_transport()


@provider_kind("rasa", schema=RASA_SCHEMA, check=rasa_url_problems, stateful=lambda config: True,
               preflight=rasa_problems, prepare=prepare_rasa,
               doc="a Rasa assistant: its REST channel for replies and buttons, its tracker for the state")
def build_rasa(spec: ProviderSpec, suite: SuiteView) -> RasaProvider:
    return RasaProvider(spec.id, spec.config)
