"""Every exception evalspec defines, one tree (drawn as httpx draws its own in `httpx/_exceptions.py`).

One line per class, indented under its base; where a class lives when not here; what it means and what
it becomes (an exit code, a test's or check's `error`, an HTTP answer):

* EvalspecError        base of every exception evalspec defines
  x ConfigError        the suite (or a command's input) is invalid; carries every Problem → exit 2
    + PreflightError   (providers.factory) a provider cannot work as configured, nothing called → exit 2
    + ImportRefused    (authoring.importers) the import would write a hollow suite, nothing written → exit 2
      + WouldOverwrite (authoring.importers) it would overwrite files evalspec did not write → exit 2
    + SourceRefused    (authoring.importers.rasa) a Rasa / Botium file is not imported (why on stderr)
  x ProviderError      a call to the system under test (or a judge) failed for good → the test is `error`
    + NoReply          (extend.replies) the bot answered a turn with nothing → that turn's error, or its
                       empty reply where the turn says `no_reply: ok`
  x GradingError       an assertion reached no verdict (bad judge answer, regex time-out) → check `error`
  x LoadError          a `FILE.py:function` could not be loaded → a Problem (exit 2), in a run the `error`
  x UserCodeError      the user's code raised (SystemExit included) → the test's or check's `error`
  x PluginError        a plugin could not be imported → a suite's Problem, or a bad `--plugin` (exit 2)
  x TemplateProblem    a `{{ }}` template did not render → a Problem (exit 2), or a ProviderError
  x ConversationLost   (play.ray_executor) every worker that played a conversation died → the test's `error`
  x Interrupted        (core.interrupts) SIGINT / SIGTERM stopped the run → exit 130 / 143, resumable
  x TriageError        (review.triage) a triage names no failed record → exit 2 (`triage`) or an ActionError
  x GitHubError        (review.github) the GitHub API refused or failed → exit 1 (github-comment) or a note
  x NotAPullRequest    (review.github) the event is no pull request → `github-comment` does nothing, exit 0
  x UnknownRun         (app.view.runs; a LookupError too) `view` has no such run → 404 or an ActionError
  x UnreadableRun      (app.view.runs; a ValueError too) a run's run.json cannot be read → 422 naming it
  x ApproveError       (app.view.approve) a draft cannot be approved → an ActionError
  x ActionError        (app.view.actions) a `view` action cannot be done → HTTP 400 with its message
    + NeedsConfirmation (app.view.actions) approving a draft that failed in the viewed run → HTTP 409
  x SuiteFailure       (app.pytest_plugin) a suite's test failed or errored → a failed pytest item
  x ControlFlow        internal: raised and caught inside evalspec, never shown as itself
    + CacheMiss        (providers.calls) a cache-only call found nothing → the stateful test is played live
    + RecordedProblem  (config.recorded) a recorded conversation file is unusable → a ConfigError (exit 2)
    + BadToolCalls     (config.recorded) a recorded message's tool_calls unreadable → a RecordedProblem or Problem
    + DatasetProblem   (config.dataset) a test's dataset: file or a row of it is unusable → a ConfigError (exit 2)
    + TemplateLimit    (config.templating; a jinja2 SecurityError too) a template's limit → TemplateProblem
    + NoBaseline       (review.github_baseline) no baseline run on the base branch → a note, no diff
    + _RecursiveAlias  (config.yamlfile) a YAML alias inside itself → the file's problem line
    + TurnError        (play.turns) a source of user turns or a stop condition failed → the record's error
      + SimulatorFault (play.faults) the simulated user slipped → the record's error, attributed simulator_fault
    + _RenderProblem   (plan.build) an instance did not render → a Problem (exit 2), or an EvalspecError
    + NotExact         (authoring.importers.promptfoo.tools) tools not given alike → the provider noted, left out
    + Unconvertible    (authoring.importers.traces) a span or trace is not made of chat messages → named, left out
    + WorldFileProblem (config.world) a world file is no JSON object → a Problem (exit 2), or a check's `error`
    + SlowMatch        (extend.patterns) a regex needs more than a millisecond on the event loop → its check
                       is checked again on a worker, within options.grade_timeout

Where the play and grading code catches `EvalspecError` (its message becomes the record's `error`),
none of Interrupted, the review, app and ControlFlow classes can arrive: a ControlFlow is caught by the
code that raises it, or by its one caller, before. tests/structure/test_exceptions.py keeps this tree
whole: every exception class in evalspec is an EvalspecError, and each is on a line here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class EvalspecError(Exception):
    """Base of every error evalspec raises on purpose."""


class ControlFlow(EvalspecError):
    """Raised and caught inside evalspec to change course (a cache miss, a render problem to locate);
    the catcher turns it into a Problem, another error or another path: it never reaches a person as itself."""


@dataclass(frozen=True)
class Problem:
    """One validation problem, located in a suite file."""

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ConfigError(EvalspecError):
    """The configuration is invalid; every problem is reported at once."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class ProviderError(EvalspecError):
    """A call to a provider failed for good (after retries). `rate_limited`: the answer was 429 or 503."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None,
                 rate_limited: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.rate_limited = rate_limited


class GradingError(EvalspecError):
    """An assertion could not produce a verdict. `usage` lists the model calls made on the way (one
    `{tokens, cost, cached}` per judge call whose answer was unusable or came before the failure), so they
    are counted although no verdict came of them."""

    def __init__(self, message: str, *, usage: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.usage: list[dict[str, Any]] = list(usage or [])


class LoadError(EvalspecError):
    """A `FILE.py:function` reference could not be loaded."""


class UserCodeError(EvalspecError):
    """The user's code raised (anything, `SystemExit` included)."""


class PluginError(EvalspecError):
    """A plugin could not be imported."""


class TemplateProblem(EvalspecError):
    """A template could not be rendered (unknown variable, syntax)."""
