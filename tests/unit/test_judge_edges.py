"""Judge edges (issue 9, item 16), through the real google-genai client against the fake Gemini server:
the cache key includes the endpoint, a judge answering some rubrics leaves the others not evaluated, and
the run's judge timeout reaches the service; plus the run's one notice of judge metrics that cannot run."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.support.evalfiles import dice_pair
from tests.support.fake_gemini import FakeGemini, json_reply
from tests.unit.test_llm_metrics import case, judged, rubric, run_metric, turn
from tui_eval.agents.replay import ReplayAgent
from tui_eval.engine.events import Event, RunNotice, RunStarted
from tui_eval.engine.plan import plan_run
from tui_eval.engine.runner import Run, RunOptions, make_judge
from tui_eval.judge import JudgeOptions, JudgeReply, JudgeService, create_judge_service
from tui_eval.report import detail_lines
from tui_eval.schema.details import RubricDetails
from tui_eval.schema.results import EvalStatus


def _service(base_url: str, cache: Path) -> JudgeService:
    return create_judge_service(JudgeOptions(api_key="dummy", base_url=base_url, cache_dir=cache,
                                             backoff_base=0.001, backoff_max=0.002, max_retries=0, timeout=5))


async def test_cache_key_includes_the_endpoint(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.default = json_reply({"answer": "one"})
    with FakeGemini() as other:
        other.default = json_reply({"answer": "two"})
        first = _service(fake_gemini.base_url, tmp_path / "cache")
        reply: JudgeReply[BaseModel] = await first.ask(model="m", contents="q")
        assert reply.text == '{"answer": "one"}' and not reply.cached
        # The same request to another endpoint is asked there, not answered from the first one's cache.
        second = _service(other.base_url, tmp_path / "cache")
        reply = await second.ask(model="m", contents="q")
        assert reply.text == '{"answer": "two"}' and not reply.cached and other.calls == 1
        # ...while the same endpoint again is a cache hit.
        again = _service(fake_gemini.base_url, tmp_path / "cache")
        assert (await again.ask(model="m", contents="q")).cached and fake_gemini.calls == 1
        for s in (first, second, again):
            await s.aclose()


async def test_vertex_project_and_location_are_part_of_the_endpoint(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "1")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p1")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    one = create_judge_service(JudgeOptions(cache_dir=tmp_path))
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    two = create_judge_service(JudgeOptions(cache_dir=tmp_path))
    assert one._endpoint() != two._endpoint()
    assert one._endpoint()["project"] == "p1" and two._endpoint()["location"] == "europe-west4"


async def test_rubrics_the_judge_did_not_answer_are_not_evaluated(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.default = json_reply({"verdicts": [
        {"rubric_id": "r1", "evidence": "", "rationale": "ok", "verdict": "no"},
        {"rubric_id": "r3", "evidence": "", "rationale": "ok", "verdict": "yes"},
    ]})
    judge = _service(fake_gemini.base_url, tmp_path / "cache")
    crit = judged(threshold=0.5, samples=1, rubrics=[rubric("r1", "A"), rubric("r2", "B"), rubric("r3", "C")])
    result = await run_metric("rubric_based_final_response_quality_v1", crit, case([turn("q", "a")]), judge)
    [inv] = result.per_invocation
    assert isinstance(inv.details, RubricDetails)
    by_id = {r.rubric_id: r for r in inv.details.rubrics}
    # r2: neither passed nor failed; the score is over the answered rubrics, as ADK's.
    assert by_id["r2"].verdict is None and by_id["r2"].score is None
    assert inv.score == 0.5 and inv.status == EvalStatus.PASSED
    assert inv.reason == "1 of 3 rubrics not evaluated (the judge gave no verdict): r2"
    assert result.reason == "turn 1: 1 of 3 rubrics not evaluated (the judge gave no verdict): r2"
    assert "rubric r2: not evaluated (the judge gave no verdict) (no votes)" in detail_lines(inv.details)
    await judge.aclose()


def test_run_judge_timeout_reaches_the_service() -> None:
    assert make_judge(RunOptions(judge_timeout=0.25)).options.timeout == 0.25
    assert make_judge(RunOptions()).options.timeout == JudgeOptions().timeout


async def test_judge_metrics_without_credentials_are_announced_once(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    config = tmp_path / "test_config.json"
    config.write_text('{"criteria": {"tool_trajectory_avg_score": 1.0, "safety_v1": 0.8,'
                      ' "final_response_match_v2": 0.5}}')
    events: list[Event] = []
    await Run(plan_run([str(golden)]), ReplayAgent(recorded), on_event=events.append,
              options=RunOptions(save=False)).execute()
    notices = [e for e in events if isinstance(e, RunNotice)]
    assert len(notices) == 1
    # safety_v1 runs on Vertex AI as in ADK: without Vertex settings it is announced with that reason
    # (one group per reason, in the order the config names them).
    assert notices[0].message == (
        "1 metric will not be evaluated: no Vertex AI settings: set GOOGLE_CLOUD_PROJECT and "
        "GOOGLE_CLOUD_LOCATION and run `gcloud auth application-default login`; "
        "1 metric will not be evaluated: no judge credentials")
    assert set(notices[0].metrics) == {"safety_v1", "final_response_match_v2"}
    # Before any case: right after the run starts.
    assert isinstance(events[0], RunStarted) and events[1] is notices[0]


async def test_no_notice_when_every_metric_can_run(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    events: list[Event] = []
    await Run(plan_run([str(golden)]), ReplayAgent(recorded), on_event=events.append,
              options=RunOptions(save=False)).execute()
    assert not any(isinstance(e, RunNotice) for e in events)
