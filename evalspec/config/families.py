"""Self-preference: a judge grading a system of its own model family tends to favour it
(docs/en/judges.md#same-family-judges). `validate` warns when a judge and a system under test share one."""

from __future__ import annotations

import re

from evalspec.config.model import ProviderSpec, Suite
from evalspec.core.errors import Problem


def model_family(model: str) -> str:
    """The family of a model name: the part after its last `/`, lower-cased, up to its first character that is
    not a letter (`openai/gpt-4o-mini` → `gpt`, `qwen2.5-7b` → `qwen`); "" when it starts with none."""
    match = re.match(r"[^\W\d_]*", model.rsplit("/", 1)[-1].strip().lower())
    return match.group(0) if match else ""


def _model(spec: ProviderSpec) -> str | None:
    model = spec.config.get("model") if spec.kind == "model" else None
    return model if isinstance(model, str) and model_family(model) else None


def family_warnings(suite: Suite) -> list[Problem]:
    """One warning per judge (a jury's members each) that shares a model family with a system under test."""
    judges = suite.jury.members if suite.jury is not None else [suite.judge] if suite.judge is not None else []
    warnings = []
    for judge in judges:
        judged = _model(judge)
        if judged is None:
            continue
        for system in suite.providers:
            model = _model(system)
            if model is not None and model_family(model) == model_family(judged):
                message = (f"the judge '{judged}' and the system under test '{system.id}' ({model}) are both of the "
                           f"'{model_family(model)}' family: a judge tends to favour its own family's replies; "
                           "judge with another family (or a jury of several)")
                warnings.append(suite.lines.problem(judge.where, message) if suite.lines
                                else Problem(str(suite.path), None, "", message))
                break
    return warnings
