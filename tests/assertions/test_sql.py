"""`is-sql`: SQL that parses in a dialect (sqlglot), with the tables and columns it may use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalspec.core.errors import ConfigError
from tests.helpers import check, invoke, spec, transcript

COUNT_SOLD = ("SELECT COUNT(*) FROM Orders o JOIN Items i ON i.order_id = o.id\n"
              "WHERE i.name = 'pears' AND o.placed_at >= DATE_SUB(CURDATE(), INTERVAL 1 MONTH);")


@pytest.mark.parametrize("reply", [
    COUNT_SOLD,
    "select name, price from Items where price > 3",
    "UPDATE Items SET price = price * 2 WHERE id = 7",
    "INSERT INTO Items (name, price) VALUES ('梨', 3)",
    "DELETE FROM Items WHERE id = 7",
    "WITH cheap AS (SELECT id FROM Items WHERE price < 2) SELECT COUNT(*) FROM cheap",
    "CREATE TABLE Items (id INT PRIMARY KEY, name VARCHAR(20))",
    "SELECT 名称 FROM 商品 WHERE 价格 > 3",
    "SELECT 1; SELECT 2;",
])
def test_sql_statements_pass(reply: str) -> None:
    result = check("is-sql:", transcript(("q", reply)))
    assert result.passed is True and result.score == 1.0, result.reason
    assert result.reason.startswith("valid mysql SQL")


@pytest.mark.parametrize("reply", [
    "hello world",  # sqlglot alone reads it as a column with an alias
    "Sure! Here is the query: SELECT COUNT(*) FROM Orders",
    "```sql\nSELECT COUNT(*) FROM Orders\n```",  # a code fence is not taken off (nor is it by promptfoo)
    "你好，世界",
    "好的，查询如下：SELECT COUNT(*) FROM 订单",
    "SELECT COUNT(*) FROM 订单 好的，没问题。",  # sqlglot alone reads the sentence as the table's alias
    "",
    "SELECT",
    "SELECT * FROM",
    "SELECT name FROM Items WHERE",
    "Update your settings",
    "Delete it",
    "Create a new account",  # sqlglot keeps it as an unparsed command
    "SELECT 1; and that is all",
])
def test_prose_and_broken_sql_fail_with_the_reason(reply: str) -> None:
    result = check("is-sql:", transcript(("q", reply)))
    assert result.passed is False and result.error is None, result.reason
    assert result.reason.startswith("not mysql SQL: ")
    assert result.evidence[0].turn == 1


def test_the_parse_error_names_where() -> None:
    result = check("is-sql:", transcript(("q", "ok"), ("q", "SELECT name FROM Items WHERE")))
    assert "line 1" in result.reason
    assert result.evidence[0].turn == 2 and "line 1" in result.evidence[0].note
    assert result.evidence[0].text.startswith("SELECT name")


def test_dialects_differ() -> None:
    backticks = "SELECT `name` FROM `Items`"
    assert check("is-sql:", transcript(("q", backticks))).passed is True
    assert check("is-sql: {dialect: tsql}", transcript(("q", backticks))).passed is False
    assert check("is-sql: {dialect: tsql}", transcript(("q", "SELECT TOP 3 [name] FROM [Items]"))).passed is True
    assert check("is-sql: {dialect: postgres}", transcript(("q", "SELECT name::text FROM Items"))).passed is True


def test_allowed_tables() -> None:
    allowed = "is-sql: {allowed_tables: [Orders, Items]}"
    assert check(allowed, transcript(("q", COUNT_SOLD))).passed is True
    result = check(allowed, transcript(("q", "SELECT o.id FROM Orders o JOIN Customers c ON c.id = o.customer_id")))
    assert result.passed is False
    assert result.reason.startswith("table not allowed: Customers (select)")
    assert result.evidence[0].text == "Customers" and result.evidence[0].turn == 1
    assert check("is-sql: {allowed_tables: [orders, items]}", transcript(("q", COUNT_SOLD))).passed is True  # any case
    # a table written with its database needs an entry that names it so
    assert check(allowed, transcript(("q", "SELECT id FROM shop.Orders"))).passed is False
    assert check("is-sql: {allowed_tables: [shop.Orders]}", transcript(("q", "SELECT id FROM shop.Orders"))).passed
    cjk = transcript(("q", "SELECT 名称 FROM 商品 JOIN 订单 ON 订单.商品 = 商品.编号"))
    assert check("is-sql: {allowed_tables: [商品, 订单]}", cjk).passed is True
    assert check("is-sql: {allowed_tables: [商品]}", cjk).reason.startswith("table not allowed: 订单")


def test_allowed_tables_by_access() -> None:
    read_only = "is-sql: {allowed_tables: {select: [Orders, Items]}}"
    assert check(read_only, transcript(("q", COUNT_SOLD))).passed is True
    result = check(read_only, transcript(("q", "UPDATE Items SET price = 1 WHERE id IN (SELECT id FROM Orders)")))
    assert result.passed is False and "Items (update)" in result.reason
    both = "is-sql: {allowed_tables: {select: [Orders], update: [Items]}}"
    assert check(both, transcript(("q", "UPDATE Items SET price = 1 WHERE id IN (SELECT id FROM Orders)"))).passed
    assert check(both, transcript(("q", "DELETE FROM Items"))).passed is False


def test_allowed_columns() -> None:
    reply = "SELECT name, price FROM Items WHERE price > 3"
    assert check("is-sql: {allowed_columns: [name, price]}", transcript(("q", reply))).passed is True
    result = check("is-sql: {allowed_columns: [name]}", transcript(("q", reply)))
    assert result.passed is False and result.reason.startswith("column not allowed: price (select)")
    # `Items.name` allows the column written with its table, its alias, or alone; `name` only alone
    aliased = "SELECT i.name FROM Items i"
    assert check("is-sql: {allowed_columns: [Items.name]}", transcript(("q", aliased))).passed is True
    assert check("is-sql: {allowed_columns: [Items.name]}", transcript(("q", "SELECT name FROM Items"))).passed
    assert check("is-sql: {allowed_columns: [name]}", transcript(("q", aliased))).passed is False
    # SELECT * is the column `*`; COUNT(*) names no column
    assert check("is-sql: {allowed_columns: [name]}", transcript(("q", "SELECT * FROM Items"))).passed is False
    assert check("is-sql: {allowed_columns: ['*']}", transcript(("q", "SELECT * FROM Items"))).passed is True
    assert check("is-sql: {allowed_columns: [name]}", transcript(("q", "SELECT COUNT(*) FROM Items"))).passed is True


def test_allowed_columns_by_access() -> None:
    update = "UPDATE Items SET price = 2 WHERE name = 'pear'"
    assert check("is-sql: {allowed_columns: {select: [name, price]}}", transcript(("q", update))).passed is False
    assert check("is-sql: {allowed_columns: {select: [name], update: [price]}}", transcript(("q", update))).passed
    insert = "INSERT INTO Items (name) VALUES ('pear')"
    assert check("is-sql: {allowed_columns: {insert: [Items.name]}}", transcript(("q", insert))).passed is True


def test_negation_passes_on_what_is_not_sql() -> None:
    assert check("not-is-sql:", transcript(("q", "Sure, I can help with that."))).passed is True
    assert check("not-is-sql:", transcript(("q", COUNT_SOLD))).passed is False
    # a disallowed table makes is-sql fail, so its negation passes
    assert check("not-is-sql: {allowed_tables: [Orders]}", transcript(("q", COUNT_SOLD))).passed is True


def test_scopes_read_each_reply() -> None:
    two = transcript(("q1", "SELECT id FROM Orders"), ("q2", "好的，没问题。"))
    each = check("{type: is-sql, scope: each_turn}", two)
    assert each.passed is False and [e.turn for e in each.evidence] == [2]
    assert check("{type: is-sql, scope: any_turn}", two).passed is True
    with pytest.raises(ConfigError, match="'is-sql' reads one reply at a time, not the replies joined"):
        spec("{type: is-sql, scope: conversation}")  # two valid statements joined are no statement


SUITE = """\
providers:
  - {id: bot, python: bot.py:reply}
