"""The documentation site builds strictly (no broken link or anchor, no page outside the
navigation, no missing include) and its pages load nothing from another host, so they read
offline."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTERNAL = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.I)

pytestmark = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import mkdocs, material, mkdocstrings"], capture_output=True).returncode
    and not os.environ.get("CI"),
    reason="the docs extra is not installed: pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def test_the_site_builds_strictly(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "reference" / "settings.html").is_file()


def test_no_page_loads_anything_from_another_host(site: Path) -> None:
    pages = list(site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        found = EXTERNAL.search(page.read_text(errors="replace"))
        assert found is None, f"{page.relative_to(site)} loads {found.group(0)!r}"
