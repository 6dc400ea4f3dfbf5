"""Differential: google-adk 2.13's EvalSet and ours agree on which eval files load and which are rejected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from tui_eval.schema.errors import LoadError
from tui_eval.schema.load import parse_eval_set

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    p for folder in ("tests", "demo_agents") for p in (ROOT / folder).rglob("*.json")
    if p.name.endswith(".evalset.json") or p.name.endswith(".test.json")
)


def _turn(**over):
    turn = {"invocation_id": "t", "user_content": {"role": "user", "parts": [{"text": "hi"}]},
            "final_response": {"role": "model", "parts": [{"text": "yo"}]}}
    turn.update(over)
    return turn


def _set(*turns, **top):
    return {"eval_set_id": "s", "eval_cases": [{"eval_id": "a", "conversation": list(turns)}], **top}


CALL = {"id": "c1", "name": "f", "args": {"x": 1}}
EVENTS = {"invocation_events": [{"author": "a", "content": {"parts": [{"functionCall": CALL}]}}]}
DOCS = {
    "plain": _set(_turn()),
    "misspelt part key": _set(_turn(user_content={"parts": [{"txt": "hi"}]})),
    "other genai part fields": _set(_turn(final_response={"parts": [{"thought": True, "text": "x"},
                                                                     {"inline_data": {"mime_type": "a/b"}}]})),
    "empty intermediate data": _set(_turn(intermediate_data={})),
    "first shape": _set(_turn(intermediate_data={"tool_uses": [CALL], "toolResponses": []})),
    "second shape": _set(_turn(intermediate_data=EVENTS)),
    "both shapes": _set(_turn(intermediate_data={"tool_uses": [], "invocation_events": []})),
    "event ui keys": _set(_turn(intermediate_data={"invocation_events": [{"author": "a", "toolUseIndex": 1}]})),
    "unknown invocation key": _set(_turn(bogus=1)),
    "unknown call key": _set(_turn(intermediate_data={"tool_uses": [{"name": "f", "argz": {}}]})),
    "args not an object": _set(_turn(intermediate_data={"tool_uses": [{"name": "f", "args": [1]}]})),
    "text a number": _set(_turn(user_content={"parts": [{"text": 3}]})),
    "numeric string timestamp": _set(_turn(creation_timestamp="17.5"), creation_timestamp="3"),
    "word timestamp": _set(_turn(creation_timestamp="soon")),
    "unknown top-level key": _set(_turn(), comment="x"),
    "camelCase top-level key": {"evalSetId": "s", "eval_cases": []},
    "camelCase below top": {"eval_set_id": "s", "eval_cases": [
        {"evalId": "a", "conversation": [_turn()], "sessionInput": {"appName": "x", "userId": "u", "extra": 1}}]},
    "case extra key": {"eval_set_id": "s", "eval_cases": [{"eval_id": "a", "conversation": [], "note": "x"}]},
    "neither conversation nor scenario": {"eval_set_id": "s", "eval_cases": [{"eval_id": "a"}]},
    "scenario": {"eval_set_id": "s", "eval_cases": [
        {"eval_id": "a", "conversation_scenario": {"starting_prompt": "x", "conversation_plan": "y"}}]},
    "rubric without content": _set(_turn(rubrics=[{"rubric_id": "r"}])),
    "intermediate pair too short": _set(_turn(intermediate_data={"intermediate_responses": [["a"]]})),
    "tool timings": _set(_turn(tool_timings=[])),
    "missing user content": _set({"invocation_id": "t"}),
}


def _adk_accepts(raw: bytes) -> bool:
    from google.adk.evaluation.eval_set import EvalSet

    try:
        EvalSet.model_validate(json.loads(raw))
    except ValidationError:
        return False
    return True


def _ours_accepts(raw: bytes, name: str) -> bool:
    try:
        parse_eval_set(raw, name)
    except LoadError:
        return False
    return True


@pytest.mark.parametrize("name", list(DOCS))
def test_same_verdict_as_adk(name: str) -> None:
    raw = json.dumps(DOCS[name]).encode()
    assert _ours_accepts(raw, "x.evalset.json") == _adk_accepts(raw)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_real_files_same_verdict_as_adk(path: Path) -> None:
    raw = path.read_bytes()
    try:
        adk = _adk_accepts(raw)
    except json.JSONDecodeError:
        adk = False
    assert _ours_accepts(raw, path.name) == adk


def test_the_verdicts_cover_both_outcomes() -> None:
    verdicts = {_adk_accepts(json.dumps(doc).encode()) for doc in DOCS.values()}
    assert verdicts == {True, False}
    assert len(FILES) >= 5
