"""`evalspec coverage --run`: each cell marked `untested`, `thin` (its pass rate's 95 % interval wider than
0.3) or `stable` (docs/en/coverage.md#marks), in run.json terms and on screen in Chinese and English."""

from __future__ import annotations

import pytest

from evalspec.reporters.catalogue import speaking
from evalspec.reporters.coverage import cell_text, dimension_lines
from evalspec.results import coverage as cov
from evalspec.results.stats import wilson


def cell(passed: int, failed: int) -> dict[str, object]:
    found = cov.Cell(tests={("s.yaml", "t")}, approved={("s.yaml", "t")},
                     verdicts={"passed": passed, "failed": failed, "error": 0})
    return found.to_json(with_run=True)


@pytest.mark.parametrize(("passed", "failed", "mark"), [
    (0, 0, "untested"),   # no verdict: nothing to be sure of
    (2, 0, "thin"),       # 100 % of 2: 34–100 %
    (6, 4, "thin"),       # 60 % of 10: 31–83 %
    (36, 4, "stable"),    # 90 % of 40: 77–96 %
    (40, 0, "stable"),    # 100 % of 40: 91–100 %
    (90, 10, "stable"),   # 90 % of 100: 83–94 %
])
def test_a_cell_is_marked_by_its_interval(passed: int, failed: int, mark: str) -> None:
    found = cell(passed, failed)
    assert found["mark"] == mark
    interval = wilson(passed, passed + failed)
    assert found["pass_rate_ci"] == (None if interval is None else [round(x, 6) for x in interval])


def test_the_threshold_is_a_width_of_0_3() -> None:
    assert cov.mark([0.5, 0.8]) == "stable" and cov.mark([0.5, 0.81]) == "thin" and cov.mark(None) == "untested"


def test_marks_are_shown_in_both_languages() -> None:
    result = {"dimensions": [{"name": "signal", "values": [{"value": "refused", **cell(0, 0)},
                                                           {"value": "accepted", **cell(2, 1)},
                                                           {"value": "查询", **cell(60, 0)}]}]}
    with speaking("en"):
        text = "\n".join(dimension_lines(result, with_run=True, md=False))
        assert "untested" in text and "thin" in text and "stable" in text
        assert cell_text(cell(2, 1), True).endswith("· thin")
    with speaking("zh"):
        text = "\n".join(dimension_lines(result, with_run=True, md=True))
        assert "| 查询 | 1 | 1 | 60 | 0 | 0 | 稳定 |" in text and "未测" in text and "样本不足" in text
