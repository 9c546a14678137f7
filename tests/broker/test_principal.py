"""ssl.principal.mapping.rules as Kafka's SslPrincipalMapper reads them (its own examples)."""

from __future__ import annotations

import pytest

from kclient.broker import MiniBroker
from kclient.broker.principal import NoMatchingRule, PrincipalMapper

KAFKA_RULES = (
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, "
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT"
)


@pytest.mark.parametrize(
    "dn,name",
    [
        ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "Duke"),
        ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
        ("cn=duke,ou=JavaSoft,o=Sun Microsystems", "DUKE"),
        ("OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),
    ],
)
def test_kafkas_examples(dn, name):
    assert PrincipalMapper(KAFKA_RULES).name(dn) == name


def test_default_keeps_the_dn_and_no_match_is_refused():
    assert PrincipalMapper().name("CN=client") == "CN=client"
    with pytest.raises(NoMatchingRule, match="CN=other"):
        PrincipalMapper("RULE:^CN=(svc-.*)$/$1/").name("CN=other")


def test_a_rule_that_cannot_be_read_stops_the_broker(tmp_path):
    with pytest.raises(ValueError, match="ssl.principal.mapping.rules"):
        MiniBroker(log_dir=tmp_path, config={"ssl.principal.mapping.rules": "RULE:broken"})
