"""Fixtures of tests/aio: the secured brokers of tests/security."""

from tests.security.conftest import acl_broker, certs, sasl_broker, tls_broker  # noqa: F401
