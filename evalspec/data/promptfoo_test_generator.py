"""Runs one promptfoo python test generator at import (`tests: file://tests.py:fn`).

Run by `evalspec import promptfoo` in a python process of its own, in the generator's folder:
`python promptfoo_test_generator.py PATH FUNCTION ARGS_JSON`. The generator is called first (its own
output may not end its last line); its tests are then printed as JSON on a line of their own.
"""

import importlib.util
import json
import sys
from pathlib import Path


def main() -> None:
    path, name, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    sys.path.insert(0, str(Path(path).parent))
    spec = importlib.util.spec_from_file_location("promptfoo_tests", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = getattr(module, name)(*args)
    print()
    print(json.dumps(tests, ensure_ascii=False, default=str))


if __name__ == "__main__":
    main()
