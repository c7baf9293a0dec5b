"""The SDK's version, read from its installed metadata: sdk/python/pyproject.toml is the one place
it is written."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("jobwire-sdk")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0.0.0+unknown"
