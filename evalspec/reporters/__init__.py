"""Reporters read run.json data only: console, HTML, JUnit, Markdown."""
