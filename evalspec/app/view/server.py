"""The aiohttp app of `evalspec view` and its guard (docs/en/review.md), as Jupyter guards a notebook server:

- a per-session token: `/?token=…` sets a cookie (HttpOnly, SameSite=Strict) and redirects to the page
  without it; every request without the token (cookie, `?token=` or the `X-Evalspec-Token` header) is 403;
- a write (POST) needs the header itself: a cookie alone is not enough, so no other page can post;
- a `Host` that is neither the bound address nor localhost is refused (DNS rebinding): 403.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from evalspec.app.view import actions, pages
from evalspec.app.view.runs import RunStore, UnknownRun, UnreadableRun, listed
from evalspec.reporters.catalogue import speaking

HEADER = "X-Evalspec-Token"
SAFE = ("GET", "HEAD")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Action = Callable[[actions.Reviewer, actions.Body], Mapping[str, object]]


def _hostname(host: str) -> str:
    """`Host` without its port: `127.0.0.1:8765` → 127.0.0.1, `[::1]:8765` → ::1."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def host_allowed(header: str | None, bound: str) -> bool:
    """The bound address, localhost, or (when bound to every interface) an address literal: a name that
    is none of these is what a rebinding attack sends."""
    name, bound = _hostname(header or ""), _hostname(bound)
    if name in (bound, "localhost"):
        return True
    ip, bound_ip = _ip(name), _ip(bound)
    if ip is None or bound_ip is None:
        return False
    return ip.is_loopback and bound_ip.is_loopback or bound_ip.is_unspecified


def _forbidden(request: web.Request, message: str) -> web.Response:
    if request.path.startswith("/api/"):
        return web.json_response({"error": message}, status=403)
    return web.Response(text=message + "\n", status=403)


def guard(token: str, bound: str, cookie: str) -> Any:
    def matches(value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), token.encode())

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not host_allowed(request.headers.get("Host"), bound):
            return _forbidden(request, f"Host {request.headers.get('Host')!r} refused: open the address evalspec view printed")
        header, query = request.headers.get(HEADER), request.query.get("token")
        if not (matches(header) or matches(query) or matches(request.cookies.get(cookie))):
            return _forbidden(request, "403: no valid token; open the URL evalspec view printed (with ?token=…)")
        if request.method not in SAFE and not matches(header):
            return _forbidden(request, f"403: a write needs the {HEADER} header")
        if matches(query) and request.method in SAFE and not request.path.startswith("/api/"):
            rest = {k: v for k, v in request.query.items() if k != "token"}
            response: web.StreamResponse = web.HTTPFound(request.rel_url.with_query(rest))
        else:
            response = await handler(request)
        if matches(query):
            response.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
        response.headers.setdefault("Cache-Control", "no-store")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    return check


def make_app(root: Path, extra: list[Path], who: str, token: str, bound: str,
             lang: str | None = None) -> web.Application:
    store = RunStore(root, extra)
    reviewer = actions.Reviewer(root, who, store)
    cookie = "evalspec_token_" + hashlib.sha256(token.encode()).hexdigest()[:8]  # two servers, two cookies
    app = web.Application(middlewares=[guard(token, bound, cookie)], client_max_size=1 << 20)

    async def index(request: web.Request) -> web.Response:
        return web.Response(text=pages.run_list(store, lang), content_type="text/html")

    async def run_page(request: web.Request) -> web.Response:
        run_id = request.match_info["id"]
        try:
            data, path = store.load(run_id)
        except UnknownRun as exc:
            return web.Response(text=pages.error_page(str(exc), pages.home_lang(store, lang)),
                                content_type="text/html", status=404)
        except UnreadableRun as exc:  # the others are still served (docs/en/review.md)
            return web.Response(text=pages.error_page(str(exc), pages.home_lang(store, lang)),
                                content_type="text/html", status=422)
        ids = [r["id"] for r in store.summaries()]
        previous = ids[ids.index(run_id) + 1] if run_id in ids and ids.index(run_id) + 1 < len(ids) else None
        return web.Response(text=pages.run_page(run_id, data, token, who, previous, lang, root, path), content_type="text/html")

    async def diff_page(request: web.Request) -> web.Response:
        from evalspec.reporters.diffwords import spoken
        from evalspec.results.compare import compare_runs

        base_id, head_id = request.query.get("base", ""), request.query.get("head", "")
        try:
            (base, base_path), (head, head_path) = store.load(base_id), store.load(head_id)
        except UnknownRun as exc:
            return web.Response(text=pages.error_page(str(exc), pages.home_lang(store, lang)),
                                content_type="text/html", status=404)
        except UnreadableRun as exc:  # the others are still served (docs/en/review.md)
            return web.Response(text=pages.error_page(str(exc), pages.home_lang(store, lang)),
                                content_type="text/html", status=422)
        diff = compare_runs(base, head, str(base_path), str(head_path))
        with speaking(pages.home_lang(store, lang)):
            diff = spoken(diff, head)
        return web.Response(text=pages.diff_page(base_id, head_id, diff, pages.home_lang(store, lang)), content_type="text/html")

    async def api_runs(request: web.Request) -> web.Response:
        return web.json_response([listed(row) for row in store.summaries()], dumps=_dumps)

    def post(action: Action) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            try:
                body = json.loads(await request.text())
            except ValueError as exc:
                return web.json_response({"error": f"the body is not JSON: {exc}"}, status=400)
            if not isinstance(body, dict):
                return web.json_response({"error": "the body must be a JSON object"}, status=400)
            try:
                with speaking(pages.home_lang(store, lang)):  # the failed checks it names, in the pages' words
                    return web.json_response(action(reviewer, body), dumps=_dumps)
            except actions.NeedsConfirmation as exc:  # approving a draft that failed: 409 names its checks
                return web.json_response({"error": str(exc), "failed": exc.failed}, status=409, dumps=_dumps)
            except actions.ActionError as exc:
                return web.json_response({"error": str(exc)}, status=400, dumps=_dumps)

        return handle

    app.router.add_get("/", index)
    app.router.add_get("/run/{id}", run_page)
    app.router.add_get("/diff", diff_page)
    app.router.add_get("/api/runs", api_runs)
    app.router.add_post("/api/triage", post(actions.record_triage))
    app.router.add_post("/api/label", post(actions.record_label))
    app.router.add_post("/api/approve", post(actions.approve))
    app.router.add_post("/api/make-test", post(actions.make_test))
    return app


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def address(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


async def serve(root: Path, extra: list[Path], host: str, port: int, who: str,
                announce: Callable[[str], None], lang: str | None = None) -> None:
    """Bind, announce `http://HOST:PORT/?token=…` (the port the system chose when `port` is 0), serve until
    cancelled."""
    token = secrets.token_urlsafe(24)
    runner = web.AppRunner(make_app(root, extra, who, token, host, lang), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    bound_port = int(runner.addresses[0][1])
    announce(f"{address(host, bound_port)}?token={token}")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
