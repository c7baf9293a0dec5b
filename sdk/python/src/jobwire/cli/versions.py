"""What `jobwire --version` says: the SDK's version, and the service's when it is installed."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from jobwire._version import __version__


def version_text() -> str:
    try:
        service = version("jobwire")
    except PackageNotFoundError:
        return f"jobwire-sdk {__version__}"
    return f"jobwire-sdk {__version__}, jobwire service {service}"
