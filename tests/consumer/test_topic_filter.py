import pytest

from kclient.consumer import Blacklist, Whitelist
from kclient.consumer.topic_filter import filter_for_pattern


def test_whitelist_full_match_and_commas():
    w = Whitelist("ev.*, logs")
    assert w.regex == "ev.*|logs"
    assert w.is_topic_allowed("events") and w.is_topic_allowed("logs")
    assert not w.is_topic_allowed("logs2")  # full match, not search
    assert not w.is_topic_allowed("my-events")
    assert w.filter(["logs", "x", "events", "__consumer_offsets"]) == ["events", "logs"]


def test_quotes_from_property_files_are_dropped():
    assert Whitelist('"a.*"').regex == "a.*"
    assert Whitelist("'a,b'").regex == "a|b"


def test_blacklist():
    b = Blacklist("tmp.*,__.*")
    assert b.is_topic_allowed("events")
    assert not b.is_topic_allowed("tmp1")
    assert not b.is_topic_allowed("__consumer_offsets")


def test_internal_topics():
    w = Whitelist(".*")
    assert not w.is_topic_allowed("__consumer_offsets")
    assert w.is_topic_allowed("__consumer_offsets", exclude_internal_topics=False)


def test_invalid_regex():
    with pytest.raises(ValueError, match="invalid regex"):
        Whitelist("a(")


def test_patterns():
    assert Whitelist("a").pattern == "white_list" and Blacklist("a").pattern == "black_list"
    assert filter_for_pattern("white_list", "a") == Whitelist("a")
    assert filter_for_pattern("black_list", "a") == Blacklist("a")
