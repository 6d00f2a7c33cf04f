"""tuner/server_http.py and its users, without a socket: Host headers, the key, notices."""

from __future__ import annotations

import pytest

from tuner.bench.http import Target
from tuner.server_http import auth_headers, host_header, server_client, url_host
from tuner.telemetry.prom import ScrapeFailures


def test_an_ipv6_host_is_bracketed_in_urls_and_host_headers() -> None:
    assert host_header("::1", 8000) == "[::1]:8000"
    assert host_header("127.0.0.1", 8000) == "127.0.0.1:8000"
    assert url_host("[::1]") == "[::1]"  # already bracketed: left alone
    target = Target.from_url("http://[::1]:8000/v1")
    assert target.host == "::1" and target.authority == "[::1]:8000"
    assert target.url("/v1/models") == "http://[::1]:8000/v1/models"
    assert target.post("/v1/completions", b"{}").startswith(
        b"POST /v1/completions HTTP/1.1\r\nHost: [::1]:8000\r\n"
    )


def test_the_key_goes_on_every_client_and_no_proxy_is_trusted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert auth_headers() == {}
    with server_client() as client:
        assert "Authorization" not in client.headers
        assert client.trust_env is False
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with server_client() as client:
        assert client.headers["Authorization"] == "Bearer sk-test"
    assert b"Authorization: Bearer sk-test\r\n" in Target.from_url("http://h:1").post("/x", b"")


def test_scrape_failures_make_one_notice_with_a_count() -> None:
    failures = ScrapeFailures()
    assert failures.notice() is None
    failures.add("cannot scrape http://h:1/metrics: it answered HTTP 404")
    assert failures.notice() == (
        "cannot scrape http://h:1/metrics: it answered HTTP 404; the server's own figures "
        "(preemptions, KV cache use, queue) are missing where a scrape failed"
    )
    failures.add("cannot scrape http://h:1/metrics: ConnectError: refused")
    notice = failures.notice()
    assert notice is not None
    assert notice.startswith("cannot scrape http://h:1/metrics: it answered HTTP 404 (2 failed")
    assert notice.count("cannot scrape") == 1
