"""Configuration checks and URL templates."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bfsql_jsonld import JsonLdConfig
from bfsql_jsonld.urls import UrlTemplate, encode, same_origin


def test_templates_are_checked_at_start_up():
    with pytest.raises(ValidationError, match=r"entity_url '/e/\{ident\}': missing \{id\}; unknown \{ident\}"):
        JsonLdConfig(base_url="http://api.test", entity_url="/e/{ident}")
    with pytest.raises(ValidationError, match="may not stand in the host"):
        JsonLdConfig(base_url="http://api.test", schema_url="/s", search_url="http://{q}.test/x?q={q}")
    with pytest.raises(ValidationError, match="http"):
        JsonLdConfig(base_url="ftp://api.test")


def test_auth_options_and_context_map_shape():
    with pytest.raises(ValidationError, match="Name: value"):
        JsonLdConfig(base_url="http://api.test", auth_header="Bearer abc")
    with pytest.raises(ValidationError, match="URL=FILE"):
        JsonLdConfig(base_url="http://api.test", context_map=["http://ctx.test/only-a-url"])
    config = JsonLdConfig(base_url="http://api.test/", auth_header="X-Key:  k1", api_token="t2")
    assert config.auth_headers() == {"Authorization": "Bearer t2", "X-Key": "k1"}
    assert "t2" not in repr(config) and "k1" not in repr(config)
    assert config.base_url == "http://api.test"


def test_values_are_encoded_as_one_segment_or_value():
    template = UrlTemplate(
        "http://api.test/v1/", "/things/{id}/rel?dir=out&types={types}", "t", {"id"}, {"id", "types"}
    )
    assert template.expand({"id": "a/b?c#d%e f", "types": None}) == (
        "http://api.test/v1/things/a%2Fb%3Fc%23d%25e%20f/rel?dir=out"
    )
    assert template.expand({"id": "é", "types": ["A", "B&C"]}) == (
        "http://api.test/v1/things/%C3%A9/rel?dir=out&types=A&types=B%26C"
    )
    assert template.expand({"id": "..", "types": ["A", "B"]}, "|") == (
        "http://api.test/v1/things/%2E%2E/rel?dir=out&types=A%7CB"
    )
    assert template.expand({"id": "x", "types": []}) == "http://api.test/v1/things/x/rel?dir=out"
    assert encode(".") == "%2E"


def test_entity_urls_map_back_to_ids():
    template = UrlTemplate("http://api.test", "/entities/{id}", "entity_url", {"id"})
    assert template.match_id("http://api.test/entities/FPLX%3ARAF") == "FPLX:RAF"
    assert template.match_id("http://api.test/entities/a/b") is None
    assert template.match_id("http://other.test/entities/x") is None
    assert UrlTemplate("http://api.test", "/e?id={id}", "entity_url", {"id"}).match_id("http://api.test/e?id=x") is None


def test_same_origin():
    assert same_origin("http://a.test/x", "http://A.test:80/y")
    assert not same_origin("http://a.test/x", "https://a.test/x")
    assert not same_origin("http://a.test:8080/", "http://a.test/")
