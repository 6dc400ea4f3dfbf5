"""replay:PATH: a replayed turn is the recorded turn (built without a second validation, sharing what
nothing changes), and an unchanged replay file is parsed once per process while a changed one is not."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from tui_eval.agents.base import CaseContext
from tui_eval.agents.replay import ReplayAgent, load_recorded_cases
from tui_eval.api import evaluate
from tui_eval.schema.load import load_eval_set
from tui_eval.schema.model import Content, Invocation, Part

from tests.support.evalfiles import case, dice_pair, turn, write_set


def _recorded_file(tmp_path: Path) -> Path:
    timed = turn("q2", "r2", [("g", {"x": [1, None]})], inv_id="i2")
    timed["duration"] = 1.5
    timed["creation_timestamp"] = 7.0
    timed["app_details"] = {"agent_details": {"root": {"name": "root", "instructions": "be nice"}}}
    camel = turn("q3", "r3", inv_id="i3")
    camel["finalResponse"] = camel.pop("final_response")
    events = {"invocation_id": "i4", "user_content": {"role": "user", "parts": [{"text": "q4"}]},
              "intermediate_data": {"invocation_events": [
                  {"author": "root", "content": {"role": "model", "parts": [{"text": "thinking"}]}}]}}
    return write_set(tmp_path / "recorded.evalset.json", "rec",
                     case("a", turn("q1", "r1", [("f", {"n": 1})], inv_id="i1"), timed, camel, events))


def _replayed(agent: ReplayAgent, eval_id: str, sent: list[Content]) -> list[Invocation]:
    async def go() -> list[Invocation]:
        eval_set = load_eval_set(agent.path)
        golden = eval_set.eval_cases[0]
        session = await agent.new_session(golden.model_copy(update={"eval_id": eval_id}),
                                          CaseContext(eval_set=eval_set, eval_file=agent.path))
        return [await session.turn(content, i) for i, content in enumerate(sent)]

    return asyncio.run(go())


def test_a_replayed_turn_is_what_validating_it_gives(tmp_path: Path) -> None:
    agent = ReplayAgent(_recorded_file(tmp_path))
    recorded = agent._cases["a"].conversation or []
    sent = [Content(role="user", parts=[Part(text=f"sent {i}")]) for i in range(len(recorded))]
    replayed = _replayed(agent, "a", sent)
    for inv, rec, content in zip(replayed, recorded, sent, strict=True):
        validated = Invocation(user_content=content, invocation_id=rec.invocation_id,
                               final_response=rec.final_response, intermediate_data=rec.intermediate_data,
                               creation_timestamp=rec.creation_timestamp, duration=rec.duration,
                               app_details=rec.app_details)
        assert inv == validated
        assert inv.to_dict() == validated.to_dict()
        assert list(inv.__dict__) == list(validated.__dict__)
        assert inv.user_content is content  # the message that was sent, not the recorded one
        assert inv.intermediate_data is rec.intermediate_data  # shared, not copied: nothing changes it
        assert inv.tool_timings == [] and inv.tool_timings is not rec.tool_timings
    assert replayed[0].tool_timings is not replayed[1].tool_timings


def test_a_replay_run_leaves_the_recorded_turns_as_they_were(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    before = {c.eval_id: [t.to_dict() for t in c.conversation or []] for c in load_recorded_cases(recorded).values()}
    record = evaluate(f"replay:{recorded}", golden, raise_on_failure=False, save=True)
    assert sum(len(r.case_results) for r in record.results) == len(before)
    after = {c.eval_id: [t.to_dict() for t in c.conversation or []] for c in load_recorded_cases(recorded).values()}
    assert after == before


def test_an_unchanged_replay_file_is_parsed_once(tmp_path: Path) -> None:
    path = _recorded_file(tmp_path)
    first = ReplayAgent(path)._cases
    assert ReplayAgent(path)._cases is first
    assert ReplayAgent(tmp_path / "." / path.name)._cases is first  # the same file by another spelling


def test_a_changed_replay_file_is_parsed_again(tmp_path: Path) -> None:
    path = _recorded_file(tmp_path)
    first = ReplayAgent(path)._cases
    # Same size, same inode, only the modification time differs.
    text = path.read_text()
    path.write_text(text.replace('"r1"', '"R1"'))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    second = ReplayAgent(path)._cases
    assert second is not first
    final = second["a"].conversation[0].final_response  # type: ignore[index]
    assert final is not None and final.parts is not None and final.parts[0].text == "R1"
    # A new file at the same path (another inode, as an atomic save gives).
    replacement = tmp_path / "new.json"
    replacement.write_text(json.dumps({"eval_set_id": "rec", "eval_cases": [case("b", turn("q", "r"))]}))
    os.replace(replacement, path)
    assert list(ReplayAgent(path)._cases) == ["b"]


def test_only_the_last_two_replay_files_are_kept(tmp_path: Path) -> None:
    paths = []
    for name in ("one", "two", "three"):
        (tmp_path / name).mkdir()
        paths.append(_recorded_file(tmp_path / name))
    one, two, three = (ReplayAgent(p)._cases for p in paths)
    assert ReplayAgent(paths[2])._cases is three and ReplayAgent(paths[1])._cases is two
    assert ReplayAgent(paths[0])._cases is not one  # the oldest was dropped, so it is parsed again
    assert ReplayAgent(paths[1])._cases is two


def test_the_recorded_cases_cannot_be_changed_through_an_agent(tmp_path: Path) -> None:
    cases = ReplayAgent(_recorded_file(tmp_path))._cases
    try:
        cases["x"] = cases["a"]  # type: ignore[index]
    except TypeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("the shared cases mapping accepted an item")
    assert list(cases) == ["a"]


def test_recorded_models_share_their_fields_sets_as_loaded_eval_sets_do(tmp_path: Path) -> None:
    path = _recorded_file(tmp_path)
    [loaded] = load_eval_set(path).eval_cases
    recorded = ReplayAgent(path)._cases["a"]
    assert recorded == loaded
    for rec, same in zip(recorded.conversation or [], loaded.conversation or [], strict=True):
        assert rec.model_fields_set == same.model_fields_set
        assert type(rec.__pydantic_fields_set__) is type(same.__pydantic_fields_set__)  # shared, as loaded
    first = (recorded.conversation or [])[0]
    first.duration = 2.0  # an assignment gives the model its own set: the other turns' stay as they were
    assert "duration" in first.model_fields_set
    assert "duration" not in (recorded.conversation or [])[2].model_fields_set
