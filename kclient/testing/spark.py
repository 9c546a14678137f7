"""A local Spark session set up as docs/spark.md advises, for tests and benchmarks.

Executors run this interpreter (``PYSPARK_PYTHON``), Python workers are reused, and the
directory holding ``pyspark_kclient`` is put on ``PYTHONPATH`` so PySpark's data source lookup
finds the ``kclient`` format even from an editable install.  Not imported by
``kclient.testing`` itself (PySpark is an optional extra).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["spark_problem", "local_spark"]


def spark_problem() -> str | None:
    """Why a local Spark session cannot run here, or None."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark or pyarrow not installed (pip install kclient[spark])"
    if shutil.which("java") is None:
        return "java not installed (PySpark needs a JRE)"
    return None


def _prepare_environment() -> None:
    import pyspark_kclient

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    here = str(Path(pyspark_kclient.__file__).resolve().parent)
    path = os.environ.get("PYTHONPATH", "")
    if here not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = f"{here}{os.pathsep}{path}" if path else here


@contextmanager
def local_spark(master: str = "local[2]", config: Mapping[str, str] | None = None) -> Iterator[Any]:
    """A SparkSession on ``master`` (worker reuse on, no UI), stopped on exit."""
    _prepare_environment()
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName("kclient")
        .config("spark.python.worker.reuse", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
    )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
