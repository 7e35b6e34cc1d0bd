"""What a plugin author builds on: the assertion and provider-kind registries, a check's types
(`Check`, `Evidence`, `Reply`, `GradingContext`), the transcript message (`Message`), typed parameters,
the `Provider` protocol and its response, and the regex owner. `evalspec` re-exports the names a plugin
needs; import them from there."""
