"""The built-in checks. Importing this module registers them: the registry is a table that imports no
check, filled by the modules that declare checks (these, and plugins'). `import evalspec` imports it,
and so does grading, so every command and the API see the built-in types."""

from evalspec.assertions import (  # noqa: F401
    custom,
    efficiency,
    graded,
    javascript,
    journey,
    memory,
    pairwise,
    pii,
    select_best,
    session,
    sql,
    state,
    text,
    tools,
    world,
)

BUILTIN_MODULES = (custom, efficiency, graded, javascript, journey, memory, pairwise, pii, select_best, session, sql, state, text,
                   tools, world)
