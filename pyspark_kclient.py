"""PySpark discovers this module (``pyspark_<name>`` with a ``DefaultSource``) and registers the
``kclient`` data format by itself: ``pip install kclient[spark]`` is the whole setup."""

from kclient.spark import DefaultSource

__all__ = ["DefaultSource"]
