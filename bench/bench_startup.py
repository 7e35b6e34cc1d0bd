"""Start-up benchmark: how long `evalspec` takes before and around a tiny piece of work.

Prints wall and CPU seconds (median of `--repeat` runs) of three commands on a suite with one
python-provider conversation of three turns:

    evalspec --version
    evalspec validate one.yaml
    evalspec run one.yaml -q -o run.json

each with the package's bytecode cached (.pyc, as an installed package has it) and without (a source
checkout under PYTHONDONTWRITEBYTECODE=1). The package is copied to a temporary folder first, so the
figures never depend on what the working tree's __pycache__ holds; `--package DIR` measures another
copy of the package (an older commit's `evalspec/`, for a before/after table).

    python bench/bench_startup.py [--repeat 5] [--package path/to/evalspec] [--importtime FILE]

`--importtime FILE` also writes `python -X importtime` of the run (bytecode cached) to FILE.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_scale import BOT, SUITE  # noqa: E402  (the scale benchmark's bot and suite, played once)

COMMANDS = {"--version": ["--version"], "validate": ["validate", "one.yaml"],
            "run": ["run", "one.yaml", "-q", "-o", "run.json"]}


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def environment(package_root: Path, bytecode: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = str(package_root)
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--package", type=Path, default=Path(__file__).resolve().parents[1] / "evalspec")
    parser.add_argument("--importtime", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        root = folder / "pkg"
        shutil.copytree(args.package, root / "evalspec", ignore=shutil.ignore_patterns("__pycache__"))
        work = folder / "work"
        work.mkdir()
        (work / "bot.py").write_text(BOT, encoding="utf-8")
        (work / "one.yaml").write_text(SUITE.format(n=1), encoding="utf-8")
        python = [sys.executable, "-m", "evalspec"]
        where = subprocess.run([sys.executable, "-c", "import evalspec; print(evalspec.__file__)"], cwd=work,
                               env=environment(root, False), capture_output=True, text=True, check=True).stdout
        if not where.startswith(str(root)):
            raise SystemExit(f"measured the wrong package: {where}")
        print(f"package {args.package} · python {sys.version.split()[0]} · median of {args.repeat}")
        print(f"{'command':<12}{'bytecode':>10}{'wall s':>9}{'cpu s':>9}")
        for bytecode in (True, False):
            env = environment(root, bytecode)
            if bytecode:  # one run writes the .pyc files
                timed(python + COMMANDS["run"], work, env)
            else:
                shutil.rmtree(root / "evalspec", ignore_errors=True)
                shutil.copytree(args.package, root / "evalspec", ignore=shutil.ignore_patterns("__pycache__"))
            for name, argv in COMMANDS.items():
                runs = [timed(python + argv, work, env) for _ in range(args.repeat)]
                wall = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                print(f"{name:<12}{'.pyc' if bytecode else 'none':>10}{wall:>9.3f}{cpu:>9.3f}")
            if bytecode and args.importtime is not None:
                done = subprocess.run([sys.executable, "-X", "importtime", *python[1:], *COMMANDS["run"]],
                                      cwd=work, env=env, capture_output=True, text=True, check=True)
                args.importtime.write_text(done.stderr, encoding="utf-8")


if __name__ == "__main__":
    main()
