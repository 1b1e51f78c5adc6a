"""A shadowed ``privsim``: a folder named ``privsim`` without an ``__init__.py`` (a clone
of the repository, whose package is ``privsim/privsim/``) imported in place of this
package, as an empty namespace package.

It happens when Python starts in the folder holding the clone (the current directory
comes first on ``sys.path``) and privsim is installed in editable mode through
setuptools' import finder (``pip install -e .``), which Python consults only after
searching the path. A regular install (a wheel, ``editable_mode=compat``, or the
repository on ``PYTHONPATH``) is never shadowed: a regular package anywhere on the path
wins over a namespace folder. Then ``import privsim`` runs none of privsim's code, so
nothing can detect it there: ``privsim.load_scenario`` raises ``AttributeError``. What
can: any privsim module imported afterwards (its submodules still load, through the
finder). The command line and :mod:`privsim.api` call :func:`check`, which says so and
gives the namespace module the package's own attributes, so ``privsim.load_scenario``
works from then on.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

__all__ = ["ShadowedPackageWarning", "check", "shadowing_folders"]

#: The package's own folder (this module's).
PACKAGE = Path(__file__).resolve().parent

#: What the namespace module is given from the package's ``__init__.py``.
_ATTRIBUTES = ("__getattr__", "__all__", "__version__", "__doc__")

_warned = False


class ShadowedPackageWarning(RuntimeWarning):
    """``privsim`` was imported as an empty namespace package from another folder."""


def shadowing_folders() -> tuple[str, ...]:
    """The folders imported as a namespace package ``privsim`` in place of this package;
    empty when ``privsim`` is this package (or is not imported)."""
    top = sys.modules.get("privsim")
    if top is None or getattr(top, "__file__", None) is not None:
        return ()
    return tuple(str(p) for p in getattr(top, "__path__", ()))


def _message(folders: tuple[str, ...]) -> str:
    where = ", ".join(folders)
    return (
        f"'privsim' was imported from {where}, a folder named privsim without an "
        f"__init__.py (a clone of the repository?), as an empty namespace package, not "
        f"from the installed package in {PACKAGE}: Python finds that folder first "
        "because privsim is installed in editable mode. `import privsim` there gives a "
        "module without privsim's functions (AttributeError: module 'privsim' has no "
        "attribute 'load_scenario'). Fix: start Python in another folder or rename that "
        "one, or reinstall with `pip install -e . --config-settings editable_mode=compat` "
        "(or without -e). Repaired for this process: privsim.<name> works from here on."
    )


def _repair() -> None:
    """Give the namespace module the package's ``__getattr__`` (the lazy API),
    ``__all__``, ``__version__`` and docstring, from the package's ``__init__.py``."""
    top = sys.modules["privsim"]
    spec = importlib.util.spec_from_file_location("privsim._package", PACKAGE / "__init__.py")
    if spec is None or spec.loader is None:
        return
    own = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(own)
    for name in _ATTRIBUTES:
        if hasattr(own, name):
            setattr(top, name, getattr(own, name))


def check(*, warn: bool = True) -> str:
    """If ``privsim`` is a namespace package from another folder: repair it (see the
    module docstring) and return the message, warning with a
    :class:`ShadowedPackageWarning` the first time (``warn=False``: the caller says it,
    and no warning follows); else return ``""``."""
    global _warned
    folders = shadowing_folders()
    if not folders:
        return ""
    message = _message(folders)
    _repair()
    if warn and not _warned:
        warnings.warn(message, ShadowedPackageWarning, stacklevel=2)
    _warned = True
    return message
