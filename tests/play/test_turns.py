"""The one turn loop (play/turns.py): a scripted, a simulated and an attack conversation end the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions

BOT = '''\
def respond(messages, context):
    if context["turn"] == 2:
        raise RuntimeError("the bot is down on turn 2")
    return "reply " + str(context["turn"])
'''

USERS = '''\
def user(transcript, context):
    return "user says " + str(context["turn"])


def attacker(transcript, context):
    return {"message": "attacker says " + str(context["turn"]), "tactic": "urgency"}
'''


def played(tmp_path: Path) -> dict[str, dict[str, Any]]:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "users.py").write_text(USERS, encoding="utf-8")
    (tmp_path / "s.yaml").write_text("""\
providers: [{id: bot, python: bot.py:respond}]
tests:
  - id: scripted
    conversation: [{user: one}, {user: two}, {user: three}]
    assert: [{not-contains: secret}]
  - id: simulated
    simulate: {python: users.py:user, max_turns: 4}
    assert: [{not-contains: secret}]
  - id: attack
    attack: {goal: get the secret, strategy: goat, python: users.py:attacker, max_turns: 4}
    assert: [{not-contains: secret}]
""", encoding="utf-8")
    data = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return {r["test_id"]: r for r in data["results"]}


def test_a_provider_error_on_turn_k_ends_every_kind_of_conversation_the_same_way(tmp_path: Path) -> None:
    records = played(tmp_path)
    assert set(records) == {"scripted", "simulated", "attack"}
    errors = {r["error"] for r in records.values()}
    assert len(errors) == 1, errors
    error = errors.pop()
    assert error.startswith("turn 2: ") and "the bot is down on turn 2" in error, error
    for test_id, record in records.items():
        assert record["stop_reason"] == "error", test_id
        shape = [(m["role"], m["turn"]) for m in record["transcript"]]
        assert shape == [("user", 1), ("assistant", 1), ("user", 2)], (test_id, shape)
        assert record["transcript"][1]["content"] == "reply 1"
    assert records["attack"]["transcript"][0]["tactic"] == "urgency"
    assert records["attack"]["attack"]["breached"] == [] and records["attack"]["attack"]["breached_turn"] is None
