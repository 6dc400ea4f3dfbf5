"""Unit fixtures: the judge service the metric tests score with, and the fake Vertex AI evaluation service."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest

from tests.support.fake_gemini import FakeGemini
from tests.support.fake_vertex import FakeVertex
from tui_eval.judge import JudgeOptions, JudgeService, create_judge_service


@pytest.fixture
async def judge(fake_gemini: FakeGemini, tmp_path: Path) -> AsyncIterator[JudgeService]:
    """A judge service on the fake Gemini server: its own cache, one quick retry, a 5 s timeout."""
    service = create_judge_service(JudgeOptions(api_key="dummy", base_url=fake_gemini.base_url,
                                                cache_dir=tmp_path / "cache", backoff_base=0.001,
                                                backoff_max=0.002, max_retries=1, timeout=5))
    yield service
    await service.aclose()


@pytest.fixture
def vertex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVertex]:
    """A fake Vertex AI evaluation service, and the project, location, URL and credentials that reach it."""
    server = FakeVertex().start()
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    monkeypatch.setenv("TUI_EVAL_VERTEX_EVAL_URL", server.base_url)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(server.credentials_file(tmp_path)))
    try:
        yield server
    finally:
        server.stop()
