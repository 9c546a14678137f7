"""Builds kclient's optional C speed-ups (kclient/producer/_speedups.pyx, the v2 record walker
kclient/protocol/records/_walk.pyx, the threaded driver's socket calls
kclient/io/_sock.pyx) with Cython.

Everything else is in pyproject.toml.  The extension is optional: without a C compiler the
install still succeeds and kclient runs its pure-Python twins of the same code.
"""

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:  # building without Cython (e.g. a plain sdist install): pure Python
    ext_modules = []
else:
    ext_modules = cythonize(
        [
            Extension(
                "kclient.producer._speedups", ["kclient/producer/_speedups.pyx"], optional=True
            ),
            Extension(
                "kclient.protocol.records._walk",
                ["kclient/protocol/records/_walk.pyx"],
                optional=True,
            ),
            Extension("kclient.io._sock", ["kclient/io/_sock.pyx"], optional=True),
        ],
        compiler_directives={"language_level": "3"},
        quiet=True,
    )

setup(ext_modules=ext_modules)
