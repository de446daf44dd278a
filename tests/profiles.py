"""Hypothesis profiles of the test suite: ``dev`` (fast, the default on a workstation) and
``ci`` (thorough: more examples, derandomized, no example database), chosen by the
environment variable ``HYPOTHESIS_PROFILE``; without it ``ci`` where Hypothesis detects a CI
run (``CI`` set, as ``.ci/run`` does), else ``dev``.

A property test states its example count at Hypothesis' own default scale (100 examples =
weight 1) through :func:`examples`; the profile scales it: ``dev`` runs a quarter, ``ci``
twice as many. Property tests therefore set no fixed ``max_examples`` and no ``deadline``
(no profile has one: the machine is shared and timings vary).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEV = "dev"
CI = "ci"
#: examples of a weight-1 property test per profile (Hypothesis' default is 100)
BASE_EXAMPLES = {DEV: 25, CI: 200}
_REFERENCE = 100


def register_profiles() -> str:
    """Register ``dev`` and ``ci`` and load the one the environment selects; returns its
    name."""
    # explicit parents: a profile registered without one inherits whatever is loaded (and
    # Hypothesis loads its own "ci" profile on import when it detects CI)
    settings.register_profile(DEV, settings.get_profile("default"),
                              max_examples=BASE_EXAMPLES[DEV], deadline=None)
    settings.register_profile(
        CI, settings.get_profile("ci"), max_examples=BASE_EXAMPLES[CI], deadline=None,
        suppress_health_check=[HealthCheck.too_slow])
    name = os.environ.get("HYPOTHESIS_PROFILE") or (CI if _in_ci() else DEV)
    settings.load_profile(name)
    return name


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def examples(n: int) -> int:
    """The example count for a test that wants ``n`` at Hypothesis' default scale, under the
    loaded profile (at least 2)."""
    current = settings.default
    base = current.max_examples if current is not None else _REFERENCE
    return max(2, n * base // _REFERENCE)
