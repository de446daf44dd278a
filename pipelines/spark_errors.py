"""Paimon errors raised inside Spark, given back to the user as the same typed error.

An error raised by the ``paimon`` source in a Spark task (or in a data source call on the
driver) reaches PySpark as a ``PythonException`` / ``AnalysisException`` whose text names it:
``paimon_core.errors.SchemaError: column 's' is VARCHAR(3) but ...`` (with
``spark.sql.execution.pyspark.udf.hideTraceback.enabled``, set by
:func:`pipelines.session.register`, nothing else comes before it). :func:`typed_error` turns
such an exception back into the Paimon error it names, carrying the same message (the
leaf's extra attributes, such as a path, are not carried over), so ``except SchemaError``
works around ``df.write.format("paimon").save(...)`` as around ``paimon_core`` itself. Spark's
exception stays attached as ``__cause__``.
"""

from __future__ import annotations

import contextlib
import importlib
import re
from collections.abc import Iterator

from paimon_core import PaimonError

__all__ = ["raising_typed", "typed_error"]

_NAMED = re.compile(r"\b(paimon_core(?:\.\w+)*)\.(\w+): (.*?)(?:\n\s*SQLSTATE: \w+)?\s*$",
                    re.DOTALL)


def typed_error(error: BaseException) -> PaimonError | None:
    """The Paimon error ``error`` (a PySpark exception) reports, or None when it reports none.
    """
    if isinstance(error, PaimonError):
        return error
    match = _NAMED.search(str(error))
    if match is None:
        return None
    module_name, class_name, message = match.groups()
    try:
        cls = getattr(importlib.import_module(module_name), class_name, None)
    except ImportError:
        return None
    if not (isinstance(cls, type) and issubclass(cls, PaimonError)):
        return None
    typed = cls.__new__(cls)
    Exception.__init__(typed, message.strip())
    return typed


@contextlib.contextmanager
def raising_typed() -> Iterator[None]:
    """Raise a PySpark exception that reports a Paimon error as that error (``from`` the
    Spark one); other exceptions pass unchanged."""
    try:
        yield
    except PaimonError:
        raise
    except Exception as e:
        typed = typed_error(e)
        if typed is None:
            raise
        raise typed from e
