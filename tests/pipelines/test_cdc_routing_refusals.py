"""The CDC job's routing refuses a dynamic bucket table (bucket=-1) whose level-0 files must
be compacted at every commit (its assigner tasks may share a bucket), in one line naming the
option that needs it. Java 0.9 writes such tables (its Flink sink shuffles by bucket after
assigning, so each bucket has one writer); our CDC job writes from the assigner tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from paimon_core import FileSystemCatalog, Schema, UnsupportedError
from pipelines.cdc.routing import routing


@pytest.mark.parametrize(("options", "named"), [
    ({"deletion-vectors.enabled": "true"}, "deletion-vectors.enabled=true"),
    ({"merge-engine": "first-row"}, "merge-engine=first-row"),
    ({"changelog-producer": "lookup"}, "changelog-producer=lookup"),
    ({"force-lookup": "true"}, "force-lookup=true"),
    ({"deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
     "changelog-producer=lookup and deletion-vectors.enabled=true"),
])
def test_dynamic_bucket_lookup_tables_refused_naming_the_option(
    tmp_path: Path, options: dict[str, str], named: str
) -> None:
    t = FileSystemCatalog(str(tmp_path / "wh")).create_table("db.t", Schema.of(
        [("id", "INT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "-1", **options}))
    with pytest.raises(UnsupportedError) as e:
        routing(t.schema, 2)
    message = str(e.value)
    assert message.startswith(f"CDC cannot write a dynamic bucket table (bucket=-1) with {named}:")
    assert "'bucket' to a fixed count" in message and "\n" not in message


def test_fixed_and_plain_dynamic_tables_are_routed(tmp_path: Path) -> None:
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    dv = cat.create_table("db.dv", Schema.of(
        [("id", "INT NOT NULL")], primary_keys=["id"],
        options={"bucket": "4", "deletion-vectors.enabled": "true"}))
    plain = cat.create_table("db.plain", Schema.of(
        [("id", "INT NOT NULL")], primary_keys=["id"], options={"bucket": "-1"}))
    assert routing(dv.schema, 2).tasks == 4
    assert routing(plain.schema, 3).dynamic
