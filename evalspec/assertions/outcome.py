"""How a check's failures and errors combine (docs/en/reports-and-gate.md#errors-and-failures): the one
owner every check family goes through, for a check's parts and for a test's checks alike.

A check reads parts: the replies on its scope, the turns a session rule or a per-turn judge reads. A part
that cannot be decided (no state on that turn, a judge that failed, a python or javascript check that
raised, timed out or ended its process) is an error of that part (`Undecided`). What the decided parts
say stands when the undecided ones cannot change it: a failure is then `failed` with the errors beside it
(the evidence keeps both). Otherwise the check is an error. An error is never a pass, so a pass never
stands beside one.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalspec.extend.check import Undecided


def failure_stands(parts: Sequence[tuple[bool | None, float | None, float]], threshold: float | None,
                   every: bool = True) -> bool:
    """Whether the decided parts fail the whole whatever the undecided ones would say. `parts`: (passed,
    None for an undecided part; score; weight).

    `threshold` set: the weighted mean score is below it even if every undecided part scored 1. Otherwise,
    when every part must pass (`every`), one decided failure is enough; when one passing part is enough
    (`any_turn`), only parts that were all decided can fail it."""
    undecided = [w for passed, _, w in parts if passed is None]
    decided = [(bool(passed), float(score or 0.0), w) for passed, score, w in parts if passed is not None]
    if threshold is not None:
        total = sum(w for _, _, w in decided) + sum(undecided)
        if total <= 0:  # weights of 0 only: every part counts alike
            best = (sum(s for _, s, _ in decided) + len(undecided)) / len(parts) if parts else 1.0
        else:
            best = (sum(s * w for _, s, w in decided) + sum(undecided)) / total
        return best < threshold
    if not every:
        return not undecided and bool(decided) and not any(passed for passed, _, _ in decided)
    return any(not passed for passed, _, _ in decided)


def error_text(undecided: Sequence[Undecided]) -> str:
    """One error for the undecided parts of a check (each named by its turn when there are several)."""
    if len(undecided) == 1:
        return undecided[0].error
    return "; ".join(u.text() for u in undecided)
