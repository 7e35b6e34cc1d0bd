"""The built-in checks (reply, conversation, graded, memory, tools, session rules, the bot's state) and
how a record is graded. Importing `evalspec.assertions.builtin` registers them."""
