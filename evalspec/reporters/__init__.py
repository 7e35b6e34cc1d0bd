"""Reporters read run.json data only: console, HTML, JUnit, Markdown. The report files a command can
write are the table in `evalspec.reporters.formats`."""
