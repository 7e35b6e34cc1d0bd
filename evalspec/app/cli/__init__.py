"""The `evalspec` command line (docs/en/reference/cli.md): `main` and its command groups."""
