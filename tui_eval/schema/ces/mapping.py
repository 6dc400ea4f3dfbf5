"""CES Evaluations to one ADK eval set (the snake_case file of SPEC §2), and back, without loss.

A golden becomes a `conversation` case: per turn, the user's text, the expected tool calls (named by the
last segment of the tool's resource name), the expected tool responses and the expected agent response.
A scenario becomes a `conversation_scenario` case: the task is the starting prompt, the task plus the
user facts the conversation plan, and the rubrics the case rubrics.

Where the rest lives: in the case, under the key `ces` (`{"evaluation": {...}}`): the original
Evaluation minus what the case carries. The case is the right home, not a top-level key: ADK's EvalCase
has `extra="allow"` and writes unknown keys back when it saves a set, while ADK's EvalSet silently drops
unknown top-level keys on save and our loader rejects them; and one case plus its own remainder can be
moved, copied or deleted as a unit. Nothing is said twice, so an edit to the case is the edit that gets
exported: the remainder keeps the slots (which step was a tool call, its tool's full resource name, the
notes, mocks, variables, ...), the case fills them in order; extra case items become new steps, missing
ones remove theirs.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from ..base import either_spelling
from ..errors import render_path
from .caseview import CES_KEY
from .model import Evaluation

logger = logging.getLogger(__name__)

# A SessionInput's input kinds (a union): a step whose user input has none of them is a text slot.
_INPUT_KINDS = frozenset({"text", "dtmf", "audio", "toolResponses", "image", "blob", "variables", "event"})
_CHUNK_KINDS = frozenset(
    {"text", "transcript", "blob", "payload", "image", "toolCall", "toolResponse", "agentTransfer",
     "updatedVariables", "defaultVariables"}
)
_FACTS_HEADER = "\n\nUser facts:\n"

# JSON shapes of SPEC §2 (ADK's eval set file); typed as what the JSON parser gives.
JsonDict = dict[str, Any]


# ---- small helpers ------------------------------------------------------------------------------


_get = either_spelling


def short_name(resource: str) -> str:
    """`projects/p/locations/l/apps/a/tools/get_weather` -> `get_weather`."""
    return resource.rstrip("/").rsplit("/", 1)[-1]


def app_of(evaluation_name: str | None) -> str | None:
    """The app resource an evaluation belongs to, from its name."""
    if evaluation_name and "/evaluations/" in evaluation_name:
        return evaluation_name.split("/evaluations/", 1)[0]
    return None


def _tool_name(call: Mapping[str, Any]) -> str:
    if call.get("tool"):
        return short_name(str(call["tool"]))
    toolset = call.get("toolsetTool") or {}
    if toolset.get("toolId"):
        return str(toolset["toolId"])
    if toolset.get("toolset"):
        return short_name(str(toolset["toolset"]))
    return ""


def _rfc3339_seconds(stamp: str | None) -> float:
    """An RFC 3339 time as Unix seconds (nanoseconds cut to micro); 0.0 when absent or unreadable."""
    if not stamp:
        return 0.0
    text = re.sub(r"(\.\d{6})\d+", r"\1", stamp.replace("Z", "+00:00"))
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        logger.info("unreadable CES timestamp %r; creation_timestamp left at 0", stamp)
        return 0.0


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-").lower()


def render_plan(task: str, facts: Sequence[Mapping[str, Any]] | None) -> str:
    """The conversation plan the user simulator reads: the task, then the facts the user knows."""
    if not facts:
        return task
    lines = "\n".join(f"- {f.get('name', '')}: {f.get('value', '')}" for f in facts)
    return task + _FACTS_HEADER + lines


def parse_plan(plan: str) -> tuple[str, list[dict[str, str]] | None]:
    """The inverse of `render_plan`: (task, user facts or None)."""
    head, sep, tail = plan.rpartition(_FACTS_HEADER)
    if not sep:
        return plan, None
    facts: list[dict[str, str]] = []
    for line in tail.split("\n"):
        if not line.startswith("- ") or ": " not in line:
            return plan, None
        name, value = line[2:].split(": ", 1)
        facts.append({"name": name, "value": value})
    return head, facts


# ---- CES -> ADK -------------------------------------------------------------------------------------


def _function_part(item: JsonDict, payload_key: str) -> JsonDict:
    """A CES ToolCall (payload `args`) or ToolResponse (payload `response`) as an ADK FunctionCall or
    FunctionResponse; strips from `item` what the FunctionCall or FunctionResponse now carries."""
    out: JsonDict = {}
    if "id" in item:
        out["id"] = item.pop("id")
    out["name"] = _tool_name(item)
    payload = item.get(payload_key)
    out[payload_key] = copy.deepcopy(payload) if payload else {}
    if payload:  # an explicit empty payload stays, so that it comes back as it was
        del item[payload_key]
    return out


def _response_parts(message: JsonDict) -> list[JsonDict]:
    """The text chunks of an agent response as Parts; strips them from `message`."""
    chunks = message.get("chunks")
    if not isinstance(chunks, list) or not chunks:
        return []
    parts = [{"text": c["text"]} for c in chunks if _is_text_chunk(c)]
    if len(parts) == len(chunks):
        del message["chunks"]
    else:  # mixed: text chunks leave empty placeholders that keep their places
        message["chunks"] = [{} if _is_text_chunk(c) else c for c in chunks]
    return parts


def _is_text_chunk(chunk: Any) -> bool:
    return isinstance(chunk, dict) and "text" in chunk and not (set(chunk) & _CHUNK_KINDS - {"text"})


def _golden_turn(turn: JsonDict, index: int) -> JsonDict:
    """One golden turn (a residue dict, stripped in place) as an ADK Invocation."""
    user_parts: list[JsonDict] = []
    tool_uses: list[JsonDict] = []
    tool_responses: list[JsonDict] = []
    responses: list[tuple[str, list[JsonDict]]] = []
    for step in turn.get("steps") or []:
        user_input = step.get("userInput")
        if isinstance(user_input, dict) and "text" in user_input and not (set(user_input) & _INPUT_KINDS - {"text"}):
            user_parts.append({"text": user_input.pop("text")})
        expectation = step.get("expectation")
        if not isinstance(expectation, dict):
            continue
        if isinstance(expectation.get("toolCall"), dict):
            tool_uses.append(_function_part(expectation["toolCall"], "args"))
        # A mock response is what the tool answers in CES: a recorded tool response, as --mock-tools reads it.
        for key in ("toolResponse", "mockToolResponse"):
            if isinstance(expectation.get(key), dict):
                tool_responses.append(_function_part(expectation[key], "response"))
        if isinstance(expectation.get("agentResponse"), dict):
            message = expectation["agentResponse"]
            responses.append((str(message.get("role") or "agent"), _response_parts(message)))
    final = {"role": "model", "parts": responses[-1][1]} if responses else None
    return {
        "invocation_id": f"turn-{index + 1}",
        "user_content": {"role": "user", "parts": user_parts},
        "final_response": final,
        "intermediate_data": {
            "tool_uses": tool_uses,
            "tool_responses": tool_responses,
            "intermediate_responses": [[author, parts] for author, parts in responses[:-1]],
        },
    }


def evaluation_to_case(evaluation: Evaluation, eval_id: str) -> JsonDict:
    """One CES Evaluation as an ADK EvalCase dict, its remainder under `ces`."""
    residue = evaluation.to_json_dict()
    case: JsonDict = {"eval_id": eval_id}
    golden = residue.get("golden")
    scenario = residue.get("scenario")
    if isinstance(golden, dict):
        case["conversation"] = [_golden_turn(turn, i) for i, turn in enumerate(golden.get("turns") or [])]
    elif isinstance(scenario, dict):
        task = str(scenario.get("task", ""))
        facts = scenario.get("userFacts")
        plan = render_plan(task, facts)
        # Strip task and facts only when the plan gives them back exactly (a task could contain the
        # facts header, an explicit empty list has no rendering); otherwise they stay in the remainder.
        if parse_plan(plan) == (task, facts if facts else None) and facts != []:
            scenario.pop("task", None)
            scenario.pop("userFacts", None)
        case["conversation_scenario"] = {"starting_prompt": task, "conversation_plan": plan}
        rubrics = scenario.pop("rubrics", None)
        if rubrics is not None:
            case["rubrics"] = [
                {"rubric_id": f"ces-rubric-{i + 1}", "rubric_content": {"text_property": text}}
                for i, text in enumerate(rubrics)
            ]
    else:
        raise ValueError(f"CES evaluation {evaluation.name or eval_id!r} has neither golden nor scenario")
    case["creation_timestamp"] = _rfc3339_seconds(evaluation.create_time)
    case[CES_KEY] = {"evaluation": residue}
    return case


def eval_id_for(evaluation: Evaluation, index: int) -> str:
    if evaluation.name:
        return short_name(evaluation.name)
    if evaluation.display_name and _slug(evaluation.display_name):
        return _slug(evaluation.display_name)
    return f"evaluation-{index + 1}"


def evaluations_to_eval_set(
    evaluations: Sequence[Evaluation], eval_set_id: str, *, creation_timestamp: float = 0.0
) -> JsonDict:
    """Several CES Evaluations as one ADK eval set dict (ids made unique with a numeric suffix)."""
    cases: list[JsonDict] = []
    seen: set[str] = set()
    apps: set[str] = set()
    for i, evaluation in enumerate(evaluations):
        eval_id = base = eval_id_for(evaluation, i)
        n = 2
        while eval_id in seen:
            eval_id, n = f"{base}-{n}", n + 1
        seen.add(eval_id)
        app = app_of(evaluation.name)
        if app:
            apps.add(app)
        cases.append(evaluation_to_case(evaluation, eval_id))
    out: JsonDict = {"eval_set_id": eval_set_id, "name": eval_set_id}
    if len(apps) == 1:
        out["description"] = f"CES evaluations of {next(iter(apps))}"
    out["eval_cases"] = cases
    out["creation_timestamp"] = creation_timestamp
    return out


# ---- ADK -> CES -------------------------------------------------------------------------------------


class _Queue:
    """Case items waiting for their slots, in order."""

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = list(items)

    def take(self) -> Any:
        return self.items.pop(0) if self.items else None

    def __bool__(self) -> bool:
        return bool(self.items)


def _texts(content: Any) -> list[str]:
    if not isinstance(content, dict):
        return []
    return [p["text"] for p in content.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]


def _named_tool(slot: JsonDict, name: str, app: str | None) -> None:
    """Point a ToolCall/ToolResponse slot at tool `name`, keeping its resource path when the name is unchanged."""
    if "tool" in slot:
        if short_name(str(slot["tool"])) != name:
            prefix = str(slot["tool"]).rstrip("/").rpartition("/")[0]
            slot["tool"] = f"{prefix}/{name}" if prefix else name
    elif isinstance(slot.get("toolsetTool"), dict):
        if _tool_name(slot) != name:
            slot["toolsetTool"]["toolId"] = name
    else:
        slot["tool"] = f"{app}/tools/{name}" if app else name


def _fill_call(slot: JsonDict, call: Mapping[str, Any], payload_key: str, app: str | None) -> None:
    _named_tool(slot, str(_get(call, "name") or ""), app)
    if "id" in call and call["id"] is not None:
        slot["id"] = call["id"]
    # An empty payload leaves the slot as it is: an explicit `{}` was kept there on import.
    payload = _get(call, payload_key)
    if payload:
        slot[payload_key] = copy.deepcopy(payload)


def _fill_message(slot: JsonDict, texts: Sequence[str]) -> None:
    chunks = slot.get("chunks")
    if isinstance(chunks, list):
        queue = _Queue(texts)
        filled: list[Any] = []
        for chunk in chunks:
            if chunk == {}:
                if queue:
                    filled.append({"text": queue.take()})
            else:
                filled.append(chunk)
        filled.extend({"text": t} for t in queue.items)
        slot["chunks"] = filled
    elif texts:
        slot["chunks"] = [{"text": t} for t in texts]


def _tool_events(intermediate: Any) -> tuple[list[JsonDict], list[JsonDict], list[list[str]]]:
    """(tool calls, tool responses, intermediate response texts) of either intermediate_data shape."""
    if not isinstance(intermediate, dict):
        return [], [], []
    events = _get(intermediate, "invocation_events")
    if events is not None:
        calls: list[JsonDict] = []
        responses: list[JsonDict] = []
        for event in events:
            for part in (_get(event, "content") or {}).get("parts") or []:
                if _get(part, "function_call") is not None:
                    calls.append(_get(part, "function_call"))
                if _get(part, "function_response") is not None:
                    responses.append(_get(part, "function_response"))
        return calls, responses, []
    texts = []
    for entry in _get(intermediate, "intermediate_responses") or []:
        parts = entry[1] if isinstance(entry, list) and len(entry) == 2 else []
        texts.append([p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)])
    return list(_get(intermediate, "tool_uses") or []), list(_get(intermediate, "tool_responses") or []), texts


def _message_plan(
    n_slots: int, intermediate: list[list[str]], final: list[str] | None
) -> tuple[list[list[str] | None], list[list[str]], list[list[str]]]:
    """Which texts go to each agent-response slot (None: remove it), which new ones go just before the
    final slot, and which new ones go at the end. The final response keeps the last slot, so deleting
    an intermediate response never moves the final one into its place."""
    if final is None:
        kept = intermediate[:n_slots]
        return [*kept, *[None] * (n_slots - len(kept))], [], intermediate[n_slots:]
    if n_slots == 0:
        return [], [], [*intermediate, final]
    kept = intermediate[: n_slots - 1]
    return [*kept, *[None] * (n_slots - 1 - len(kept)), final], intermediate[n_slots - 1:], []


def _new_message_step(texts: Sequence[str]) -> JsonDict:
    message: JsonDict = {"role": "agent"}
    _fill_message(message, texts)
    return {"expectation": {"agentResponse": message}}


def _turn_from_invocation(turn: JsonDict, invocation: Mapping[str, Any], app: str | None) -> JsonDict:
    """Fill a golden turn's slots (a remainder dict, or {} for a new turn) from an ADK Invocation."""
    calls, tool_responses, intermediate_texts = _tool_events(_get(invocation, "intermediate_data"))
    final = _get(invocation, "final_response")
    old_steps = turn.get("steps") or []
    n_messages = sum(
        1 for s in old_steps if isinstance(s.get("expectation"), dict) and isinstance(s["expectation"].get("agentResponse"), dict)
    )
    assigned, before_final, at_end = _message_plan(n_messages, intermediate_texts, _texts(final) if final is not None else None)
    users, call_q, resp_q = _Queue(_texts(_get(invocation, "user_content"))), _Queue(calls), _Queue(tool_responses)
    steps: list[JsonDict] = []
    last_user = -1
    message_index = 0
    for step in old_steps:
        user_input = step.get("userInput")
        if isinstance(user_input, dict) and not (set(user_input) & _INPUT_KINDS):
            if not users:
                continue  # the case has fewer user texts than there were: this one was deleted
            user_input["text"] = users.take()
        if isinstance(user_input, dict):
            last_user = len(steps)
        expectation = step.get("expectation")
        if isinstance(expectation, dict):
            had_condition = bool(set(expectation) - {"note"})
            for key, queue, payload in (("toolCall", call_q, "args"), ("toolResponse", resp_q, "response"),
                                        ("mockToolResponse", resp_q, "response")):
                if isinstance(expectation.get(key), dict):
                    if queue:
                        _fill_call(expectation[key], queue.take(), payload, app)
                    else:
                        del expectation[key]
            if isinstance(expectation.get("agentResponse"), dict):
                texts = assigned[message_index]
                if message_index == n_messages - 1:
                    steps.extend(_new_message_step(t) for t in before_final)
                message_index += 1
                if texts is None:
                    del expectation["agentResponse"]
                else:
                    _fill_message(expectation["agentResponse"], texts)
            if had_condition and not set(expectation) - {"note"}:
                continue  # its only condition was removed from the case
        steps.append(step)
    steps[last_user + 1:last_user + 1] = [{"userInput": {"text": t}} for t in users.items]
    for call in call_q.items:
        slot: JsonDict = {}
        _fill_call(slot, call, "args", app)
        steps.append({"expectation": {"toolCall": slot}})
    for resp in resp_q.items:
        slot = {}
        _fill_call(slot, resp, "response", app)
        steps.append({"expectation": {"toolResponse": slot}})
    steps.extend(_new_message_step(t) for t in at_end)
    if steps or "steps" in turn:
        turn["steps"] = steps
    return turn


