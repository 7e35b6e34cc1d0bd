"""Playing conversations: the runner (concurrently, journaled), the turn loop with its sources of
the next user message (scripted, simulated, attacker), grading replays, forked processes, Ray."""
