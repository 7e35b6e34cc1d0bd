"""A short Markdown summary for PR comments and `$GITHUB_STEP_SUMMARY`."""

from __future__ import annotations

from typing import Any

MARKER = "<!-- evalspec-report -->"
ICON = {"passed": "✅", "failed": "❌", "error": "⚠️", "xfailed": "🟪", "xpassed": "🟦", "skipped": "⏭️"}


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(run: dict[str, Any]) -> str:
    gate = run["gate"]
    headline = {0: "✅ gate passed", 1: "❌ gate failed", 3: "⚠️ too many errors"}[gate["exit_code"]]
    out = [MARKER, f"## evalspec: {headline}", ""]
    s = run["summary"]
    out.append(f"{s['records']} conversations · {s['calls']} calls ({s['cached_calls']} cached) · "
               f"{s['tokens']} tokens · ${s['cost']:.4f} · pass rate {gate['pass_rate']:.0%}")
    out += ["", "| suite | passed | failed | errors | pass rate | gate |", "|---|---:|---:|---:|---:|---|"]
    for g in gate["suites"]:
        ok = "ok" if g["ok"] and not g["errors_exceeded"] else "**failed**" if not g["ok"] else "**errors**"
        out.append(f"| {_cell(g['suite'])} | {g['passed']} | {g['failed']} | {g['errors']} | {g['pass_rate']:.0%} | {ok} |")
    if gate["reasons"]:
        out += ["", *[f"- {_cell(r)}" for r in gate["reasons"]]]
    if run.get("baseline"):
        from evalspec.diff.render import markdown_lines

        out[3:3] = ["", *markdown_lines(run["baseline"]), ""]  # newly failing first: right under the headline
    problems = [r for r in run["results"] if r["status"] in ("failed", "error") and not r.get("curve")]
    if problems:
        out += ["", "### Failures", "", "| test | provider | status | first problem |", "|---|---|---|---|"]
        for r in problems[:50]:
            first = r.get("error") or next((f"turn {a.get('turn') or ''} {a['type']}: {a['reason']}"
                                            for a in r["assertions"] if a["pass"] is False), "")
            out.append(f"| {_cell(r['test_id'])} | {_cell(r['provider'])} | {ICON[r['status']]} {r['status']} | "
                       f"{_cell(first)[:200]} |")
    for c in run.get("curves", []):
        pts = ", ".join(f"{p['value']}: {p['mean']:.2f}" if p["mean"] is not None else f"{p['value']}: –" for p in c["points"])
        out += ["", f"**Curve {_cell(c['test'])} @ {_cell(c['provider'])}** ({c['variable']}): {pts}; "
                    f"half-life {c['half_life']}, failure point {c['failure_point']}"]
    return "\n".join(out) + "\n"
