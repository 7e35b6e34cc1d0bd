"""The built-in checks: each YAML type → the module whose `@assertion` registers it. A table, so that a
run imports only the check modules its suite names (docs/en/scale-and-ray.md#start-up): `contains`
loads `text`, a suite without checks loads none. The registry imports a type's module on its first lookup
(`evalspec.extend.registry.resolve_type`); listing every type (`evalspec checks`, the suite schema)
imports them all. tests/extend/test_builtin_table.py pins the table to what the modules register."""

from __future__ import annotations

_HOMES = {
    "evalspec.assertions.custom": ("python",),
    "evalspec.assertions.efficiency": ("efficiency",),
    "evalspec.assertions.graded": ("coherence", "conversation-relevance", "follows-correction", "knowledge-retention",
                                   "llm-rubric", "rejects-false-premise", "role-adherence", "similar",
                                   "stays-on-topic", "topic-coherence", "trajectory:goal-success"),
    "evalspec.assertions.javascript": ("javascript",),
    "evalspec.assertions.journey": ("trajectory:checkpoints", "trajectory:milestones"),
    "evalspec.assertions.memory": ("asks-clarification", "memory-recall", "refers-to"),
    "evalspec.assertions.pairwise": ("pairwise",),
    "evalspec.assertions.pii": ("pii",),
    "evalspec.assertions.select_best": ("select-best",),
    "evalspec.assertions.session": ("at-most", "not-after", "not-before", "turn-count", "within"),
    "evalspec.assertions.sql": ("is-sql",),
    "evalspec.assertions.state": ("buttons", "state"),
    "evalspec.assertions.text": ("contains", "contains-all", "contains-any", "contains-json", "cost", "equals",
                                 "finish-reason", "icontains", "is-json", "jmespath", "latency", "levenshtein",
                                 "regex", "starts-with", "tokens", "word-count"),
    "evalspec.assertions.tools": ("not-tool-called", "tool-args-valid", "tool-called", "tool-sequence"),
    "evalspec.assertions.world": ("said-vs-did", "world", "world-matches", "world-unchanged"),
}

#: each built-in check type → the module that registers it (read by the registry, which imports no check)
TYPES: dict[str, str] = {name: module for module, names in _HOMES.items() for name in names}
