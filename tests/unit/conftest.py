"""Unit fixtures: the judge service the metric tests score with."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import pytest

from tests.support.fake_gemini import FakeGemini
from tui_eval.judge import JudgeOptions, JudgeService, create_judge_service


@pytest.fixture
async def judge(fake_gemini: FakeGemini, tmp_path: Path) -> AsyncIterator[JudgeService]:
    """A judge service on the fake Gemini server: its own cache, one quick retry, a 5 s timeout."""
    service = create_judge_service(JudgeOptions(api_key="dummy", base_url=fake_gemini.base_url,
                                                cache_dir=tmp_path / "cache", backoff_base=0.001,
                                                backoff_max=0.002, max_retries=1, timeout=5))
    yield service
    await service.aclose()
