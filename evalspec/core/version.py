"""evalspec's version: one place, read by the facade, run.json and `--version`."""

__version__ = "0.1.0"
