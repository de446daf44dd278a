"""Typed option accessors (paimon_core.options.CoreOptions): Paimon's defaults, one parse."""

from __future__ import annotations

import pytest

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.options import INT_MAX, CoreOptions
from paimon_core.spec.option_enums import ChangelogProducer, MergeEngine, StartupMode


def test_defaults() -> None:
    o = CoreOptions({})
    assert o.merge_engine is MergeEngine.DEDUPLICATE
    assert o.changelog_producer is ChangelogProducer.NONE
    assert o.scan_mode is StartupMode.DEFAULT
    assert o.num_sorted_runs_compaction_trigger == 5
    assert o.num_levels == 6
    assert o.target_file_size(True) == 128 << 20
    assert o.target_file_size(False) == 256 << 20
    assert o.write_buffer_size == 256 << 20
    assert o.compaction_max_file_num(-1) == 50
    assert o.compaction_max_file_num(4) == 5
    assert o.full_compaction_delta_commits is None
    assert (o.manifest_target_file_size, o.manifest_merge_min_count,
            o.manifest_full_compaction_file_size) == (8 << 20, 30, 16 << 20)
    assert (o.snapshot_num_retained_min, o.snapshot_num_retained_max,
            o.snapshot_time_retained_millis, o.snapshot_expire_limit) == (
                10, INT_MAX, 3_600_000, 10)
    assert o.dynamic_partition_overwrite and o.partition_legacy_name


def test_values_are_parsed() -> None:
    o = CoreOptions({
        CoreOptions.MERGE_ENGINE: " First-Row ", CoreOptions.CHANGELOG_PRODUCER: "lookup",
        CoreOptions.NUM_SORTED_RUNS_COMPACTION_TRIGGER: "3",
        CoreOptions.COMPACTION_EARLY_MAX_FILE_NUM: "7", CoreOptions.SCAN_MODE: "latest",
        CoreOptions.CHANGELOG_TIME_RETAINED: "2 h",
    })
    assert o.merge_engine is MergeEngine.FIRST_ROW and o.merge_engine == "first-row"
    assert o.changelog_producer is ChangelogProducer.LOOKUP
    assert o.num_levels == 4  # trigger + 1
    assert o.compaction_max_file_num(1) == 7  # the fallback key
    assert o.scan_mode is StartupMode.LATEST
    assert o.changelog_time_retained_millis == 7_200_000


def test_num_levels_has_one_rule() -> None:
    assert CoreOptions({CoreOptions.NUM_LEVELS: "1"}).num_levels == 1
    with pytest.raises(SchemaError, match="must be >= 1"):
        _ = CoreOptions({CoreOptions.NUM_LEVELS: "0"}).num_levels


def test_invalid_enum_values() -> None:
    with pytest.raises(UnsupportedError, match="merge-engine 'nope' is not supported"):
        _ = CoreOptions({CoreOptions.MERGE_ENGINE: "nope"}).merge_engine
    with pytest.raises(SchemaError, match="changelog-producer='x' is not one of"):
        _ = CoreOptions({CoreOptions.CHANGELOG_PRODUCER: "x"}).changelog_producer
    with pytest.raises(SchemaError, match=r"scan\.mode 'x': expected one of default, full"):
        _ = CoreOptions({CoreOptions.SCAN_MODE: "x"}).scan_mode
