"""The built-in checks (reply, conversation, graded, memory, tools, session rules) and how a
record is graded. Importing `evalspec.assertions.builtin` registers them."""
