"""privsim: discrete-event simulation of privacy-preserving distributed learning.

A run is a pure function of ``(scenario, seed)``::

    import privsim

    scenario = privsim.builtin_scenario("quickstart").replace({"dca.tolerated": 300})
    result = privsim.run(scenario, seed=1)
    print(result.privacy.achieved_epsilon, result.accuracy["rmse"])

Studies: ``privsim.sweep("study.toml", "out/")`` then ``privsim.load_results("out/")``.
Regression tests: ``privsim.assert_golden("my.toml", "golden/my.json")`` (or the
``privsim_golden`` pytest fixture).
"""

from typing import Any

from privsim.version import __version__

__all__ = [
    "__version__",
    "assert_golden",
    "builtin_scenario",
    "check_golden",
    "list_protocols",
    "load_results",
    "load_scenario",
    "load_study",
    "replace",
    "run",
    "sweep",
]

_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    # The entry points load on first use, so `import privsim` stays light.
    if name in _API:
        from privsim import api

        return getattr(api, name)
    raise AttributeError(f"module 'privsim' has no attribute {name!r}")
