"""Every judge metric gives the same verdicts through an OpenAI-compatible judge (the real `openai` SDK and
the fake OpenAI server) as through the Gemini judge (google-genai and the fake Gemini server) when both
judges are scripted with the same answers; only the record of who judged differs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from tests.support import fake_gemini, fake_openai
from tests.unit.test_ces_metrics import ACTUAL, TWO_TURNS, eval_set, golden
from tests.unit.test_llm_metrics import case, rubric, turn
from tui_eval.engine.runner import score_case
from tui_eval.judge import JudgeOptions, create_judge_service
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.details import JudgeCaseDetails
from tui_eval.schema.load import read_eval_case
from tui_eval.schema.model import Content, EvalCase, Invocation
from tui_eval.schema.results import EvalStatus, MetricResult

GEMINI = "gemini-2.5-flash"
OPENAI = "openai:gpt-4.1-mini"

# Scripted answers that differ per item, so that equal results mean equal verdicts item by item.
ANSWERS: dict[str, Any] = dict(
    verdict=lambda prompt: "invalid" if "Lyon" in prompt else "valid",
    rubric_verdict=lambda rubric_id: "no" if rubric_id.endswith("2") else "yes",
    sentence_label=lambda sentence: "unsupported" if "umbrella" in sentence else "supported",
    similarity=lambda prompt: 4 if "It is 21 C. Table booked." in prompt else 2,
    user_turn_valid=lambda tail: "refund" not in tail,
)


def _judged(model: str, threshold: float = 0.5, **extra: Any) -> dict[str, Any]:
    return {"threshold": threshold, "judge_model_options": {"judge_model": model, "num_samples": 3}, **extra}


def _weather_case() -> EvalCase:
    return case([
        turn("Weather in Paris?", "It is sunny in Paris. Take sunglasses.",
             calls=[("get_weather", {"city": "Paris"}, {"sky": "sunny"})]),
        turn("And in Lyon?", "It rains in Lyon. Bring an umbrella.",
             calls=[("get_weather", {"city": "Lyon"}, {"sky": "rain"})]),
    ])


def _scenario_case() -> tuple[EvalCase, list[Invocation]]:
    ev = read_eval_case({"eval_id": "returns", "conversation_scenario": {
        "starting_prompt": "Hi, how do returns work?",
        "conversation_plan": "Ask how returns work, then ask how long refunds take, then end."},
        "session_input": {"app_name": "shop", "user_id": "u", "state": {}}}, "$")
    actual = [Invocation(user_content=Content.from_text(u), final_response=Content.from_text(a, role="model"))
              for u, a in (("Hi, how do returns work?", "Within 30 days."),
                           ("How long does a refund take?", "5 to 7 business days."),
                           ("Thanks!", "You are welcome."))]
    return ev, actual


def _scored(model: str) -> list[tuple[str, Callable[[], Any]]]:
    """(what, how to score it) for every judge metric, judged by `model`."""
    rubrics = [rubric("r1", "Answers the question"), rubric("r2", "Names the source of the forecast")]
    weather = read_eval_config({"criteria": {
        "final_response_match_v2": _judged(model),
        "rubric_based_final_response_quality_v1": _judged(model, rubrics=rubrics),
        "rubric_based_tool_use_quality_v1": _judged(model, rubrics=rubrics),
        "rubric_based_multi_turn_trajectory_quality_v1": _judged(model, rubrics=rubrics),
        "hallucinations_v1": _judged(model),
        "safety_v1": _judged(model),
    }})
    ces = read_eval_config({"criteria": {"ces_semantic_similarity": _judged(model, threshold=3),
                                         "ces_hallucination": _judged(model, threshold=1.0)}})
    scenario = read_eval_config({"criteria": {"per_turn_user_simulator_quality_v1": _judged(model)}})
    ces_case = eval_set(golden(*TWO_TURNS)).eval_cases[0]
    sim_case, sim_actual = _scenario_case()
    weather_case = _weather_case()
    return [
        ("weather", lambda: (weather, weather_case, weather_case.conversation)),
        ("ces", lambda: (ces, ces_case, ACTUAL)),
        ("scenario", lambda: (scenario, sim_case, sim_actual)),
    ]


async def _run_all(model: str, tmp_path: Path) -> dict[str, MetricResult]:
    judge = create_judge_service(JudgeOptions(cache_dir=tmp_path / "cache", backoff_base=0.001, backoff_max=0.002,
                                              max_retries=1, timeout=10))
    out: dict[str, MetricResult] = {}
    try:
        for _what, make in _scored(model):
            config, ev, actual = make()
            for result in await score_case(config, ev, actual, judge=judge):
                if result.metric_name in config.criteria:
                    out[result.metric_name] = result
    finally:
        await judge.aclose()
    return out


_WHO = {"judge_provider", "judge_model", "judge_endpoint"}
_NOISE = {"latency"}  # wall time of each sample


def _comparable(value: Any) -> Any:
    """A record without the timing and without who judged (compared on their own)."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if k not in _WHO | _NOISE}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, str):
        return value.replace(OPENAI, GEMINI)  # the criterion as configured names its judge
    return value


async def test_openai_judge_equals_gemini_judge_on_every_judge_metric(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with fake_gemini.FakeGemini() as gemini, fake_openai.FakeOpenAI() as openai:
        gemini.responder = fake_gemini.judge_responder(**ANSWERS)
        openai.responder = fake_openai.judge_responder(**ANSWERS)
        monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        monkeypatch.setenv("OPENAI_BASE_URL", openai.base_url)
        by_gemini = await _run_all(GEMINI, tmp_path / "g")
        by_openai = await _run_all(OPENAI, tmp_path / "o")
        assert openai.calls == gemini.calls > 0

    assert set(by_gemini) == set(by_openai) == {
        "final_response_match_v2", "rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1",
        "rubric_based_multi_turn_trajectory_quality_v1", "hallucinations_v1", "safety_v1",
        "ces_semantic_similarity", "ces_hallucination", "per_turn_user_simulator_quality_v1"}
    # The scripted answers came through: Lyon's answer invalid, r2 failed, the umbrella sentence
    # unsupported, the second CES turn partly consistent, the refund turn off the plan.
    scores = {name: r.score for name, r in by_gemini.items()}
    assert scores["final_response_match_v2"] == 0.5
    assert scores["rubric_based_final_response_quality_v1"] == 0.5
    assert scores["rubric_based_tool_use_quality_v1"] == 0.5
    assert scores["hallucinations_v1"] == pytest.approx((2 / 2 + 1 / 2) / 2)
    assert scores["safety_v1"] == 1.0
    assert scores["ces_semantic_similarity"] == 3.0
    assert scores["per_turn_user_simulator_quality_v1"] == pytest.approx(2 / 3)
    for name in by_gemini:
        g, o = by_gemini[name], by_openai[name]
        assert o.status != EvalStatus.NOT_EVALUATED, (name, o.reason)
        assert _comparable(o.to_record()) == _comparable(g.to_record()), name
        if isinstance(o.details, JudgeCaseDetails):
            assert isinstance(g.details, JudgeCaseDetails)
            assert (o.details.judge_provider, o.details.judge_model) == ("openai", "gpt-4.1-mini"), name
            assert (g.details.judge_provider, g.details.judge_model) == ("gemini", GEMINI), name
