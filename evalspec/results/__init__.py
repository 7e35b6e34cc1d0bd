"""Results: test verdicts, repeats, curves, the gate, run.json and the journal."""
