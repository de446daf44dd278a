"""The front door (``paimon_core``) against the README, the integration surface
(``paimon_core.integration``) and the one-release forwarding of the names that left the front
door (issue 29, scope 4)."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import paimon_core
import paimon_core.integration

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")

# paimon_core.__all__ before issue 29, written out by hand: every one of these must still
# resolve from ``paimon_core`` (a front-door name, or a forward that warns), never vanish.
_BEFORE = """
AddColumn And and_ ArrayType arrow_short_retract_mask AssignerChannel AtomicType
BATCH_COMMIT_IDENTIFIER BatchTableCommit BatchWriteBuilder BINARY_ROOTS bind bucket_ids
BucketCompactor BucketWork BulkDelete ChangelogProducer channel_ids check_range
CommitConflictError CommitKind CommitMessage CommitOptions CommitStateUnknownError CommitStep
compact_bucket compact_table compact_with_retries CompactExecutor CompactOptions CompactSource
CompactStrategy ConfigError conform_column Consumer ConsumerManager CoreOptions
CorruptMetadataError DatabaseAlreadyExistError DatabaseNotEmptyError DatabaseNotExistError
DataField DataFileMeta DataSplit DataType decode_partition deduplicate DEFAULT_COMPACT_STRATEGY
DEFAULT_MAX_ATTEMPTS DropColumn equal ExpireConfig ExpireResult ExpireSnapshots FileIO FileKind
FileNotFoundInTableError FileStoreTable FileSystemCatalog FilterError from_arrow_type FsckReport
greater_or_equal greater_than Identifier ImmutableOptionError InspectTable INT_RANGES
INTEGER_ROOTS InvalidIdentifierError is_full is_in is_not_in is_not_null is_null join
KIND_COLUMN Leaf less_or_equal less_than limit_threads list_buckets live_bucket_files live_files
LocalExecutor ManifestEntry MapType MergeEngine Move MoveType MultisetType new_compactor
not_equal NotAWarehouseError NotFoundError Op Or or_ OrphanResult PaimonError parse_filter
parse_filters parse_memory_size parse_sql_type pick_buckets Plan plan_compaction pool_threads
Predicate read_stream_plan ReadBuilder remove_orphan_files RemoveOption RenameColumn
resolve_timestamp_range RollbackResult RowKind RowType ScanPlanner Schema SchemaChange
SchemaError SetOption Snapshot snapshot_listings SnapshotExpiredError SnapshotNotExistError
sorted_runs split_system_table starts_with StartupMode StorageError StreamPlan StreamTableScan
STRING_ROOTS TableAlreadyExistError TableCommit TableLayout TableNotExistError TableRead
TableScan TableSchema TableWrite TagNotExistError text_timestamp_nanos to_arrow_schema
to_arrow_type TypeRoot UnsupportedError UpdateColumnComment UpdateColumnNullability
UpdateColumnPosition UpdateColumnType UpdateComment WarehouseNotExistError
"""
BEFORE = _BEFORE.split()


def _readme_front_door_imports() -> set[str]:
    """The names of every ``from paimon_core import ...`` line of the README."""
    names: set[str] = set()
    for match in re.finditer(r"^\s*from paimon_core import ([^\n#]+)", README, re.M):
        names.update(n.strip() for n in match.group(1).strip("()").split(","))
    return names - {""}


def test_the_front_door_is_small_and_every_name_is_in_the_readme() -> None:
    front = set(paimon_core.__all__)
    assert 35 <= len(front) <= 50, len(front)
    missing = sorted(n for n in front if not re.search(rf"`{re.escape(n)}[`(.]", README))
    assert missing == []  # each one quoted as code (`Name`, `Name(`, `Name.`) in the README


def test_readme_imports_from_the_front_door_only_front_door_names() -> None:
    used = _readme_front_door_imports()
    assert {"FileSystemCatalog", "CommitOptions", "Schema"} <= used  # the parser sees them
    assert used - set(paimon_core.__all__) == set()


def test_the_integration_surface_is_apart_and_resolves() -> None:
    front, integration = set(paimon_core.__all__), set(paimon_core.integration.__all__)
    assert front.isdisjoint(integration)
    # a name that is also a submodule would shadow it (``paimon_core.<name>`` forwards first)
    assert integration.isdisjoint(m.name for m in pkgutil.iter_modules(paimon_core.__path__))
    assert {"bucket_ids", "ScanPlanner", "TypeRoot", "compact_with_retries"} <= integration
    from paimon_core.bucket import bucket_ids
    from paimon_core.scan.planner import ScanPlanner

    assert paimon_core.integration.bucket_ids is bucket_ids
    assert paimon_core.integration.ScanPlanner is ScanPlanner
    assert all(getattr(paimon_core.integration, n) is not None for n in integration)
    assert "paimon_core.integration" in README
    with pytest.raises(AttributeError, match="no_such_helper"):
        paimon_core.integration.no_such_helper  # noqa: B018


@pytest.mark.parametrize(("name", "home"), [
    ("ScanPlanner", "paimon_core.integration"),
    ("DEFAULT_COMPACT_STRATEGY", "paimon_core.integration"),
    ("AddColumn", "paimon_core.schema_change"),
    ("SnapshotNotExistError", "paimon_core.errors"),
])
def test_a_name_that_left_warns_names_its_module_and_forwards(name: str, home: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"paimon_core\.{name} moved to {home}") as rec:
        value = getattr(paimon_core, name)
    assert rec[0].filename == __file__  # the warning points at the caller's line
    assert value is getattr(sys.modules[home], name)
    with pytest.warns(DeprecationWarning):  # again on every use, not only the first
        getattr(paimon_core, name)


def test_every_name_of_the_old_front_door_still_resolves() -> None:
    assert len(BEFORE) == len(set(BEFORE)) == 155
    gone = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in BEFORE:
            try:
                getattr(paimon_core, name)
            except AttributeError:
                gone.append(name)
    assert gone == []
    with pytest.raises(AttributeError, match="'no_such_name'"):
        paimon_core.no_such_name  # noqa: B018


def test_a_from_import_of_a_moved_name_warns_in_a_fresh_process() -> None:
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "from paimon_core import ScanPlanner\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("DeprecationWarning: paimon_core.ScanPlanner moved to "
                           "paimon_core.integration"), last


def test_a_lazy_declaration_without_name_as_name_is_refused(tmp_path: Path) -> None:
    from paimon_core import _read_exports as read_exports

    module = tmp_path / "front.py"
    module.write_text("from typing import TYPE_CHECKING\n"
                      "from a.b import Eager as Eager, helper\n"
                      "if TYPE_CHECKING:\n"
                      "    from a.c import Lazy as Lazy\n"
                      "    from a.d import Forgotten\n")
    with pytest.raises(ImportError, match=r"front\.py:5: lazy re-export 'Forgotten' of a\.d "
                                          r"must be written 'Forgotten as Forgotten'"):
        read_exports(str(module))
    module.write_text(module.read_text().replace("Forgotten\n", "Forgotten as Forgotten\n"))
    exports = read_exports(str(module))
    assert exports.lazy == {"Lazy": "a.c", "Forgotten": "a.d"}
    assert exports.names == ["Eager", "Forgotten", "Lazy"]  # ``helper`` is not re-exported
