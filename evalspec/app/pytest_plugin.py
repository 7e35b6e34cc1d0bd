"""The pytest plugin: `pytest --evalspec 'suites/*.yaml'` (or `evalspec_suites` in the ini file).

Each test × provider of the suites is a pytest item named `test_id[provider]`. A suite is played once,
when its first item runs, and each item reads its own records: a failure shows the turn, the rule and
the reply excerpt; an evalspec `xfail` is pytest's xfail; drafts are skipped.
"""

from __future__ import annotations

import dataclasses
import glob
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalspec.config.model import Suite, TestSpec
from evalspec.core.errors import EvalspecError


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalspec")
    group.addoption("--evalspec", action="append", default=[], metavar="GLOB",
                    help="collect the tests of these evalspec suites (repeatable)")
    parser.addini("evalspec_suites", "evalspec suite files or globs to collect", type="linelist", default=[])


def _suite_files(config: pytest.Config) -> list[Path]:
    patterns = [(p, Path.cwd()) for p in config.getoption("evalspec")] + \
        [(p, config.rootpath) for p in config.getini("evalspec_suites")]
    files: list[Path] = []
    for pattern, base in patterns:
        full = pattern if Path(pattern).is_absolute() else str(base / pattern)
        matches = sorted(glob.glob(full, recursive=True)) if glob.has_magic(full) else [full]
        if not matches or not all(Path(m).is_file() for m in matches):
            raise pytest.UsageError(f"evalspec suites {pattern!r}: no suite file matches")
        files += [Path(m) for m in matches if Path(m) not in files]
    return files


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    for path in _suite_files(config):
        node = SuiteFile.from_parent(session, path=path.resolve())
        items.extend(node.collect())


class SuiteFile(pytest.File):
    """One suite file: loaded at collection (a config problem is a collection error), played once."""

    suite: Suite
    run_data: dict[str, Any] | None = None

    def collect(self) -> Iterator[pytest.Item]:
        from evalspec.config.loader import load_suite
        from evalspec.core.errors import ConfigError

        try:
            self.suite = load_suite(self.path)
        except ConfigError as exc:
            raise self.CollectError(str(exc)) from None
        for test in self.suite.tests:
            providers = [p.id for p in self.suite.providers if test.providers is None or p.id in test.providers]
            for provider in providers:
                item = SuiteItem.from_parent(self, name=f"{test.id}[{provider}]", test=test, provider=provider)
                if test.draft:
                    item.add_marker(pytest.mark.skip(reason="draft"))
                elif test.xfail:
                    item.add_marker(pytest.mark.xfail(reason=test.xfail, strict=False))
                yield item

    def play(self) -> dict[str, Any]:
        """Run the suite's non-draft tests once; every item reads its records from this run."""
        if self.run_data is None:
            from evalspec.app.api import run
            from evalspec.results.runjson import untyped

            playable = dataclasses.replace(self.suite, tests=[t for t in self.suite.tests if not t.draft])
            run_dir = Path(str(self.config.rootpath)) / ".evalspec" / "runs" / f"pytest-{self.path.stem}"
            self.run_data = untyped(run(playable, run_dir=run_dir, include_drafts=False).data)
        return self.run_data


class SuiteFailure(EvalspecError):
    """An evalspec test failed or errored (shown without a Python traceback)."""


class SuiteItem(pytest.Item):
    def __init__(self, *, test: TestSpec, provider: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.test, self.provider = test, provider

    def runtest(self) -> None:
        from evalspec.reporters.junit import failure_text

        assert isinstance(self.parent, SuiteFile)
        data = self.parent.play()
        records = [r for r in data["results"] if r["test"] == self.test.id and r["provider"] == self.provider]
        bad = [r for r in records if r["status"] in ("failed", "error", "xfailed")]
        if not bad:
            return
        lines = []
        for r in bad:
            head = f"{r['test_id']} @ {r['provider']}: {'error' if r['status'] == 'error' else 'failed'}"
            detail = r["error"] if r["status"] == "error" and r.get("error") else failure_text(r)
            lines.append(head + ("\n" + detail if detail else ""))
        raise SuiteFailure("\n".join(lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, SuiteFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.parent.suite.lines.line(self.test.where) if isinstance(self.parent, SuiteFile) and \
            self.parent.suite.lines else None
        return self.path, (line - 1 if line else None), f"evalspec: {self.name}"
