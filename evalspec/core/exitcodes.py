"""Exit codes of `evalspec run` (docs/en/reference/cli.md)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    #: the gate passed
    OK = 0
    #: the gate failed: pass rate below the minimum, a critical assertion failed, or an SLA was missed
    GATE_FAILED = 1
    #: usage or configuration error: nothing was run
    CONFIG_ERROR = 2
    #: no gated test failed, but errors left tests without a verdict beyond gate.max_errors
    TOO_MANY_ERRORS = 3
    #: interrupted (Ctrl-C); finished tests are in the journal, `--resume` completes the run
    INTERRUPTED = 130
    #: terminated (SIGTERM, how CI cancels a job); kept and resumable like an interruption
    TERMINATED = 143
