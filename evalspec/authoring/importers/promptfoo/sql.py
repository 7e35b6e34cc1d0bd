"""promptfoo's `is-sql` value as evalspec's: `databaseType` (node-sql-parser's database) as a sqlglot dialect,
`allowedTables` / `allowedColumns` (node-sql-parser whitelists: `ACCESS::DATABASE::TABLE` and
`ACCESS::TABLE::COLUMN` authorities, each a case-insensitive regex matched whole) as evalspec's allowed
names by access. Only authorities whose regex names exact things convert: `select::null::Products`,
`(select|update)::shop::Orders`; a pattern (`\\w+`, `.*`) does not, nor does a database sqlglot has no
dialect for."""

from __future__ import annotations

from typing import Any

import regex

from evalspec.assertions.sql import ACCESSES, DEFAULT_DIALECT

# node-sql-parser's databases (it lowercases the name) -> sqlglot's dialects; MariaDB, DB2, FlinkSQL and
# Noql have none
DIALECTS = {"mysql": "mysql", "postgresql": "postgres", "sqlite": "sqlite", "transactsql": "tsql",
            "bigquery": "bigquery", "hive": "hive", "redshift": "redshift", "snowflake": "snowflake",
            "athena": "athena", "trino": "trino"}
_NAME = r"[\p{L}\p{N}_]+"  # a regex that matches only this text
_AUTHORITY = regex.compile(rf"(?P<access>\w+|\(\w+(?:\|\w+)*\))::(?P<owner>{_NAME})::(?P<name>{_NAME})")


def is_sql_value(value: Any) -> tuple[dict[str, object], str | None]:
    """evalspec's `is-sql` value for promptfoo's, or why it is not converted ({} and None: no value)."""
    if value is None or value == {}:
        return {}, None
    if not isinstance(value, dict):
        return {}, f"value {value!r} (promptfoo requires a mapping: the check throws)"
    database = value.get("databaseType") or "MySQL"
    dialect = DIALECTS.get(database.lower()) if isinstance(database, str) else None
    if dialect is None:
        return {}, f"databaseType {database!r} (no sqlglot dialect parses as node-sql-parser's does)"
    out: dict[str, object] = {} if dialect == DEFAULT_DIALECT else {"dialect": dialect}
    for key, option in (("allowedTables", "allowed_tables"), ("allowedColumns", "allowed_columns")):
        whitelist = value.get(key)
        if whitelist is None or whitelist == []:  # node-sql-parser checks nothing against an empty list
            continue
        allowed, why = _by_access(whitelist)
        if why is not None:
            return {}, f"{key} {why}"
        out[option] = allowed
    return out, None


def _by_access(whitelist: Any) -> tuple[dict[str, list[str]], str | None]:
    if not isinstance(whitelist, list):
        return {}, f"{whitelist!r} (not a list)"
    allowed: dict[str, list[str]] = {}
    for entry in whitelist:
        found = _AUTHORITY.fullmatch(entry) if isinstance(entry, str) else None
        if found is None:
            return {}, f"entry {entry!r} (only exact ACCESS::OWNER::NAME authorities convert, not patterns)"
        accesses = found["access"].strip("()").lower().split("|")
        unknown = [a for a in accesses if a not in ACCESSES]
        if unknown:
            return {}, f"entry {entry!r} (access {unknown[0]!r}: evalspec knows {', '.join(ACCESSES)})"
        owner = "" if found["owner"].lower() == "null" else f"{found['owner']}."
        for access in accesses:
            names = allowed.setdefault(access, [])
            if owner + found["name"] not in names:
                names.append(owner + found["name"])
    return allowed, None
