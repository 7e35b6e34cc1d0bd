"""`is-sql`: the reply is SQL that parses in a dialect (sqlglot, the optional extra `sql`), and uses only
the tables and columns it is allowed to.

sqlglot is lenient: it reads `hello world` as a column with an alias, so a reply passes only when it
parses into SQL statements (SELECT, INSERT, UPDATE, DELETE, CREATE, ... with a body), never a bare
expression; a parse error, or a statement sqlglot only keeps as an unparsed command, fails. A Markdown
code fence is not taken off (as promptfoo's `is-sql` does not): a fenced reply is not SQL.

Allowed tables and columns mirror node-sql-parser's whitelists (promptfoo's `allowedTables` /
`allowedColumns`): every use of a table or column has an access — the statement that writes it
(`insert`, `update`, `delete`, ...) or `select` for what is read — and names are compared ignoring case.
A table entry `Products` allows `Products` written without a database, `shop.Products` only that; a
column entry `name` allows `name` written without a table, `Products.name` allows it written with its
table or that table's alias, or without one; `*` is `SELECT *`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, cast

import regex

from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError
from evalspec.extend.check import Check, Evidence, GradingContext, Reply, say, snippet
from evalspec.extend.params import Keywords
from evalspec.extend.registry import assertion

if TYPE_CHECKING:
    from sqlglot import exp

INSTALL_HINT = "is-sql needs sqlglot, the optional extra `sql`: pip install 'evalspec[sql]'"
DEFAULT_DIALECT = "mysql"  # promptfoo's default databaseType
ACCESSES = ("select", "insert", "update", "delete", "merge", "create", "drop", "alter", "truncate")
# what sqlglot parses a statement into (looked up by name: classes come and go between its versions)
STATEMENTS = ("Query", "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "TruncateTable",
              "Use", "Set", "Transaction", "Commit", "Rollback", "Describe", "Show", "Pragma", "Analyze",
              "Grant", "Revoke", "Cache", "Uncache", "LoadData", "Copy", "Kill")
WRITES = {"Insert": "insert", "Update": "update", "Delete": "delete", "Merge": "merge", "Create": "create",
          "Drop": "drop", "Alter": "alter", "TruncateTable": "truncate"}

NAME = regex.compile(r"[\p{L}\p{M}\p{N}_$@#]+")
Name = Annotated[str, Keywords(minLength=1)]
Names = Annotated[list[Name], Keywords(minItems=1)]
ByAccess = Annotated[dict[str, Names], Keywords(minProperties=1, propertyNames={"enum": list(ACCESSES)})]


@dataclass(frozen=True)
class SqlParams:
    schema_extra: ClassVar[dict[str, Any]] = {"type": ["object", "null"]}  # `is-sql:` alone is fine
    dialect: Annotated[str, Keywords(minLength=1, description=(
        "the SQL dialect, a sqlglot dialect name (mysql, postgres, sqlite, tsql, bigquery, ...)"))] = DEFAULT_DIALECT
    allowed_tables: Annotated[Names | ByAccess, Keywords(description=(
        "the only tables the SQL may use (`Products`, `shop.Products`), or, by access, "
        "`{select: [...], update: [...]}`"))] | None = None
    allowed_columns: Annotated[Names | ByAccess, Keywords(description=(
        "the only columns the SQL may use (`name`, `Products.name`, `*` for SELECT *), or, by access, "
        "`{select: [...], update: [...]}`"))] | None = None


@dataclass(frozen=True)
class Use:
    """One table or column the SQL uses: how (`select` for a read), in what (database or table), its name."""

    access: str
    owner: str
    name: str

    def shown(self) -> str:
        return f"{self.owner}.{self.name}" if self.owner else self.name


def sqlglot_missing() -> bool:
    try:
        import sqlglot  # noqa: F401
    except ImportError:
        return True
    return False


def dialect_problem(name: str) -> str | None:
    """Why `name` is no sqlglot dialect (with the ones it has), or None."""
    from sqlglot.dialects.dialect import Dialect, Dialects

    from evalspec.core.suggest import did_you_mean

    try:
        Dialect.get_or_raise(name)
    except ValueError:
        known = sorted(d.value for d in Dialects if d.value)
        return f"unknown SQL dialect {name!r}{did_you_mean(name, known)} (sqlglot knows: {', '.join(known)})"
    return None


class _CommandFallbackFilter(logging.Filter):
    attached = False

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


_QUIET = _CommandFallbackFilter()


def parse(text: str, dialect: str) -> tuple[list[exp.Expression], str | None]:
    """The statements of `text`, or why it is no SQL in `dialect`."""
    try:
        import sqlglot
        from sqlglot.errors import ErrorLevel, ParseError, TokenError
    except ImportError:
        raise GradingError(INSTALL_HINT) from None
    if not _QUIET.attached:  # a statement kept as a command fails here; sqlglot would also log it
        logging.getLogger("sqlglot").addFilter(_QUIET)
        _QUIET.attached = True
    try:
        parsed = sqlglot.parse(text, read=dialect, error_level=ErrorLevel.RAISE)
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" (line {first['line']}, column {first['col']})" if "line" in first else ""
        description = str(first.get("description") or str(exc).splitlines()[0]).split(" but got <Token")[0]
        return [], f"{description[:160]}{where}"
    except TokenError as exc:
        return [], str(exc).splitlines()[0]
    except ValueError as exc:  # an unknown dialect (validate reports it first)
        raise GradingError(str(exc)) from None
    statements = [cast("exp.Expression", s) for s in parsed if s is not None]  # sqlglot types them Expr
    if not statements:
        return [], "no SQL statement"
    for statement in statements:
        why = _no_statement(statement)
        if why:
            return [], why
    return statements, None


def _no_statement(node: exp.Expression) -> str | None:
    from sqlglot import exp

    kind = type(node).__name__
    if isinstance(node, exp.Command):
        return f"{node.sql()[:60]!r} is syntax sqlglot does not parse (kept only as a command)"
    statements: tuple[type[Any], ...] = tuple(getattr(exp, name) for name in STATEMENTS if hasattr(exp, name))
    if not isinstance(node, statements):
        return f"{node.sql()[:60]!r} is no SQL statement (it parses only as an expression: {kind})"
    odd = next((i.name for i in node.find_all(exp.Identifier) if not i.quoted and not NAME.fullmatch(i.name)), None)
    if odd is not None:  # sqlglot reads any run of non-ASCII characters as a name, punctuation too
        return f"{odd[:60]!r} is no name (unquoted, a name is letters, digits, _ and $)"
    if any(not s.expressions for s in node.find_all(exp.Select)):
        return "a SELECT selects nothing"
    if any(not u.expressions for u in node.find_all(exp.Update)):
        return "an UPDATE sets nothing"
    if any(not isinstance(d.this, exp.Table) for d in node.find_all(exp.Delete)):
        return "a DELETE names no table to delete from"
    return None


def uses(statement: exp.Expression) -> tuple[list[Use], list[Use]]:
    """The tables and the columns `statement` uses, each with its access."""
    from sqlglot import exp

    written: dict[int, str] = {}
    for node in statement.walk():
        access = WRITES.get(type(node).__name__)
        if access is None:
            continue
        targets = [node.this, *(node.args.get("tables") or []),
                   *(node.expressions if isinstance(node, exp.TruncateTable) else [])]
        for target in targets:
            if isinstance(target, exp.Schema):
                target = target.this
            if isinstance(target, exp.Table):
                written[id(target)] = access
    ctes = {cte.alias_or_name.casefold() for cte in statement.find_all(exp.CTE)}
    tables = [t for t in statement.find_all(exp.Table) if t.name and not (not t.db and t.name.casefold() in ctes)]
    aliases = {t.alias.casefold(): t.name for t in tables if t.alias}
    table_uses = [Use(written.get(id(t), "select"), t.db, t.name) for t in tables]
    return table_uses, list(_column_uses(statement, written, aliases))


def _column_uses(statement: exp.Expression, written: dict[int, str], aliases: dict[str, str]) -> Iterator[Use]:
    from sqlglot import exp

    def owner(table: str) -> str:
        return aliases.get(table.casefold(), table)

    set_columns: dict[int, str] = {}
    for update in statement.find_all(exp.Update):
        for assignment in update.expressions:
            if isinstance(assignment, exp.EQ) and isinstance(assignment.this, exp.Column):
                set_columns[id(assignment.this)] = "update"
    for schema in statement.find_all(exp.Schema):
        access = written.get(id(schema.this))
        if access is not None and isinstance(schema.this, exp.Table):
            for column in schema.expressions:
                if isinstance(column, exp.Identifier):
                    yield Use(access, schema.this.name, column.name)
    for select in statement.find_all(exp.Select):
        for projection in select.expressions:
            if isinstance(projection, exp.Star):
                yield Use("select", "", "*")
    for column in statement.find_all(exp.Column):
        yield Use(set_columns.get(id(column), "select"), owner(column.table), column.name)


def _allows(entry: str, use: Use, column: bool) -> bool:
    owner, _, name = entry.rpartition(".")
    if name.casefold() != use.name.casefold():
        return False
    if use.owner.casefold() == owner.casefold():
        return True
    return column and not use.owner and bool(owner)  # `Products.name` allows a bare `name`


def disallowed(found: list[Use], allowed: list[str] | dict[str, list[str]] | None, column: bool) -> list[Use]:
    """The uses no entry of `allowed` allows (none when there is no list)."""
    if allowed is None:
        return []

    def entries(use: Use) -> list[str]:
        return list(allowed) if isinstance(allowed, list) else list(allowed.get(use.access, []))

    return [use for use in found if not any(_allows(str(e), use, column) for e in entries(use))]


def _listed(allowed: list[str] | dict[str, list[str]]) -> str:
    if isinstance(allowed, list):
        return ", ".join(allowed)
    return "; ".join(f"{access}: {', '.join(names)}" for access, names in allowed.items())


@assertion("is-sql", params=SqlParams, one_reply=True,
           example="- is-sql: {dialect: postgres, allowed_tables: {select: [orders, order_items]}}   # tables it may read (no writes to them)")
def is_sql(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply is SQL that parses in `dialect` (default mysql), using only `allowed_tables` / `allowed_columns`."""
    p: SqlParams = spec.params
    statements, why = parse(reply.text, p.dialect)
    if why is not None:
        return Check.of(False, say("sql_invalid", dialect=p.dialect, why=why), [Evidence(reply.turn, snippet(reply.text), why)])
    for statement in statements:
        tables, columns = uses(statement)
        for kind, found, allowed in (("table", tables, p.allowed_tables), ("column", columns, p.allowed_columns)):
            bad = disallowed(found, allowed, kind == "column")
            if bad and allowed is not None:
                shown = ", ".join(dict.fromkeys(f"{u.shown()} ({u.access})" for u in bad))
                return Check.of(False, say(f"sql_{kind}_not_allowed", found=shown, allowed=_listed(allowed)),
                                [Evidence(reply.turn, bad[0].shown(), f"{kind} not allowed")])
    return Check.of(True, say("sql_valid", dialect=p.dialect, n=len(statements), s="s" if len(statements) > 1 else ""), [Evidence(reply.turn, snippet(reply.text, 80))])
