"""Security options as Spark users write them (``kafka.security.protocol``, ``kafka.ssl.*`` with
PEM / PKCS12 / JKS stores, ``kafka.sasl.*`` with Java's JAAS line) on read, write and the
exactly-once sink over a mini-broker's SSL and SASL_SSL listeners; secrets never shown."""

import logging

import pytest

from kclient.spark.options import parse_read_options, parse_write_options
from kclient.spark.security import parse_security
from tests.needs import need_module

PASSWORD = "alice-Pa55-word"
USERS = {"alice": PASSWORD}
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    f'username="alice" password="{PASSWORD}";'
)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    need_module("cryptography")
    from kclient.testing.certs import make_certificates

    return make_certificates(tmp_path_factory.mktemp("spark-certs"))


@pytest.fixture(scope="module")
def stores(certs):
    from kclient.testing.certs import make_java_stores

    return make_java_stores(certs)


@pytest.fixture(scope="module")
def secured(tmp_path_factory, certs):
    """A mini-broker with PLAINTEXT, SSL, SASL_SSL and SASL_PLAINTEXT listeners (user alice)."""
    from kclient.broker import MiniBroker
    from tests.conftest import FAST_GROUPS

    config = {
        **FAST_GROUPS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs.server_pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs.ca),
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,"
        "SASL_PLAINTEXT://127.0.0.1:0",
    }
    with MiniBroker(
        log_dir=tmp_path_factory.mktemp("secured-broker"), config=config, sasl_users=USERS
    ) as broker:
        yield broker


def ssl_options(broker, stores, kind="JKS"):
    store = stores.truststore_jks if kind == "JKS" else stores.truststore_p12
    return {
        "kafka.bootstrap.servers": broker.bootstrap_of("SSL"),
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.location": str(store),
        "kafka.ssl.truststore.password": stores.password,
    }


def scram_options(broker, certs):
    return {
        "kafka.bootstrap.servers": broker.bootstrap_of("SASL_SSL"),
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": SCRAM_JAAS,
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(certs.ca),
    }


# -- options, no Spark -----------------------------------------------------------------------
def test_every_store_type_gives_a_context(certs, stores):
    base = {"kafka.security.protocol": "SSL"}
    for trust in (stores.truststore_jks, stores.truststore_p12, certs.ca):
        for key in (
            {},
            {"kafka.ssl.keystore.location": str(stores.keystore_jks)},
            {
                "kafka.ssl.keystore.location": str(stores.keystore_p12),
                "kafka.ssl.keystore.type": "PKCS12",
            },
            {
                "kafka.ssl.keystore.location": str(certs.client_pem),
                "kafka.ssl.keystore.type": "PEM",
            },
        ):
            sec = parse_security(
                {
                    **base,
                    "kafka.ssl.truststore.location": str(trust),
                    "kafka.ssl.truststore.password": stores.password,
                    "kafka.ssl.keystore.password": stores.password,
                    **key,
                }
            )
            ctx = sec.client_keys()["ssl.context"]
            assert [c["subject"] for c in ctx.get_ca_certs()] == [
                ((("commonName", "kclient test CA"),),)
            ]
    inline = parse_security(
        {
            **base,
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.certificates": certs.ca.read_text(),
            "kafka.ssl.keystore.type": "PEM",
            "kafka.ssl.keystore.key": certs.client_key_encrypted.read_text(),
            "kafka.ssl.key.password": certs.key_password,
            "kafka.ssl.keystore.certificate.chain": certs.client_cert.read_text(),
        }
    )
    assert len(inline.client_keys()["ssl.context"].get_ca_certs()) == 1


