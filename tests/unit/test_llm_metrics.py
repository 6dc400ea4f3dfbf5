"""The LLM-judged metrics end to end through the judge service, the real google-genai client and the fake
Gemini server: voting, dropped samples, rubric routing, hallucination labels, safety, details."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

from tests.support.evalfiles import turns_of
from tests.support.fake_gemini import FakeGemini, RecordedRequest, Reply, error_reply, json_reply, raw_reply
from tests.support.metric_helpers import details_as
from tui_eval.judge import JudgeOptions, JudgeService, create_judge_service
from tui_eval.metrics import get_metric
from tui_eval.schema.details import (
    HallucinationDetails,
    JudgeCaseDetails,
    ResponseMatchJudgeDetails,
    RubricDetails,
    RubricScore,
    SafetyDetails,
    Votes,
)
from tui_eval.metrics.base import MetricInput
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.load import read_eval_case
from tui_eval.schema.model import EvalCase
from tui_eval.schema.results import EvalStatus, MetricResult

APP = {
    "agent_details": {
        "weather_agent": {
            "name": "weather_agent",
            "instructions": "You answer weather questions. Always use get_weather.",
            "tool_declarations": [{"name": "get_weather", "description": "Weather for a city",
                                   "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}}],
        }
    }
}


def turn(prompt: str, answer: str | None, *, calls: Sequence[tuple[str, dict, Any]] = (), rubrics: list | None = None,
         events: list[dict] | None = None, app: dict | None = APP) -> dict[str, Any]:
    inv: dict[str, Any] = {
        "invocation_id": prompt[:8],
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]} if answer is not None else None,
        "creation_timestamp": 1700000000.0,
    }
    if events is not None:
        inv["intermediate_data"] = {"invocation_events": events}
    else:
        inv["intermediate_data"] = {
            "tool_uses": [{"id": f"c{i}", "name": n, "args": a} for i, (n, a, _r) in enumerate(calls)],
            "tool_responses": [{"id": f"c{i}", "name": n, "response": r} for i, (n, _a, r) in enumerate(calls)],
            "intermediate_responses": [],
        }
    if rubrics is not None:
        inv["rubrics"] = rubrics
    if app is not None:
        inv["app_details"] = app
    return inv


def rubric(rid: str, text: str, type_: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"rubric_id": rid, "rubric_content": {"text_property": text}}
    if type_:
        out["type"] = type_
    return out


def case(turns: list[dict], rubrics: list | None = None) -> EvalCase:
    data: dict[str, Any] = {"eval_id": "c1", "conversation": turns,
                            "session_input": {"app_name": "app", "user_id": "u", "state": {}}}
    if rubrics is not None:
        data["rubrics"] = rubrics
    return read_eval_case(data, "$")


async def run_metric(name: str, criterion: Any, ev_case: EvalCase, judge: JudgeService,
                     actual: list | None = None, progress: Callable[[int], None] | None = None) -> MetricResult:
    config = read_eval_config({"criteria": {name: criterion}})
    assert not config.warnings, config.warnings
    spec = get_metric(name)
    assert spec is not None and spec.needs_judge
    inp = MetricInput(criterion=config.criteria[name], case=ev_case,
                      actual=actual if actual is not None else turns_of(ev_case),
                      expected=turns_of(ev_case), config=config, judge=judge,
                      progress=progress or (lambda _i: None))
    result = spec.evaluate(inp)
    return await result if not isinstance(result, MetricResult) else result


def judged(threshold: float = 0.5, samples: int = 5, **extra: Any) -> dict[str, Any]:
    return {"threshold": threshold, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": samples},
            **extra}


def sequence(*replies: Reply) -> Callable[[RecordedRequest], Reply]:
    """A responder that answers in order (whatever order the concurrent samples arrive in)."""
    queue = list(replies)
    return lambda _req: queue.pop(0)


def adk_validate(result: MetricResult) -> None:
    """The result's ADK dicts must be accepted by google-adk's own models."""
    from google.adk.evaluation.eval_metrics import EvalMetricResult

    EvalMetricResult.model_validate(result.adk_metric())
    for inv in result.per_invocation:
        EvalMetricResult.model_validate(result.adk_metric(inv))


# -- final_response_match_v2 ----------------------------------------------------------------------

def frm(verdict: str, why: str = "because") -> Reply:
    return json_reply({"reasoning": why, "verdict": verdict})


async def test_frm_majority_vote_and_details(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.responder = sequence(frm("valid", "a"), frm("invalid", "b"), frm("valid", "c"), frm("valid", "d"),
                                     frm("valid", "e"))
    ev = case([turn("Weather in Paris?", "Sunny, 20C.")])
    final = turns_of(ev)[0].final_response
    assert final is not None and final.parts is not None
    final.parts[0].text = "It is sunny and 20C in Paris."
    expected = turns_of(case([turn("Weather in Paris?", "Sunny, 20C.")]))
    config = read_eval_config({"criteria": {"final_response_match_v2": judged()}})
    inp = MetricInput(config.criteria["final_response_match_v2"], ev, turns_of(ev), expected, config, judge)
    spec = get_metric("final_response_match_v2")
    assert spec is not None
    scored = spec.evaluate(inp)
    result = await scored if not isinstance(scored, MetricResult) else scored
    assert result.status == EvalStatus.PASSED and result.score == 1.0
    [inv] = result.per_invocation
    assert isinstance(inv.details, ResponseMatchJudgeDetails)
    assert inv.details.votes == Votes(yes=4, no=1)  # yes = valid
    assert inv.details.verdict == "valid"
    assert len(inv.details.samples) == 5 and {s.verdict for s in inv.details.samples} == {"valid", "invalid"}
    assert inv.details.token_usage.total_tokens > 0
    assert fake_gemini.calls == 5
    prompt = fake_gemini.requests[0].prompt_text
    assert "Weather in Paris?" in prompt and "It is sunny and 20C in Paris." in prompt and "Sunny, 20C." in prompt
    assert fake_gemini.requests[0].generation_config["responseMimeType"] == "application/json"
    adk_validate(result)


async def test_frm_tie_is_negative(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.responder = sequence(frm("valid"), frm("invalid"), frm("valid"), frm("invalid"))
    result = await run_metric("final_response_match_v2", judged(samples=4), case([turn("q", "a")]), judge)
    assert result.score == 0.0 and result.status == EvalStatus.FAILED
    assert result.per_invocation[0].details == ResponseMatchJudgeDetails.model_validate(
        details_as(result.per_invocation[0], ResponseMatchJudgeDetails).model_dump())  # round-trips
    assert result.per_invocation[0].details.votes == Votes(yes=2, no=2)


async def test_unparseable_samples_are_dropped(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.responder = sequence(
        raw_reply("{oops"),  # the HTTP body itself is not JSON
        json_reply("not an object"),  # JSON, but not the schema
        Reply(body={"candidates": [{"content": {"role": "model", "parts": [{"text": "plain prose"}]}}]}),
        frm("invalid"),
        json_reply({"reasoning": "r", "verdict": "maybe"}),
    )
    result = await run_metric("final_response_match_v2", judged(), case([turn("q", "a")]), judge)
    [inv] = result.per_invocation
    assert isinstance(inv.details, ResponseMatchJudgeDetails)
    assert inv.details.votes == Votes(yes=0, no=1)
    assert result.score == 0.0 and inv.status == EvalStatus.FAILED
    assert len(inv.details.errors) == 4 and inv.details.dropped_samples == 4
    assert any("invalid JSON" in e for e in inv.details.errors)
    assert any("schema" in e for e in inv.details.errors)


async def test_all_samples_dropped_is_not_evaluated(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.default = error_reply(503)
    result = await run_metric("final_response_match_v2", judged(samples=3), case([turn("q", "a")]), judge)
    assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
    [inv] = result.per_invocation
    assert inv.status == EvalStatus.NOT_EVALUATED
    assert inv.reason == "judge failed: 503 UNAVAILABLE after 1 retry"
    assert result.reason == inv.reason
    assert fake_gemini.calls == 6  # 3 samples x (1 try + 1 retry)
    adk_validate(result)


async def test_timeout_retry_then_not_evaluated(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.default = Reply(body=frm("valid").body, delay=1.0)
    judge = create_judge_service(JudgeOptions(api_key="dummy", base_url=fake_gemini.base_url, cache_dir=tmp_path,
                                              timeout=0.1, max_retries=1, backoff_base=0.001))
    result = await run_metric("final_response_match_v2", judged(samples=2), case([turn("q", "a")]), judge)
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.per_invocation[0].reason == "judge failed: timeout after 0.1s after 1 retry"
    assert fake_gemini.calls == 4


async def test_permanent_error_reason(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.default = error_reply(400, "model gemini-9 not found")
    result = await run_metric("final_response_match_v2", judged(samples=2), case([turn("q", "a")]), judge)
    assert result.per_invocation[0].reason == "judge failed: 400 INVALID_ARGUMENT: model gemini-9 not found"
    assert fake_gemini.calls == 2


async def test_case_score_is_mean_of_evaluated_and_progress(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    def responder(req: RecordedRequest) -> Reply:
        if "first question" in req.prompt_text:
            return frm("valid")
        if "second question" in req.prompt_text:
            return frm("invalid")
        return error_reply(500)

    fake_gemini.responder = responder
    ev = case([turn("first question", "a"), turn("second question", "b"), turn("third question", "c")])
    seen: list[int] = []
    result = await run_metric("final_response_match_v2", judged(samples=3), ev, judge, progress=seen.append)
    assert [r.score for r in result.per_invocation] == [1.0, 0.0, None]
    assert result.per_invocation[2].status == EvalStatus.NOT_EVALUATED
    assert result.score == 0.5 and result.status == EvalStatus.PASSED
    assert sorted(seen) == [0, 1, 2]
    assert isinstance(result.details, JudgeCaseDetails) and result.details.evaluated_invocations == 2


async def test_rerun_uses_cache(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.default = frm("valid")
    ev = case([turn("q1", "a1"), turn("q2", "a2")])

    def service() -> JudgeService:
        return create_judge_service(JudgeOptions(api_key="dummy", base_url=fake_gemini.base_url,
                                                 cache_dir=tmp_path / "c"))

    first = await run_metric("final_response_match_v2", judged(), ev, service())
    assert fake_gemini.calls == 10
    again = service()
    second = await run_metric("final_response_match_v2", judged(), ev, again)
    assert fake_gemini.calls == 10 and again.stats.cache_hits == 10
    assert second.score == first.score == 1.0
    assert all(s.cached for s in details_as(second.per_invocation[0], ResponseMatchJudgeDetails).samples)


async def test_judge_model_and_config_reach_the_request(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.default = frm("valid")
    crit = {"threshold": 1.0, "judge_model_options": {"judge_model": "gemini-2.0-pro", "num_samples": 1,
                                                      "judge_model_config": {"temperature": 0.25}}}
    await run_metric("final_response_match_v2", crit, case([turn("q", "a")]), judge)
    [req] = fake_gemini.requests
    assert req.model == "gemini-2.0-pro" and req.generation_config["temperature"] == 0.25


async def test_markup_in_judge_text_is_kept_literally(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    nasty = "[bold red]x[/] [/oops] \x1b[2J\x1b[31m"
    fake_gemini.default = frm("valid", nasty)
    result = await run_metric("final_response_match_v2", judged(samples=1), case([turn("q", "a")]), judge)
    details = details_as(result.per_invocation[0], ResponseMatchJudgeDetails)
    assert details.rationale == nasty and details.samples[0].rationale == nasty
    # and it survives our JSON record round trip unchanged
    assert json.loads(json.dumps(result.to_record()))["per_invocation"][0]["details"]["rationale"] == nasty


# -- rubrics --------------------------------------------------------------------------------------

_ID = re.compile(r"\[id: ([^\]]+)\]")


def rubric_responder(verdicts: Callable[[str, int], str]) -> Callable[[RecordedRequest], Reply]:
    """Answers every rubric listed in the prompt; `verdicts(rubric_id, call_number)` decides yes/no."""
    calls = {"n": 0}

    def respond(req: RecordedRequest) -> Reply:
        n = calls["n"]
        calls["n"] += 1
        props = req.prompt_text.split("<properties>")[-1]
        ids = _ID.findall(props)
        return json_reply({"verdicts": [{"rubric_id": rid, "evidence": "e", "rationale": f"{rid} rationale {n}",
                                         "verdict": verdicts(rid, n)} for rid in ids]})

    return respond


def rubric_ids_in(req: RecordedRequest) -> list[str]:
    return _ID.findall(req.prompt_text.split("<properties>")[-1])


async def test_rubric_routing_by_type(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.responder = rubric_responder(lambda rid, n: "yes")
    ev = case(
        [turn("Weather in Paris?", "Sunny.", calls=[("get_weather", {"city": "Paris"}, {"sky": "sunny"})],
              rubrics=[rubric("inv_final", "Mentions the sky", "FINAL_RESPONSE_QUALITY"),
                       rubric("inv_tool", "Calls get_weather once", "TOOL_USE_QUALITY")])],
        rubrics=[rubric("case_final", "Is concise", "FINAL_RESPONSE_QUALITY"),
                 rubric("case_tool", "Uses the city", "TOOL_USE_QUALITY"),
                 rubric("case_untyped", "Has no type")],
    )
    crit = judged(samples=1, rubrics=[rubric("crit", "Answers the question")])
    final = await run_metric("rubric_based_final_response_quality_v1", crit, ev, judge)
    assert rubric_ids_in(fake_gemini.requests[-1]) == ["crit", "case_final", "inv_final"]
    tool = await run_metric("rubric_based_tool_use_quality_v1", crit, ev, judge)
    assert rubric_ids_in(fake_gemini.requests[-1]) == ["crit", "case_tool", "inv_tool"]
    assert final.score == tool.score == 1.0
    # The judge sees the context each metric is defined to see.
    final_prompt, tool_prompt = fake_gemini.requests[0].prompt_text, fake_gemini.requests[1].prompt_text
    for prompt in (final_prompt, tool_prompt):
        assert "get_weather" in prompt and '"sky": "sunny"' in prompt and "Weather in Paris?" in prompt
    assert "Always use get_weather" in final_prompt and "Sunny." in final_prompt
    assert "Always use get_weather" not in tool_prompt
    adk_validate(final)


async def test_rubric_votes_scores_and_rubric_scores(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    # r1: yes on 3 of 5 samples; r2: yes on 2 of 5 -> r1 yes, r2 no.
    fake_gemini.responder = rubric_responder(lambda rid, n: "yes" if (rid == "r1" and n < 3) or
                                             (rid == "r2" and n < 2) else "no")
    crit = judged(samples=5, rubrics=[rubric("r1", "Is polite"), rubric("r2", "Is brief")])
    result = await run_metric("rubric_based_final_response_quality_v1", crit, case([turn("q", "a")]), judge)
    [inv] = result.per_invocation
    assert isinstance(inv.details, RubricDetails)
    by_id = {r.rubric_id: r for r in inv.details.rubrics}
    assert by_id["r1"].votes == Votes(yes=3, no=2) and by_id["r1"].verdict == "yes"
    assert by_id["r2"].votes == Votes(yes=2, no=3) and by_id["r2"].verdict == "no"
    assert by_id["r1"].text == "Is polite" and len(by_id["r1"].samples) == 5
    assert inv.score == 0.5
    assert inv.details.rubric_scores == [
        RubricScore(rubric_id="r1", rationale=by_id["r1"].rationale, score=1.0),
        RubricScore(rubric_id="r2", rationale=by_id["r2"].rationale, score=0.0),
    ]
    assert result.adk_metric(inv)["details"]["rubric_scores"][0]["rubric_id"] == "r1"
    assert result.adk_metric(inv)["details"]["rubric_scores"][1] == {
        "rubric_id": "r2", "rationale": by_id["r2"].rationale, "score": 0.0}
    assert isinstance(result.details, JudgeCaseDetails)
    assert {r.rubric_id: r.score for r in result.details.rubric_scores} == {"r1": 1.0, "r2": 0.0}
    adk_validate(result)


async def test_rubric_tie_negative_and_case_mean(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    # Turn 1: r1 gets yes/no (tie -> no). Turn 2: r1 yes/yes. Case = mean of all rubric scores.
    def respond(req: RecordedRequest) -> Reply:
        first_turn = "turn one" in req.prompt_text
        respond.n[first_turn] += 1  # type: ignore[attr-defined]
        verdict = ("yes" if respond.n[first_turn] % 2 else "no") if first_turn else "yes"  # type: ignore[attr-defined]
        return json_reply({"verdicts": [{"rubric_id": rid, "evidence": "", "rationale": "r", "verdict": verdict}
                                        for rid in rubric_ids_in(req)]})

    respond.n = {True: 0, False: 0}  # type: ignore[attr-defined]
    fake_gemini.responder = respond
    ev = case([turn("turn one", "a"), turn("turn two", "b")],
              rubrics=[rubric("extra", "Second rubric, only here", "FINAL_RESPONSE_QUALITY")])
    crit = judged(samples=2, rubrics=[rubric("r1", "Is correct")])
    result = await run_metric("rubric_based_final_response_quality_v1", crit, ev, judge)
    one, two = result.per_invocation
    assert isinstance(one.details, RubricDetails)
    assert [r.verdict for r in one.details.rubrics] == ["no", "no"]
    assert one.score == 0.0 and two.score == 1.0
    assert result.score == 0.5  # (0 + 0 + 1 + 1) / 4


async def test_rubric_partial_and_unknown_ids(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.default = json_reply({"verdicts": [
        {"rubric_id": "[id: r1]", "evidence": "", "rationale": "ok", "verdict": "yes"},
        {"rubric_id": "made_up", "evidence": "", "rationale": "?", "verdict": "no"},
    ]})
    crit = judged(samples=1, rubrics=[rubric("r1", "A"), rubric("r2", "B")])
    result = await run_metric("rubric_based_final_response_quality_v1", crit, case([turn("q", "a")]), judge)
    [inv] = result.per_invocation
    assert inv.score == 1.0  # r2 got no vote, so it is not scored
    assert isinstance(inv.details, RubricDetails)
    assert [r.score for r in inv.details.rubric_scores] == [1.0, None]
    assert inv.details.unmatched_rubric_ids == ["made_up"]
    adk_validate(result)


async def test_rubric_without_rubrics_or_conflicting(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    result = await run_metric("rubric_based_tool_use_quality_v1", judged(samples=1), case([turn("q", "a")]), judge)
    assert result.status == EvalStatus.NOT_EVALUATED and "no rubrics" in (result.reason or "")
    ev = case([turn("q", "a")], rubrics=[rubric("r1", "Other text", "TOOL_USE_QUALITY")])
    crit = judged(samples=1, rubrics=[rubric("r1", "Some text")])
    result = await run_metric("rubric_based_tool_use_quality_v1", crit, ev, judge)
    assert result.status == EvalStatus.NOT_EVALUATED and "'r1'" in (result.reason or "")
    assert fake_gemini.calls == 0


async def test_rubric_all_dropped(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.default = raw_reply("<html>502 Bad Gateway</html>")
    crit = judged(samples=2, rubrics=[rubric("r1", "A")])
    result = await run_metric("rubric_based_final_response_quality_v1", crit, case([turn("q", "a")]), judge)
    assert result.status == EvalStatus.NOT_EVALUATED
    assert (result.per_invocation[0].reason or "").startswith("judge failed: invalid JSON")


# -- hallucinations_v1 ----------------------------------------------------------------------------

def hallu_responder(segments: dict[str, list[str]], labels: Callable[[str, int, int], str]):
    """Segmentation: split per `segments[text]`. Labelling: `labels(sentence, index, call_number)`."""
    calls = {"n": 0}

    def respond(req: RecordedRequest) -> Reply:
        text = req.prompt_text
        if "Split the response below" in text:
            response = text.split("<response>\n", 1)[1].split("\n</response>", 1)[0]
            return json_reply({"sentences": segments[response]})
        n = calls["n"]
        calls["n"] += 1
        block = text.split("<sentences>\n", 1)[1].split("\n</sentences>", 1)[0]
        out = []
        for line in block.splitlines():
            num, sentence = line.split(". ", 1)
            label = labels(sentence, int(num), n)
            out.append({"index": int(num), "sentence": sentence, "rationale": f"why {label}", "label": label,
                        "supporting_excerpt": "ctx says so" if label in ("supported", "disputed") else None,
                        "contradicting_excerpt": "ctx says otherwise" if label in ("contradictory", "disputed")
                        else None})
        return json_reply({"sentences": out})

    return respond


async def test_hallucination_labels_score_and_details(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    answer = "Paris is sunny. It is 20C. Enjoy! It will snow."
    sentences = ["Paris is sunny.", "It is 20C.", "Enjoy!", "It will snow."]
    fixed = {"Paris is sunny.": "supported", "It is 20C.": "unsupported", "Enjoy!": "not_applicable",
             "It will snow.": "contradictory"}
    fake_gemini.responder = hallu_responder({answer: sentences}, lambda s, i, n: fixed[s])
    ev = case([turn("Weather in Paris?", answer, calls=[("get_weather", {"city": "Paris"}, {"sky": "sunny"})])])
    result = await run_metric("hallucinations_v1", judged(samples=3), ev, judge)
    assert result.score == 0.5 and result.status == EvalStatus.PASSED
    [inv] = result.per_invocation
    assert isinstance(inv.details, HallucinationDetails)
    got = details_as(inv, HallucinationDetails).sentences
    assert [s.text for s in got] == sentences
    assert [s.label for s in got] == ["supported", "unsupported", "not_applicable", "contradictory"]
    assert got[0].excerpt == "ctx says so" and got[3].excerpt == "ctx says otherwise"
    assert got[1].rationale == "why unsupported" and got[1].excerpt is None
    assert all(s.source == "final" for s in got)
    assert got[0].votes == {"supported": 3}
    assert got[1].span == (answer.index("It is 20C."), answer.index("It is 20C.") + len("It is 20C."))
    assert inv.details.labels == {"supported": 1, "unsupported": 1, "not_applicable": 1, "contradictory": 1}
    assert fake_gemini.calls == 4  # 1 segmentation + 3 labelling samples
    label_prompt = next(r.prompt_text for r in fake_gemini.requests if "<context>" in r.prompt_text)
    for needle in ("Always use get_weather", "Weather in Paris?", '"city": "Paris"', '"sky": "sunny"',
                   "Weather for a city"):
        assert needle in label_prompt
    adk_validate(result)


async def test_hallucination_sentence_vote_tie_negative(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    answer = "A. B."
    # Sample 0 and 2: both supported; samples 1 and 3: A unsupported, B disputed.
    fake_gemini.responder = hallu_responder(
        {answer: ["A.", "B."]},
        lambda s, i, n: "supported" if n % 2 == 0 else ("unsupported" if s == "A." else "disputed"))
    result = await run_metric("hallucinations_v1", judged(samples=4), case([turn("q", answer)]), judge)
    sentences = details_as(result.per_invocation[0], HallucinationDetails).sentences
    assert sentences[0].votes == {"supported": 2, "unsupported": 2} and sentences[0].label == "unsupported"
    assert sentences[1].label == "disputed"
    assert sentences[1].excerpt == "ctx says so / ctx says otherwise"
    assert result.score == 0.0


async def test_hallucination_intermediate_responses(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    events = [
        {"author": "weather_agent", "content": {"role": "model", "parts": [{"text": "Let me look that up."}]}},
        {"author": "weather_agent", "content": {"role": "model", "parts": [
            {"function_call": {"id": "c1", "name": "get_weather", "args": {"city": "Oslo"}}}]}},
        {"author": "weather_agent", "content": {"role": "user", "parts": [
            {"function_response": {"id": "c1", "name": "get_weather", "response": {"sky": "SECRET_SNOW"}}}]}},
        {"author": "weather_agent", "content": {"role": "model", "parts": [{"text": "It snows in Oslo."}]}},
    ]
    final = "Expect snow in Oslo."
    segments = {"Let me look that up.": ["Let me look that up."], "It snows in Oslo.": ["It snows in Oslo."],
                final: [final]}

    def labels(sentence: str, i: int, n: int) -> str:
        return {"Let me look that up.": "not_applicable", "It snows in Oslo.": "supported"}.get(sentence, "unsupported")

    fake_gemini.responder = hallu_responder(segments, labels)
    ev = case([turn("Oslo weather?", final, events=events)])
    result = await run_metric("hallucinations_v1", judged(samples=1, evaluate_intermediate_nl_responses=True), ev,
                              judge)
    [inv] = result.per_invocation
    got = details_as(inv, HallucinationDetails).sentences
    assert [(s.source, s.label) for s in got] == [
        ("intermediate", "not_applicable"), ("intermediate", "supported"), ("final", "unsupported")]
    assert inv.score == pytest.approx(2 / 3)  # mean of the three responses' scores (1, 1, 0)
    contexts = {r.prompt_text.split("<sentences>\n")[1].split("\n")[0]: r.prompt_text
                for r in fake_gemini.requests if "<context>" in r.prompt_text}
    # Each intermediate text is checked against the events before it only.
    assert "SECRET_SNOW" not in contexts["1. Let me look that up."]
    assert "SECRET_SNOW" in contexts["1. It snows in Oslo."]
    assert "Let me look that up." in contexts["1. It snows in Oslo."]
    # Without the flag only the final response is checked.
    fake_gemini.requests.clear()
    result = await run_metric("hallucinations_v1", judged(samples=1), ev, judge)
    assert [s.source for s in details_as(result.per_invocation[0], HallucinationDetails).sentences] == ["final"]


async def test_hallucination_nothing_to_check_and_segmentation_failure(fake_gemini: FakeGemini,
                                                                      judge: JudgeService) -> None:
    result = await run_metric("hallucinations_v1", judged(samples=1), case([turn("q", None)]), judge)
    assert result.status == EvalStatus.NOT_EVALUATED and "no natural-language response" in (result.reason or "")
    fake_gemini.default = error_reply(500)
    result = await run_metric("hallucinations_v1", judged(samples=1), case([turn("q", "Some answer.")]), judge)
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == "judge failed: segmentation: 500 INTERNAL after 1 retry"


# -- safety_v1 ------------------------------------------------------------------------------------
# safety_v1 runs on Vertex AI as ADK's does (tests/unit/test_vertex*.py); a criterion that names
# judge_model_options asks for tui-eval's Gemini judge, tested here.

def safety(verdict: str, policies: list[str] | None = None) -> Reply:
    return json_reply({"rationale": f"looks {verdict}", "violated_policies": policies or [], "verdict": verdict})


async def run_safety(criterion: Any, ev_case: EvalCase, judge: JudgeService) -> MetricResult:
    """run_metric for safety_v1, whose spec does not always need the judge (Vertex AI is its default)."""
    config = read_eval_config({"criteria": {"safety_v1": criterion}})
    assert not config.warnings, config.warnings
    spec = get_metric("safety_v1")
    assert spec is not None and not spec.needs_judge
    inp = MetricInput(criterion=config.criteria["safety_v1"], case=ev_case, actual=turns_of(ev_case),
                      expected=ev_case.conversation, config=config, judge=judge)
    result = spec.evaluate(inp)
    return await result if not isinstance(result, MetricResult) else result


async def test_safety_without_judge_options_runs_on_vertex_not_the_gemini_judge(
        fake_gemini: FakeGemini, judge: JudgeService) -> None:
    from tui_eval.judge.vertex import NO_SETTINGS

    fake_gemini.default = safety("safe")
    for criterion in (0.5, {"threshold": 0.5}):
        result = await run_safety(criterion, case([turn("how to bake bread", "Mix flour and water.")]), judge)
        assert result.status == EvalStatus.NOT_EVALUATED and result.reason == NO_SETTINGS
    assert fake_gemini.requests == []


async def test_safety_gemini_judge_unavailable_is_not_evaluated() -> None:
    judge = create_judge_service(JudgeOptions())
    assert not judge.available
    result = await run_safety(judged(), case([turn("q", "a")]), judge)
    assert result.status == EvalStatus.NOT_EVALUATED and result.reason == "no judge credentials"


async def test_safety_majority(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    def respond(req: RecordedRequest) -> Reply:
        if "how to bake bread" in req.prompt_text:
            return safety("safe")
        respond.n += 1  # type: ignore[attr-defined]
        return safety("unsafe", ["dangerous content"]) if respond.n <= 3 else safety("safe")  # type: ignore[attr-defined]

    respond.n = 0  # type: ignore[attr-defined]
    fake_gemini.responder = respond
    ev = case([turn("how to bake bread", "Mix flour and water."), turn("something bad", "Here is how...")])
    result = await run_safety(judged(threshold=1.0), ev, judge)
    good, bad = result.per_invocation
    assert isinstance(good.details, SafetyDetails) and isinstance(bad.details, SafetyDetails)
    assert good.score == 1.0 and good.details.votes == Votes(yes=5, no=0)  # yes = safe
    assert bad.score == 0.0 and bad.details.votes == Votes(yes=2, no=3)
    assert bad.details.violated_policies == ["dangerous content"] and bad.details.verdict == "unsafe"
    assert result.score == 0.5 and result.status == EvalStatus.FAILED
    adk_validate(result)


async def test_safety_without_response(judge: JudgeService) -> None:
    result = await run_safety(judged(samples=1), case([turn("q", None)]), judge)
    assert result.status == EvalStatus.NOT_EVALUATED


# -- the engine's side ----------------------------------------------------------------------------

async def test_no_credentials_llm_not_evaluated_deterministic_still_run() -> None:
    from tui_eval.engine.runner import score_case

    config = read_eval_config({"criteria": {
        "tool_trajectory_avg_score": 1.0,
        "final_response_match_v2": judged(),
        "rubric_based_final_response_quality_v1": judged(rubrics=[rubric("r", "x")]),
        "rubric_based_tool_use_quality_v1": judged(rubrics=[rubric("r", "x")]),
        "hallucinations_v1": judged(),
        "safety_v1": judged(),
    }})
    ev = case([turn("q", "a", calls=[("get_weather", {"city": "Paris"}, {"sky": "sunny"})])])
    judge = create_judge_service(JudgeOptions())
    assert not judge.available
    results = {r.metric_name: r for r in await score_case(config, ev, turns_of(ev), judge=judge)}
    assert results["tool_trajectory_avg_score"].status == EvalStatus.PASSED
    # the informational efficiency metrics, reported on every eval, never need a judge
    informational = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")
    assert all(results.pop(name).status == EvalStatus.INFORMATIONAL for name in informational)
    for name, r in results.items():
        if name != "tool_trajectory_avg_score":
            assert r.status == EvalStatus.NOT_EVALUATED and r.reason == "no judge credentials", name


async def test_turn_without_timestamp_keeps_rubrics_and_app_details(fake_gemini: FakeGemini,
                                                                    judge: JudgeService) -> None:
    """Hand-written turns often leave out creation_timestamp; their rubrics and app_details still count."""
    fake_gemini.responder = rubric_responder(lambda rid, n: "yes")
    raw = turn("q", "a", rubrics=[rubric("inv_only", "From the turn", "FINAL_RESPONSE_QUALITY")])
    del raw["creation_timestamp"], raw["intermediate_data"], raw["invocation_id"]
    result = await run_metric("rubric_based_final_response_quality_v1", judged(samples=1), case([raw]), judge)
    assert result.score == 1.0
    assert rubric_ids_in(fake_gemini.requests[0]) == ["inv_only"]
    assert "Always use get_weather" in fake_gemini.requests[0].prompt_text
