"""The fault-injecting S3 proxy, loaded from its one home ``scripts/s3proxy.py`` (shared with
the process topology of ``scripts/topology.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.modload import load_module

#: the module name both loaders register (one class identity per process)
MODULE = "paimon_s3proxy"
_mod = sys.modules.get(MODULE) or load_module(
    Path(__file__).resolve().parents[2] / "scripts" / "s3proxy.py", MODULE)

FaultProxy = _mod.FaultProxy
Rule = _mod.Rule
RequestCount = _mod.RequestCount
Exchange = _mod.Exchange

__all__ = ["Exchange", "FaultProxy", "RequestCount", "Rule"]
