"""The one place a test skips.

A test whose declared dependency, jar or server is absent calls :func:`missing` (or
:func:`need`, :func:`need_module`, the ``requires`` marker): it skips saying why, and under
``KCLIENT_REQUIRE_ALL=1`` (set by ``.ci/run``) it fails instead, so CI cannot go green by
skipping what it was meant to run. A test that does not apply here by design (another platform,
the C speed-ups switched off by ``KCLIENT_PURE_PYTHON=1``) calls :func:`not_applicable`, which
skips in either mode. ``tests/test_skip_sites.py`` holds every skip in tests/ and integration/
to these functions.

One exemption: a test that needs a Docker engine itself (the testcontainers backend of
kclient.testing.KafkaServer, not Kafka: the JVM backend runs the same integration tests without
Docker) calls :func:`need_docker`, which skips saying why where no engine answers, in either
mode: Docker is not a component this project's machines declare, so KCLIENT_REQUIRE_ALL=1 does
not make its absence a failure.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

#: Turn a missing component into a failure (set by .ci/run).
REQUIRE_ALL = os.environ.get("KCLIENT_REQUIRE_ALL") == "1"

#: The C speed-ups are left out on purpose (the Python twins are tested alone).
PURE_PYTHON = os.environ.get("KCLIENT_PURE_PYTHON") == "1"

#: Prefix of every skip reason given for a missing component (counted in the session summary).
MISSING = "missing component: "


def missing(reason: str) -> NoReturn:
    """Skip a test whose declared dependency, jar or server is absent (fail under REQUIRE_ALL)."""
    if REQUIRE_ALL:
        pytest.fail(f"KCLIENT_REQUIRE_ALL=1 and {MISSING}{reason}", pytrace=False)
    pytest.skip(MISSING + reason)


def need(problem: str | None) -> None:
    """:func:`missing` with ``problem`` when there is one (``kafka_problem()`` and the like)."""
    if problem:
        missing(problem)


def need_module(name: str, hint: str = "pip install -e '.[test]'") -> ModuleType:
    """Import ``name`` (a declared test dependency), or :func:`missing` saying how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(f"{name} cannot be imported ({exc}); {hint}")


def need_c(module: object, what: str = "the C speed-ups") -> None:
    """Skip when ``module`` (a C twin) is None because KCLIENT_PURE_PYTHON=1 left it out;
    a missing build otherwise is a missing component."""
    if module is not None:
        return
    if PURE_PYTHON:
        not_applicable(f"KCLIENT_PURE_PYTHON=1 leaves {what} out")
    missing(f"{what} are not built (scripts/setup, or setup.py build_ext --inplace)")


def not_applicable(reason: str) -> NoReturn:
    """Skip a test that does not apply here by design (not a missing component)."""
    pytest.skip(reason)


#: Prefix of the skip reason of :func:`need_docker` (counted apart in the session summary).
NO_DOCKER = "no Docker engine (exempt from KCLIENT_REQUIRE_ALL): "


def need_docker(problem: str | None) -> None:
    """Skip, in either mode, a test that needs a Docker engine itself when ``problem``
    (``kclient.testing.kafka_docker.docker_problem()``) says none answers (see the module)."""
    if problem:
        pytest.skip(NO_DOCKER + problem)


def requires(problem: str | None) -> pytest.MarkDecorator:
    """A mark: the test needs what ``problem`` (None when present) says is missing; applied by
    tests/conftest.py before the test's setup, so under REQUIRE_ALL it fails rather than skips."""
    return pytest.mark.requires(problem)


def c_twin(module: object, what: str = "the C speed-ups") -> pytest.MarkDecorator:
    """A mark for the C half of a twin test (see :func:`need_c`)."""
    return pytest.mark.c_twin(module, what)