tests:
  - id: sql
    conversation:
      - user: how many orders?
    assert:
      - is-sql: {dialect: %s}
"""


def _suite(tmp_path: Path, dialect: str) -> Path:
    (tmp_path / "bot.py").write_text("def reply(messages, context):\n    return 'SELECT COUNT(*) FROM Orders'\n")
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE % dialect)
    return path


def test_validate_names_an_unknown_access(tmp_path: Path) -> None:
    path = _suite(tmp_path, "mysql")
    path.write_text(path.read_text().replace("{dialect: mysql}", "{allowed_tables: {read: [Orders]}}"))
    code, out = invoke("validate", str(path))
    assert code == 2 and "read" in out, out


def test_validate_names_an_unknown_dialect(tmp_path: Path) -> None:
    code, out = invoke("validate", str(_suite(tmp_path, "mysqll")))
    assert code == 2
    assert "unknown SQL dialect 'mysqll'" in out and "mysql" in out
    code, out = invoke("validate", str(_suite(tmp_path, "postgres")))
    assert code == 0, out


RECORDED = """\
transcripts:
  path: logs.jsonl
defaults:
  assert:
    - is-sql:
      scope: each_turn
"""


def _recorded(tmp_path: Path, dialect: str) -> Path:
    (tmp_path / "logs.jsonl").write_text('{"id": "c1", "messages": [{"role": "user", "content": "orders?"}, '
                                         '{"role": "assistant", "content": "SELECT COUNT(*) FROM Orders"}]}\n')
    path = tmp_path / "recorded.yaml"
    path.write_text(RECORDED)
    return path


@pytest.mark.parametrize("make", [_suite, _recorded], ids=["scripted", "recorded"])
def test_validate_without_sqlglot_says_how_to_install_it(tmp_path: Path, make: Any) -> None:
    suite = make(tmp_path, "mysql")
    assert invoke("validate", str(suite))[0] == 0
    blocked = ("import sys; sys.modules['sqlglot'] = None; sys.argv = ['evalspec', 'validate', sys.argv[1]]; "
               "from evalspec.app.cli.main import main; main()")
    done = subprocess.run([sys.executable, "-c", blocked, str(suite)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pip install 'evalspec[sql]'" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
