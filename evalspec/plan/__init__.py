"""The plan: tests × providers × matrix × repeat, each instance rendered when reached, and what
every planned conversation needs before its first call (preflight, rule self-tests)."""
