"""Bulk construction helpers for the metadata decoders (hundreds of thousands of objects)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["frozen_factory", "gc_paused"]

_T = TypeVar("_T")


def frozen_factory(cls: type[_T]) -> Callable[..., list[_T]]:
    """A fast column-wise constructor for the frozen slotted dataclass ``cls``.

    The returned function takes one iterable per field (in field order) and returns the list
    of instances, like ``list(map(cls, *columns))``. A frozen dataclass sets every field
    through ``object.__setattr__`` (about 2 µs for 20 fields) and decoding 100k manifest
    entries builds 400k objects, so instances are built through an unfrozen twin with the same
    slots (plain attribute stores) whose instances are then switched to ``cls``; CPython allows
    that because both classes have identical slot layouts. No ``__post_init__`` runs (the spec
    types have none).
    """
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    twin = dataclasses.make_dataclass(f"_{cls.__name__}Builder", names, slots=True)
    probe = twin(*([None] * len(names)))
    probe.__class__ = cls  # raises TypeError here, at import, if the layouts ever differ

    def build(*columns: Iterable[Any]) -> list[_T]:
        objs: list[Any] = list(map(twin, *columns))
        for obj in objs:
            obj.__class__ = cls
        return objs

    build.__doc__ = f"Build {cls.__name__} instances from per-field columns (no checks)."
    return build


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_reenable = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while bulk-building acyclic objects.

    Decoding a large manifest allocates millions of objects; every 700 allocations CPython's
    collector runs, and the older generations are rescanned again and again (decoding 100k
    entries took about twice as long with the collector on). Nested/concurrent uses are
    counted; the collector is re-enabled by the last one out, and only if it was enabled
    when the first one came in.
    """
    global _gc_depth, _gc_reenable
    with _gc_lock:
        if _gc_depth == 0:
            _gc_reenable = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_reenable:
                gc.enable()
