"""The reference pages read off the code (tools/reference_pages.py) and the problem type pages."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import Field

from app.api.responses import PROBLEM_TYPES
from app.config import Settings

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "tools" / "reference_pages.py"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference_pages", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nav_pages() -> list[str]:
    """Every page mkdocs.yml's nav names (`- title: page.md` or `- page.md`), read without a YAML
    parser: the test needs no documentation tooling installed."""
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8").partition("\nnav:\n")[2]
    return re.findall(r"^\s+- (?:[^\n]*?: )?(\S+\.md)\s*$", nav, re.MULTILINE)


def test_settings_cli_and_http_reference_pages_match_the_code() -> None:
    done = subprocess.run([sys.executable, str(GENERATOR), "--check"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_setting_without_a_description_fails_the_settings_page() -> None:
    class Undocumented(Settings):
        new_knob: int = Field(3)

    with pytest.raises(ValueError, match="new_knob"):
        generator().settings_table(Undocumented)


def test_every_setting_has_a_row_on_the_settings_page() -> None:
    table = generator().settings_table()
    for name in Settings.model_fields:
        assert f"| `JOBWIRE_{name.upper()}`{{ #JOBWIRE_{name.upper()} }} |" in table


@pytest.mark.parametrize("kind", sorted({*PROBLEM_TYPES.values(), "error"}))
def test_every_problem_kind_the_api_answers_has_a_page_in_the_nav(kind: str) -> None:
    page = f"reference/problems/{kind}.md"
    assert (REPO / "docs" / page).is_file(), f"docs/{page} is missing"
    assert page in nav_pages(), f"mkdocs.yml's nav has no entry for {page}"
    assert f"https://jobwire.dev/problems/{kind}" in (REPO / "docs" / page).read_text(encoding="utf-8")
