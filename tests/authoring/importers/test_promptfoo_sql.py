"""promptfoo's `is-sql` as evalspec's: its dialect and exact whitelists convert, keeping the verdicts; a
database sqlglot has no dialect for, or a whitelist pattern, is listed as not converted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec.authoring.importers.promptfoo.sql import is_sql_value
from tests.authoring.importers.helpers import import_config, played, written

READ = "SELECT SUM(l.qty) FROM Sales s JOIN Lines l ON l.sale_id = s.id WHERE s.fruit = 'kiwi'"


@pytest.mark.parametrize("value,expected", [
    (None, {}),
    ({}, {}),
    ({"databaseType": "MySQL"}, {}),
    ({"databaseType": ""}, {}),  # promptfoo's default
    ({"databaseType": "PostgresQL"}, {"dialect": "postgres"}),
    ({"databaseType": "TransactSQL"}, {"dialect": "tsql"}),
    ({"allowedTables": ["select::null::Sales", "SELECT::null::Lines"]},
     {"allowed_tables": {"select": ["Sales", "Lines"]}}),
    ({"allowedTables": ["(select|update)::shop::Sales"]},
     {"allowed_tables": {"select": ["shop.Sales"], "update": ["shop.Sales"]}}),
    ({"allowedColumns": ["select::null::fruit", "update::Sales::qty"], "allowedTables": []},
     {"allowed_columns": {"select": ["fruit"], "update": ["Sales.qty"]}}),
])
def test_values_that_convert(value: Any, expected: dict[str, Any]) -> None:
    assert is_sql_value(value) == (expected, None)


@pytest.mark.parametrize("value,why", [
    ("MySQL", "promptfoo requires a mapping"),
    ({"databaseType": "MariaDB"}, "databaseType 'MariaDB'"),
    ({"databaseType": "DB2"}, "databaseType 'DB2'"),
    ({"databaseType": "Postgres"}, "databaseType 'Postgres'"),  # node-sql-parser has no such database
    ({"allowedTables": [r"(select|update)::(\w+)::(\w+)"]}, "only exact ACCESS::OWNER::NAME"),
    ({"allowedTables": ["select::null::Sal.*"]}, "only exact"),
    ({"allowedTables": ["select::null::Sales", 3]}, "entry 3"),
    ({"allowedColumns": ["rename::null::fruit"]}, "access 'rename'"),
    ({"allowedColumns": "select::null::fruit"}, "not a list"),
])
def test_values_that_do_not_convert(value: Any, why: str) -> None:
    converted, reason = is_sql_value(value)
    assert converted == {} and reason is not None and why in reason


def test_is_sql_checks_import_and_keep_promptfoo_s_verdicts(tmp_path: Path) -> None:
    tables = {"type": "is-sql", "value": {"databaseType": "MySQL",
                                          "allowedTables": ["select::null::Sales", "select::null::Lines"]}}
    columns = {"type": "is-sql", "value": {"allowedColumns": ["select::null::NoSuchColumn"]}}
    results = played(tmp_path, {"prompts": ["{{ q }}"], "tests": [
        {"description": "a-read", "vars": {"q": READ}, "assert": [{"type": "is-sql"}, tables, columns]},
        {"description": "b-other-table", "vars": {"q": "SELECT name FROM Staff"}, "assert": [tables]},
        {"description": "c-write", "vars": {"q": "DELETE FROM Sales WHERE id = 1"}, "assert": [tables]},
        {"description": "d-prose", "vars": {"q": "Sure! The query is below."},
         "assert": [{"type": "is-sql"}, {"type": "not-is-sql"}]},
        {"description": "e-cjk", "vars": {"q": "好的，这是查询：SELECT 1"}, "assert": [{"type": "not-is-sql"}]},
        {"description": "f-postgres", "vars": {"q": "SELECT fruit::text FROM Sales"},
         "assert": [{"type": "is-sql", "value": {"databaseType": "PostgresQL"}}]},
    ]})
    verdicts = {r["test_id"]: [a["pass"] for a in r["assertions"]] for r in results}
    assert verdicts == {"a-read": [True, True, False], "b-other-table": [False], "c-write": [False],
                        "d-prose": [False, True], "e-cjk": [True], "f-postgres": [True]}
    checks = [a for t in written(tmp_path)["tests"] for turn in t["conversation"] for a in turn.get("assert", [])]
    assert {"is-sql": {"allowed_tables": {"select": ["Sales", "Lines"]}}} in checks
    assert {"is-sql": {"allowed_columns": {"select": ["NoSuchColumn"]}}} in checks


def test_a_database_without_a_dialect_is_listed_as_not_converted(tmp_path: Path) -> None:
    config = {"prompts": ["{{ q }}"], "providers": ["echo"], "tests": [
        {"vars": {"q": "SELECT 1"}, "assert": [{"type": "is-sql", "value": {"databaseType": "FlinkSQL"}},
                                               {"type": "contains", "value": "SELECT"}]}]}
    code, _, err = import_config(tmp_path, config)
    assert code == 0, err
    assert "assertion 'is-sql' databaseType 'FlinkSQL'" in err
    assert written(tmp_path)["tests"][0]["conversation"][0]["assert"] == [{"contains": "SELECT"}]
