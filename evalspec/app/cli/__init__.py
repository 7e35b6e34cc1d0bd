"""The `evalspec` command line (SPEC §1): `main` and its command groups."""
