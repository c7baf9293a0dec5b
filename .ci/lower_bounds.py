"""The constraints that install every direct dependency at its declared floor, printed for pip's `-c`.

The floors have one owner, the pyproject files: this reads the service's runtime, test and `otel`
dependencies and the SDK's runtime and optional ones, and pins each at its `>=` bound (or its `==`
pin). CI installs the service and the SDK with these constraints in a second venv and runs the unit
tests there, so a floor that does not install, or does not work, fails CI.

Usage: python .ci/lower_bounds.py > lower-bounds.txt
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
# Each pyproject with the optional groups the floor venv installs. The bench extra is left out: it
# pins the peers the benchmark compares against and is no part of running or testing Jobwire.
SOURCES: tuple[tuple[Path, tuple[str, ...]], ...] = (
    (REPO / "pyproject.toml", ("test", "otel")),
    (REPO / "sdk" / "python" / "pyproject.toml", ("asyncpg", "psycopg")),
)


class FloorError(ValueError):
    """A declared dependency the floor venv cannot pin: no floor, or two floors."""


def requirements(pyproject: Path, groups: tuple[str, ...]) -> list[Requirement]:
    """The dependencies a pyproject declares: [project] dependencies and the named optional groups."""
    project = tomllib.loads(pyproject.read_text())["project"]
    optional = project.get("optional-dependencies", {})
    return [Requirement(line) for line in [*project["dependencies"], *(d for g in groups for d in optional[g])]]


def floor(requirement: Requirement) -> Version:
    """The lowest version a requirement allows: its `>=` bound or its `==` pin."""
    bounds = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==")]
    if not bounds:
        raise FloorError(f"{requirement} declares no floor (>= or ==), so the lower-bounds check cannot install it")
    return max(bounds)


def floors(sources: tuple[tuple[Path, tuple[str, ...]], ...] = SOURCES) -> dict[str, tuple[Version, str]]:
    """Each declared dependency's floor and environment marker, by canonical name. Direct references
    (the SDK from this repository) install from the tree and have none."""
    pins: dict[str, tuple[Version, str]] = {}
    where: dict[str, str] = {}
    for pyproject, groups in sources:
        for requirement in requirements(pyproject, groups):
            if requirement.url:
                continue
            name, lowest = canonicalize_name(requirement.name), floor(requirement)
            # One venv installs one version: a second, lower floor would go unchecked.
            if name in pins and pins[name][0] != lowest:
                raise FloorError(f"{name} has two floors: {pins[name][0]} in {where[name]}, {lowest} in "
                                 f"{_shown(pyproject)}; declare one")
            pins[name] = (lowest, str(requirement.marker or ""))
            where[name] = _shown(pyproject)
    return pins


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def constraints(sources: tuple[tuple[Path, tuple[str, ...]], ...] = SOURCES) -> str:
    """The constraints file. It names no extras (pip refuses them there): psycopg[binary] is pinned as
    psycopg, whose extra pins psycopg-binary to the same version."""
    return "".join(f"{name}=={version}{f'; {marker}' if marker else ''}\n"
                   for name, (version, marker) in sorted(floors(sources).items()))


if __name__ == "__main__":
    sys.stdout.write(constraints())
