"""The import-linter contracts in pyproject.toml hold (layers point one way; the domain is pure)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_import_linter_contracts_are_kept() -> None:
    beside_python = Path(sys.executable).parent / "lint-imports"
    linter = str(beside_python) if beside_python.exists() else shutil.which("lint-imports")
    assert linter, "lint-imports is not installed (pip install -e '.[test]')"
    done = subprocess.run([linter, "--no-cache", "--no-logo"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" in done.stdout and " 0 broken" in done.stdout
