"""Shared fixtures: a local fake Gemini server, and an environment that can never reach the internet."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

# `from tests.support.fake_gemini import ...` must work however pytest was started (the rootdir is not
# necessarily on sys.path with the `pytest` script).
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.support.fake_gemini import FakeGemini  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402

# Credentials and endpoints that would let a test talk to a real model.
_LLM_ENV = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@pytest.fixture(autouse=True)
def _no_real_llm(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Remove LLM credentials for every test (a test that needs them sets them itself), and point the
    judge cache at a fresh temporary folder so no test reads or fills the user's cache."""
    for name in _LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TUI_EVAL_CACHE_DIR", str(tmp_path_factory.mktemp("judge-cache")))


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A started fake Gemini server on 127.0.0.1 (random port), stopped after the test."""
    server = FakeGemini().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def gemini_env(fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> FakeGemini:
    """The fake server plus GOOGLE_API_KEY=dummy and GOOGLE_GEMINI_BASE_URL pointing at it, so anything
    that builds its own google-genai client (ADK agents, the judge service) talks to the fake."""
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    return fake_gemini


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started fake OpenAI-compatible server on 127.0.0.1 (random port), stopped after the test."""
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def openai_env(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """The fake OpenAI-compatible server plus OPENAI_API_KEY=dummy and OPENAI_BASE_URL pointing at it."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    return fake_openai
