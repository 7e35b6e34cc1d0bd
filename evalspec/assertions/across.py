"""Checks decided across a test's records, not on one transcript: `select-best`, and `pairwise` with
`against:` (docs/en/judges.md#comparing-two-bot-versions-pairwise). Grading and the run ask only this:
their own modules (and the judge client they bring) load when a suite names them."""

from __future__ import annotations

from evalspec.config.model import PAIRWISE, SELECT_BEST, AssertionSpec

PENDING = "decided across the test's candidates once all of them have finished; this record was graded alone"


def across_records(spec: AssertionSpec) -> bool:
    """Whether a check is decided across a test's records rather than on one transcript: `select-best`,
    and `pairwise` with `against:`."""
    return spec.type == SELECT_BEST or (spec.type == PAIRWISE and spec.params.against is not None)
