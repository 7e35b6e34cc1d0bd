"""Report sections of docs/en/judges.md#how-a-verdict-is-reached, from run.json alone: the judge's second opinion on rules (`judge_review`,
a flagged type first) and failures grouped by attribution. Each reporter calls one function here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape as rich_escape

from evalspec.reporters.catalogue import CATALOGUES, word, words
from evalspec.reporters.pairwise import html_section as pairwise_html
from evalspec.reporters.pairwise import markdown_lines as pairwise_markdown
from evalspec.reporters.pairwise import print_pairwise
from evalspec.reporters.vocabulary import one_line
from evalspec.results.attribution import ATTRIBUTABLE, by_attribution
from evalspec.results.rundata import RunData

if TYPE_CHECKING:
    from markupsafe import Markup


def attribution_word(cls: str) -> str:
    """An attribution class in the report's language (Chinese keeps the class name `triage` takes)."""
    return words(f"attr_{cls}") if f"attr_{cls}" in CATALOGUES["en"] else cls


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def review_rows(run: RunData) -> list[tuple[str, int, str, bool]]:
    """(type, sampled, agreement, flagged) per assertion type of the second opinion; flagged types first."""
    review = run.get("judge_review")
    by_type = (review.get("by_type") or {}) if review else {}
    rows = [(name, int(t["sampled"]), _pct(t["agreement"]), bool(t["flagged"])) for name, t in by_type.items()]
    return sorted(rows, key=lambda r: (not r[3], r[0]))


def review_headline(run: RunData) -> str:
    review = run["judge_review"]
    flagged = review.get("flagged") or []
    head = words("review_headline", sampled=review["sampled"], candidates=review["candidates"],
                 agreement=_pct(review["agreement"]))
    if review.get("errors"):
        head += words("review_unanswered", n=review["errors"])
    return head + (words("review_flagged_list", list=", ".join(flagged)) if flagged else "")


def attribution_groups(run: RunData) -> list[tuple[str, list[str]]]:
    """(class, ["test @ provider (by) ..."]) for failed/errored records, when any carries an attribution or a
    suggestion; else nothing (a run nobody attributed shows no extra section)."""
    from evalspec.results.stream import records_where

    if not records_where(run["results"], lambda r: r.get("attribution") or r.get("attribution_suggested"),
                         (b'"attribution',)):  # either key
        return []
    records = records_where(run["results"], lambda r: r["status"] in ATTRIBUTABLE)
    out = []
    for cls, members in by_attribution(records).items():
        names = []
        for r in members:
            text = f"{r['test_id']} @ {r['provider']}"
            if r.get("attribution_by"):
                text += f" ({word('attribution_by_' + str(r['attribution_by']), str(r['attribution_by']))})"
            if r.get("attribution_suggested") and r.get("attribution") != r["attribution_suggested"]:
                text += words("suggested", cls=attribution_word(r["attribution_suggested"]))
            triage = r.get("triage")
            note = triage.get("note") if triage else None
            if note:
                text += f" — {note}"
            names.append(one_line(text))
        out.append((cls, list(dict.fromkeys(names))))
    return out


JURY_HEADS = ("rule", "jury_members", "jury_n", "jury_kappa", "jury_disagreement")


def jury_rows(run: RunData) -> list[tuple[str, str, int, str, str]]:
    """(rule, members, conversations all answered, kappa, each member's disagreement) per judged rule that a
    jury decided (`summary.juries`, docs/en/judges.md#juries)."""
    return [(line["rule"], ", ".join(line["members"]), int(line["n"]),
             "—" if line["kappa"] is None else f"{line['kappa']:.2f}",
             ", ".join(f"{judge} {_pct(rate)}" for judge, rate in line["disagreement"].items()))
            for line in (run.get("summary") or {}).get("juries") or []]


def corrected_lines(run: RunData) -> list[str]:
    """One line per judged rule whose pass rate was corrected from its labels (`summary.corrected`)."""
    out = []
    for line in (run.get("summary") or {}).get("corrected") or []:
        fields = {"rule": line["rule"], "raw": _pct(line["raw"]), "labels": line["labels"]}
        if line.get("corrected") is None:
            out.append(words("corrected_chance", **fields))
            continue
        low, high = line.get("interval") or (None, None)
        out.append(words("corrected_line", **fields, corrected=_pct(line["corrected"]), low=_pct(low),
                         high=_pct(high), sens=_pct(line["sensitivity"]), spec=_pct(line["specificity"])))
    return out


def gate_corrected_lines(run: RunData) -> list[str]:
    """One line per suite whose gate asked for the corrected pass rate (`gate.use_corrected`): the rate it
    compared, and from how many labels (docs/en/reports-and-gate.md#corrected-pass-rate)."""
    out = []
    for s in run["gate"]["suites"]:
        if (c := s.get("corrected")) is None or c["raw"] is None:  # no gated verdict: no rate to compare
            continue
        fields = {"suite": s["suite"], "raw": _pct(c["raw"]), "labels": c["labels"]}
        if c.get("no_better_than_chance"):
            out.append(words("gate_corrected_chance", **fields))
        elif c.get("corrected") is None:
            out.append(words("gate_corrected_few", **fields))
        else:
            out.append(words("gate_corrected", **fields, corrected=_pct(c["corrected"]),
                             sens=_pct(c.get("sensitivity")), spec=_pct(c.get("specificity"))))
    return out


