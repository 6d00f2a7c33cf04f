"""Where the streaming client sends requests: URLs, request bytes, the API key."""

from __future__ import annotations

import pytest

from tuner.bench.http import Target
from tuner.errors import BenchmarkError


def test_request_bytes_and_urls() -> None:
    target = Target.from_url("http://127.0.0.1:8000/v1/")
    assert (target.host, target.port, target.prefix, target.tls) == ("127.0.0.1", 8000, "", False)
    assert target.url("/v1/models") == "http://127.0.0.1:8000/v1/models"
    request = target.post("/v1/completions", b'{"a":1}')
    assert request.startswith(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n")
    assert b"Content-Length: 7\r\n" in request and request.endswith(b'\r\n\r\n{"a":1}')
    prefixed = Target.from_url("https://example.com/api")
    assert (prefixed.port, prefixed.tls, prefixed.prefix) == (443, True, "/api")
    assert Target.from_url("localhost:1234").port == 1234
    with pytest.raises(BenchmarkError):
        Target.from_url("ftp://x")


def test_api_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert b"Authorization: Bearer sk-test\r\n" in Target.from_url("http://h:1").post("/x", b"")