class MappingError(ValueError):
    """A case's CES remainder that does not fit the Evaluation schema; names the JSON path."""

    def __init__(self, json_path: str, message: str) -> None:
        super().__init__(f"{json_path}: {message}")
        self.json_path = json_path
        self.message = message


def _checked_residue(case: Mapping[str, Any], where: str) -> JsonDict:
    """The case's remainder, validated before it is filled in (a hand-edited one may be anything)."""
    extra = case.get(CES_KEY)
    if extra is None:
        return {}
    residue = extra.get("evaluation", {}) if isinstance(extra, dict) else None
    if not isinstance(residue, dict):
        raise MappingError(f"{where}.{CES_KEY}", "expected {\"evaluation\": {...}}")
    try:
        Evaluation.model_validate(residue)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise MappingError(render_path(f"{where}.{CES_KEY}.evaluation", first["loc"]), str(first["msg"])) from None
    return copy.deepcopy(residue)


def case_to_evaluation(case: Mapping[str, Any], where: str = "$") -> Evaluation:
    """An ADK EvalCase dict (from `evaluation_to_case`, possibly edited, or a plain ADK case) as an Evaluation.

    Raises MappingError (with the JSON path, `where` being the case's) for a remainder that does not fit.
    """
    residue = _checked_residue(case, where)
    if not residue:
        residue["displayName"] = str(_get(case, "eval_id"))
    app = app_of(residue.get("name"))
    conversation = _get(case, "conversation")
    scenario_case = _get(case, "conversation_scenario")
    if conversation is not None:
        residue.pop("scenario", None)
        golden = residue.setdefault("golden", {})
        old_turns = golden.get("turns") or []
        turns = [
            _turn_from_invocation(old_turns[i] if i < len(old_turns) else {}, inv, app)
            for i, inv in enumerate(conversation)
        ]
        if turns or "turns" in golden:
            golden["turns"] = turns
    elif scenario_case is not None:
        residue.pop("golden", None)
        scenario = residue.setdefault("scenario", {})
        if "task" not in scenario:
            task, facts = parse_plan(str(_get(scenario_case, "conversation_plan") or ""))
            scenario["task"] = task
            if facts is not None:
                scenario["userFacts"] = facts
        rubrics = _get(case, "rubrics")
        if rubrics is not None:
            scenario["rubrics"] = [
                str((_get(r, "rubric_content") or {}).get("text_property")
                    or (_get(r, "rubric_content") or {}).get("textProperty") or "")
                for r in rubrics
            ]
    return Evaluation.model_validate(residue)


def eval_set_to_evaluations(eval_set: Mapping[str, Any]) -> list[Evaluation]:
    """Every case of an ADK eval set dict as a CES Evaluation, in order."""
    return [case_to_evaluation(case, f"$.eval_cases[{i}]") for i, case in enumerate(eval_set.get("eval_cases") or [])]
