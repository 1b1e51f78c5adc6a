"""privsim: discrete-event simulation of privacy-preserving distributed learning.

A run is a pure function of ``(scenario, seed)``: see :func:`privsim.runner.run`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("privsim")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
