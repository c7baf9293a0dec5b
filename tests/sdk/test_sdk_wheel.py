"""What the SDK's wheel ships, built offline from sdk/python: the package with `py.typed` (its
annotations are for type checkers, PEP 561) and the runtime dependencies it declares, httpx and
rich only (the handler toolkit verifies signatures itself: no standardwebhooks)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

SDK = Path(__file__).resolve().parents[2] / "sdk" / "python"


def test_the_wheel_is_typed_and_depends_on_httpx_and_rich_only(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(tmp_path), str(SDK)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = tmp_path.glob("jobwire_sdk-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [line.split(":", 1)[1].strip() for line in archive.read(metadata).decode().splitlines()
                    if line.startswith("Requires-Dist:")]
    assert "jobwire/py.typed" in names and "jobwire/resources/executions.py" in names
    assert sorted(r.split(">")[0] for r in requires if "extra ==" not in r) == ["httpx", "rich"], requires
