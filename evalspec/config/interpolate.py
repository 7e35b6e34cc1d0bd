"""The `${ENV}` pattern (applied by the loader, which knows each value's line) and `{{ var }}` templates
(jinja2's sandbox, `templating`: imported for the first template, as the loader does for a suite that
has any, so that a suite without templates never imports jinja2)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from evalspec.config.paths import LineMap, PathKey
from evalspec.core.errors import Problem, TemplateProblem
from evalspec.core.redact import is_secret_name

ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
#: `${NAME}` / `${NAME:-default}`, or `$${`: a literal `${` (how imported text keeps one, docs/en/rule-self-tests.md#verdicts-that-hold)
ENV_OR_LITERAL = re.compile(r"\$\$\{|" + ENV_PATTERN.pattern)
# a value that is one variable and nothing else keeps that variable's type; a name is a Jinja identifier,
# Chinese (`{{ 关键词 }}`) as well as English (docs/en/suite-format.md#text-variables-and-environment)
_WHOLE_VAR = re.compile(r"\{\{\s*([^\W\d]\w*)\s*\}\}")
LITERAL_DOLLAR_BRACE = "$${"


@lru_cache(maxsize=4096)
def _compile(source: str) -> Any:
    from evalspec.config.templating import ENVIRONMENT

    return ENVIRONMENT.from_string(source)


def load_templating() -> None:
    """Import the template sandbox (jinja2, ~40 ms) now rather than at the first render, which may be
    on the event loop mid-run."""
    import evalspec.config.templating  # noqa: F401


def env_names(text: str) -> set[str]:
    """The variables `text` names as `${NAME}` (not those written `$${NAME}`, which are text)."""
    return {m.group(1) for m in ENV_OR_LITERAL.finditer(text) if m.group(1)}


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text


def render_text(text: str, variables: Mapping[str, Any]) -> str:
    """Render one template string; plain strings are returned untouched."""
    if not is_template(text):
        return text
    from jinja2 import TemplateError

    from evalspec.config.templating import render_limited

    try:
        return render_limited(_compile(text), dict(variables))
    except TemplateError as exc:
        raise TemplateProblem(f"template {_short(text)}: {exc.message or exc}") from None
    except MemoryError:
        raise TemplateProblem(f"template {_short(text)}: ran out of memory") from None
    except RecursionError:
        raise TemplateProblem(f"template {_short(text)}: recursion too deep") from None
    except Exception as exc:  # a template's own arithmetic or a filter's error (1/0, int('x'), ...)
        raise TemplateProblem(f"template {_short(text)}: {type(exc).__name__}: {exc}") from None


def names_other_vars(text: str, variables: Mapping[str, Any]) -> set[str]:
    """The variables the template `text` names that `variables` does not have (a test's vars); none when it
    does not parse."""
    from jinja2 import TemplateError, meta

    from evalspec.config.templating import ENVIRONMENT

    try:
        return set(meta.find_undeclared_variables(ENVIRONMENT.parse(text))) - set(variables)
    except TemplateError:
        return set()


def _short(text: str) -> str:
    return repr(text) if len(text) <= 120 else repr(text[:117] + "...")


def render_value(value: Any, variables: Mapping[str, Any]) -> Any:
    """Render every string inside `value`. A string that is exactly one `{{ x }}` keeps x's type."""
    if isinstance(value, str):
        if is_template(value):
            whole = _WHOLE_VAR.fullmatch(value)
            if whole and whole.group(1) in variables:
                return variables[whole.group(1)]
        return render_text(value, variables)
    if isinstance(value, dict):
        return {k: render_value(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, variables) for v in value]
    return value


def interpolate_env(value: Any, path: PathKey, environ: Mapping[str, str], lines: LineMap,
                    problems: list[Problem], secrets: set[str]) -> Any:
    """`${ENV}` and `${ENV:-default}` put in, `$${` read as a literal `${`, in a suite's data and in every
    fragment it includes (docs/en/suite-format.md); a value from the environment is added to `secrets`."""
    if isinstance(value, dict):
        return {k: interpolate_env(v, (*path, k), environ, lines, problems, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_env(v, (*path, i), environ, lines, problems, secrets) for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def sub(match: Any) -> str:
        name, default = match.group(1), match.group(2)
        if name is None:  # `$${`
            return "${"
        result = environ.get(name, default)
        if result is None:
            problems.append(lines.problem(path, f"environment variable {name} is not set "
                                                f"(set it, or write ${{{name}:-default}})"))
            return ""
        if result and (name in environ or is_secret_name(name)):  # from the environment: a secret whatever its name
            secrets.add(result)
        return str(result)

    return ENV_OR_LITERAL.sub(sub, value)
