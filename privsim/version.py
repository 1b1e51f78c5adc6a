"""The installed distribution's version (``0.0.0+unknown`` in a never-installed tree)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("privsim")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
