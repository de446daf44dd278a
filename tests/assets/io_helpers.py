"""What the IO manager tests share (:mod:`tests.assets.test_io_managers` and
:mod:`tests.assets.test_io_managers_untyped`): partitions, an IO manager per frame type on a
warehouse, ``dg.materialize`` with it, the last materialization's metadata, a refusal."""

from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pytest

from assets.io_managers import (
    PaimonPandasIOManager,
    PaimonPolarsIOManager,
    PaimonPyArrowIOManager,
)
from assets.resources import PaimonCatalog
from paimon_core import SchemaError

DAILY = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-05")
REGIONS = dg.StaticPartitionsDefinition(["eu", "us"])


def sorted_rows(table: pa.Table, *order: str) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: tuple(r[c] for c in order))


def io_manager(kind: str, wh: Path, **kw: Any) -> dg.ConfigurableIOManager:
    cls = {"arrow": PaimonPyArrowIOManager, "pandas": PaimonPandasIOManager,
           "polars": PaimonPolarsIOManager}[kind]
    return cls(catalog=PaimonCatalog(warehouse=str(wh)), **kw)


def materialize(assets: list[Any], io: dg.ConfigurableIOManager, wh: Path,
                 **kw: Any) -> dg.ExecuteInProcessResult:
    return dg.materialize(assets, resources={"io_manager": io,
                                             "catalog": PaimonCatalog(warehouse=str(wh))}, **kw)


def last_metadata(result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    """The metadata of the run's (last) materialization, values unwrapped."""
    mats = result.get_asset_materialization_events()
    md = mats[-1].materialization.metadata
    return {k: getattr(v, "value", v) for k, v in md.items()}


def refused(assets: list[Any], io: dg.ConfigurableIOManager, wh: Path,
             **kw: Any) -> BaseException:
    with pytest.raises(SchemaError) as e:
        materialize(assets, io, wh, **kw)
    return e.value
