"""Writing suites: `evalspec init`, `evalspec redteam`, and the importers."""