def markdown_lines(run: RunData, md: Any) -> list[str]:
    """The Markdown section (`md` escapes one line of text)."""
    lines: list[str] = pairwise_markdown(run, md)
    if corrected := corrected_lines(run) + gate_corrected_lines(run):
        lines += [f"### {words('corrected_title')}", "", *(f"- {md(x)}" for x in corrected), ""]
    if juries := jury_rows(run):
        lines += [f"### {words('jury_title')}", "", "| " + " | ".join(words(h) for h in JURY_HEADS) + " |",
                  "|---|---|---:|---:|---|"]
        lines += [f"| {md(rule)} | {md(members)} | {n} | {kappa} | {md(against)} |"
                  for rule, members, n, kappa, against in juries]
        lines += [""]
    if run.get("judge_review"):
        lines += [f"### {words('review_title')}", "", md(review_headline(run)), "",
                  f"| {words('assertion_type')} | {words('sampled')} | {words('agreement')} | |", "|---|---:|---:|---|"]
        lines += [f"| {md(name)} | {n} | {rate} | {'**⚠️ ' + words('flagged') + '**' if flagged else ''} |"
                  for name, n, rate, flagged in review_rows(run)]
        if any(r[3] for r in review_rows(run)):
            lines += ["", f"*{md(words('flag_text'))}*"]
    groups = attribution_groups(run)
    if groups:
        lines += [""] if lines else []
        lines += [f"### {words('by_attribution_title')}", ""]
        lines += [f"- **{md(attribution_word(cls))}** ({len(names)}): " + "; ".join(md(n) for n in names) for cls, names in groups]
    return lines


def print_judging(console: Console, run: RunData) -> None:
    """The console lines."""
    print_pairwise(console, run)
    for line in gate_corrected_lines(run):
        console.print(rich_escape(one_line(line)))
    if run.get("judge_review"):
        flagged = bool(run["judge_review"].get("flagged"))
        console.print(f"[{'red' if flagged else 'dim'}]{rich_escape(review_headline(run))}[/]")
        for name, n, rate, is_flagged in review_rows(run):
            if is_flagged:
                console.print(f"  [red]{words('flagged')}[/] "
                              + words("flagged_line", name=rich_escape(name), rate=rate, n=n))
    for cls, names in attribution_groups(run):
        console.print(f"[bold]{rich_escape(attribution_word(cls))}[/] ({len(names)}): {rich_escape('; '.join(names))}")


def html_section(run: RunData) -> Markup:
    """The HTML section (escaped)."""
    from markupsafe import Markup, escape  # the HTML report only (docs/en/scale-and-ray.md#start-up)

    parts: list[str] = [pairwise_html(run)]
    if corrected := corrected_lines(run) + gate_corrected_lines(run):
        parts.append(f"<h2>{escape(words('corrected_title'))}</h2><ul>"
                     + "".join(f"<li>{escape(x)}</li>" for x in corrected) + "</ul>")
    if juries := jury_rows(run):
        heads = [escape(words(h)) for h in JURY_HEADS]
        body = "".join("<tr>" + "".join(f'<td data-label="{h}">{escape(str(cell))}</td>'
                                        for h, cell in zip(heads, row, strict=True)) + "</tr>" for row in juries)
        parts.append(f"<h2>{escape(words('jury_title'))}</h2><div class=\"scroll\"><table class=\"stack\"><thead><tr>"
                     + "".join(f"<th>{h}</th>" for h in heads) + f"</tr></thead><tbody>{body}</tbody></table></div>")
    if run.get("judge_review"):
        kind, sampled, agreement = (escape(words(k)) for k in ("assertion_type", "sampled", "agreement"))
        flag_cell = f'<td class="failed" data-label="">⚠ {escape(words("flagged"))}</td>'
        rows = "".join(f'<tr><td data-label="{kind}">{escape(name)}</td><td data-label="{sampled}">{n}</td>'
                       f'<td data-label="{agreement}">{rate}</td>{flag_cell if flagged else ""}</tr>'
                       for name, n, rate, flagged in review_rows(run))
        # class stack: at 420 px each row is a card of label/value lines (html.py's CSS)
        parts.append(f"<h2>{escape(words('review_title'))}</h2><p>{escape(review_headline(run))}</p>"
                     f'<div class="scroll"><table class="stack review"><thead><tr><th>{kind}</th><th>{sampled}</th>'
                     f"<th>{agreement}</th><th></th></tr></thead><tbody>{rows}</tbody></table></div>")
        if any(r[3] for r in review_rows(run)):
            parts.append(f"<p class=\"meta\">{escape(words('flag_text'))}</p>")
    groups = attribution_groups(run)
    if groups:
        items = "".join(f"<li><b>{escape(attribution_word(cls))}</b> ({len(names)}): {escape('; '.join(names))}</li>"
                        for cls, names in groups)
        parts.append(f"<h2>{escape(words('by_attribution_title'))}</h2><ul>{items}</ul>")
    return Markup("".join(parts))


def junit_properties(run: RunData) -> dict[str, str]:
    """JUnit `<property>`s: the second opinion's agreement and flagged types, failures per attribution."""
    props: dict[str, str] = {}
    review = run.get("judge_review")
    if review:
        props["evalspec.judge_review.agreement"] = _pct(review.get("agreement"))
        props["evalspec.judge_review.flagged"] = ", ".join(review.get("flagged") or []) or "none"
    for cls, names in attribution_groups(run):
        props[f"evalspec.attribution.{cls}"] = str(len(names))
    return props
