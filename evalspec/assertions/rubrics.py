"""The seed's graded rubrics: what `levels: default` means for the types that have one (docs/en/judges.md)."""

from __future__ import annotations

# the graded rubrics of docs/en/memory-and-curves.md: conflict handling 100/80/40/0, topic drift 100/70/30/0
DEFAULT_LEVELS: dict[str, dict[str, float]] = {
    "follows-correction": {"立即纠正": 1.0, "确认后纠正": 0.8, "部分纠正": 0.4, "不纠正": 0.0},
    "stays-on-topic": {"全程锚定": 1.0, "轻微发散但能拉回": 0.7, "明显漂移": 0.3, "完全偏离": 0.0},
}