def test_unsupported_stores_and_keys_are_refused_clearly(certs, stores):
    base = {"kafka.security.protocol": "SSL"}
    with pytest.raises(ValueError, match="type JCEKS: kclient reads PEM, PKCS12 and JKS"):
        parse_security(
            {
                **base,
                "kafka.ssl.truststore.location": str(stores.jceks),
                "kafka.ssl.truststore.password": stores.password,
            }
        )
    with pytest.raises(ValueError, match="type BCFKS"):
        parse_security(
            {
                **base,
                "kafka.ssl.truststore.location": str(stores.truststore_p12),
                "kafka.ssl.truststore.type": "BCFKS",
            }
        )
    with pytest.raises(ValueError, match="declared PEM but holds JKS"):
        parse_security(
            {
                **base,
                "kafka.ssl.truststore.location": str(stores.truststore_jks),
                "kafka.ssl.truststore.type": "PEM",
            }
        )
    with pytest.raises(ValueError, match="wrong or missing store password"):
        parse_security(
            {
                **base,
                "kafka.ssl.keystore.location": str(stores.keystore_p12),
                "kafka.ssl.keystore.password": "nope",
            }
        )
    with pytest.raises(ValueError, match="keytool says"):
        parse_security(
            {
                **base,
                "kafka.ssl.truststore.location": str(stores.truststore_jks),
                "kafka.ssl.truststore.password": "nope",
            }
        )
    with pytest.raises(ValueError, match="GSSAPI"):
        parse_security(
            {
                "kafka.security.protocol": "SASL_SSL",
                "kafka.sasl.mechanism": "GSSAPI",
                "kafka.sasl.kerberos.service.name": "kafka",
            }
        )
    with pytest.raises(ValueError, match="login callback handler is Java code"):
        parse_security(
            {
                "kafka.security.protocol": "SASL_SSL",
                "kafka.sasl.login.callback.handler.class": "a.B",
            }
        )
    with pytest.raises(ValueError, match="does not use kafka.ssl.truststore.location"):
        parse_security(
            {
                "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.jaas.config": SCRAM_JAAS,
                "kafka.ssl.truststore.location": str(certs.ca),
            }
        )
    with pytest.raises(ValueError, match="must be one of PLAINTEXT, SSL"):
        parse_security({"kafka.security.protocol": "TLS"})
    with pytest.raises(ValueError, match="not a security setting kclient knows"):
        parse_security({**base, "kafka.ssl.bogus": "1"})
    with pytest.raises(ValueError, match="needs org.apache.kafka.common.security.plain"):
        parse_security(
            {
                "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.jaas.config": SCRAM_JAAS,
            }
        )


def test_secrets_stay_out_of_reprs_and_errors(certs, stores, caplog):
    caplog.set_level(logging.DEBUG)
    opts = parse_read_options(
        {
            "subscribe": "t",
            "kafka.bootstrap.servers": "h:1",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-256",
            "kafka.sasl.jaas.config": SCRAM_JAAS,
            "kafka.ssl.truststore.location": str(stores.truststore_p12),
            "kafka.ssl.truststore.password": stores.password,
        },
        streaming=False,
    )
    w = parse_write_options(
        {
            "topic": "t",
            "kafka.bootstrap.servers": "h:1",
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": SCRAM_JAAS.replace(
                "scram.ScramLoginModule", "plain.PlainLoginModule"
            ),
        }
    )
    shown = [
        repr(opts),
        str(opts),
        repr(w),
        repr(opts.security.client_keys()),
        repr(w.producer_config()),
    ]
    bad_jaas = [
        SCRAM_JAAS.replace(f'password="{PASSWORD}"', f'password={PASSWORD}"'),
        SCRAM_JAAS.replace(f'password="{PASSWORD}"', f'password "{PASSWORD}"'),
        SCRAM_JAAS.replace(f'"{PASSWORD}";', f'"{PASSWORD}"'),
    ]
    for jaas in bad_jaas:
        with pytest.raises(ValueError) as err:
            parse_security(
                {
                    "kafka.security.protocol": "SASL_PLAINTEXT",
                    "kafka.sasl.mechanism": "SCRAM-SHA-256",
                    "kafka.sasl.jaas.config": jaas,
                }
            )
        shown.append(str(err.value))
    with pytest.raises(ValueError) as err:
        parse_security(
            {
                "kafka.security.protocol": "SSL",
                "kafka.ssl.keystore.location": str(stores.keystore_jks),
                "kafka.ssl.keystore.password": stores.password + "x",
            }
        )
    shown.append(str(err.value))
    shown.append(caplog.text)
    assert "jaas.config=***" in repr(opts) and "truststore.password=***" in repr(opts)
    assert "sasl.jaas.config=***" in shown[2]
    for text in shown:
        assert PASSWORD not in text and stores.password not in text, text


