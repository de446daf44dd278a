"""``python -m assets.pools``: register the code location's pools with the Dagster instance of
``$DAGSTER_HOME`` before it queues its first run (:func:`assets.runs.register_pools`: the run
queue applies a pool's limit only from the pass after the one that first sees it)."""

import dagster as dg

from assets.runs import register_pools


def main() -> int:
    with dg.DagsterInstance.get() as instance:
        for pool, limit in sorted(register_pools(instance).items()):
            print(f"pool {pool}: {limit} run(s) at a time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
