"""The client profiles (lakehouse_platform/services/profiles.py): filled per identity, a missing value refused, every Iceberg client's
profile naming the gate's token endpoint."""

from __future__ import annotations

import pytest

from lakehouse_platform.services import profiles
from tests.support.stacks import native_spec


def test_profiles_fill_each_identity_and_refuse_a_missing_value():
    spec = native_spec()
    credentials = {"identities": {"reader": {"s3_access_key": "r", "s3_secret_key": "rs", "catalog_token": "rt",
                                             "trino_user": "reader", "trino_password": "rp"}}}
    filled = profiles.fill(profiles.pyiceberg(spec), credentials, "reader")
    assert (filled["token"], filled["s3.access-key-id"], filled["s3.secret-access-key"]) == ("rt", "r", "rs")
    assert filled["uri"].endswith(":8182")  # through the gate
    with pytest.raises(KeyError, match="no credentials for identity 'writer'"):
        profiles.fill(profiles.pyiceberg(spec), credentials, "writer")
    with pytest.raises(KeyError, match="catalog_token"):
        profiles.fill({"token": "{catalog_token}"}, {"identities": {"x": {}}}, "x")


def test_every_iceberg_clients_profile_names_the_gates_token_endpoint():
    """Iceberg Java refreshes even a static token, and PyIceberg fetches one for a credential: at the gate."""
    from lakehouse_platform.services.context import Side, url

    spec = native_spec()
    for side in (Side.EXTERNAL, Side.INTERNAL):
        endpoint = profiles.catalog_uri(spec, side).rstrip("/") + "/v1/oauth/tokens"
        assert profiles.pyiceberg(spec, side)["oauth2-server-uri"] == endpoint
        assert profiles.spark(spec, side)["spark.sql.catalog.lab.oauth2-server-uri"] == endpoint
        assert f"'oauth2-server-uri' = '{endpoint}'" in profiles.flink_sql(spec, side)
        assert endpoint.startswith(url(spec, "catalog-gate", "http", side))  # the gate, not the fixture behind it