def test_oauthbearer_unsecured_jaas_mints_a_token():
    sec = parse_security(
        {
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "OAUTHBEARER",
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
            ' required unsecuredLoginStringClaim_sub="alice"'
            ' unsecuredLoginListClaim_scope=",read,write";',
        }
    )
    from kclient.config import load_config
    from kclient.security.sasl import SaslConfig

    cfg = SaslConfig.from_config(load_config("consumer", sec.client_keys()))
    token, expiry = cfg.token_callback("")
    import base64
    import json

    head, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    assert json.loads(base64.urlsafe_b64decode(head + "==")) == {"alg": "none"}
    assert claims["sub"] == "alice" and claims["scope"] == ["read", "write"]
    assert signature == "" and claims["exp"] == pytest.approx(expiry, abs=1)


# -- Spark over the secured listeners ----------------------------------------------------------
def roundtrip(spark, create_topic, options, tmp_path, name):
    """Write, batch read and an exactly-once streaming copy over ``options``; the values read
    back with read_committed."""
    src, out = f"{name}-src", f"{name}-out"
    for topic in (src, out):
        create_topic(topic, 2)
    rows = [(f"k{i}", f"v{i}") for i in range(200)]
    spark.createDataFrame(rows, "key STRING, value STRING").write.format("kclient").options(
        **options, topic=src
    ).mode("append").save()
    back = spark.read.format("kclient").options(**options, subscribe=src).load()
    assert sorted(bytes(r.value).decode() for r in back.collect()) == sorted(v for _, v in rows)
    q = (
        spark.readStream.format("kclient")
        .options(**options, subscribe=src, startingOffsets="earliest")
        .load()
        .select("key", "value")
        .writeStream.format("kclient")
        .options(**options, topic=out, exactlyOnce="true")
        .option("checkpointLocation", str(tmp_path / f"cp-{name}"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(180)
    assert q.exception() is None
    committed = (
        spark.read.format("kclient")
        .options(**options, subscribe=out, **{"kafka.isolation.level": "read_committed"})
        .load()
    )
    assert sorted(bytes(r.value).decode() for r in committed.collect()) == sorted(
        v for _, v in rows
    )
    return back


def test_ssl_with_a_jks_truststore(spark, secured, stores, tmp_path):
    roundtrip(spark, secured.create_topic, ssl_options(secured, stores), tmp_path, "ssl-jks")


def test_sasl_ssl_scram_with_a_jaas_line_and_no_secret_in_the_plan(
    spark, secured, certs, tmp_path, capsys
):
    df = roundtrip(spark, secured.create_topic, scram_options(secured, certs), tmp_path, "scram")
    df.explain(True)
    plan = capsys.readouterr().out
    assert "kclient" in plan.lower() or "BatchScan" in plan
    assert PASSWORD not in plan


def test_a_wrong_password_fails_without_showing_it(spark, secured, certs):
    options = scram_options(secured, certs)
    options["kafka.sasl.jaas.config"] = SCRAM_JAAS.replace(PASSWORD, "wrong-Pa55")
    with pytest.raises(Exception) as err:
        spark.read.format("kclient").options(**options, subscribe="scram-src").load().collect()
    assert "SCRAM" in str(err.value) or "uthentication" in str(err.value)
    assert "wrong-Pa55" not in str(err.value)
