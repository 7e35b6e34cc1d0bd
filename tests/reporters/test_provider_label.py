"""A provider's `label:` names its line on curve charts (the id stays the key everywhere else)."""

from __future__ import annotations

from evalspec.reporters.curves_html import styled


def chart(provider: str) -> dict[str, object]:
    return {"curves": [{"suite": "s.yaml", "test": "recall", "name": "recall", "provider": provider, "points": [],
                        "half_life": None, "failure_point": None, "stable_range": None}]}


def test_the_label_names_the_line_and_the_id_is_the_fallback() -> None:
    labelled = styled(chart("gpt-w10"), {("s.yaml", "gpt-w10"): {"model": "openai/x", "label": "GPT, 10-turn window"}})
    plain = styled(chart("gpt-full"), {("s.yaml", "gpt-full"): {"model": "openai/x"}})
    assert labelled[0]["label"] == "GPT, 10-turn window"
    assert plain[0]["label"] == "gpt-full"
