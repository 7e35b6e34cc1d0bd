"""Second looks at verdicts: the judge's second opinion, failure triage, judge-eval, `doctor`,
and baselines (attach, confirmation replays, the base branch's run.json from GitHub)."""
