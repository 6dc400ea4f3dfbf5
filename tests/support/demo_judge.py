"""A scripted judge for the demo agents: it sees the faults demo_agents/README.md plants for judged metrics.

`demo_judge()` plays tui-eval's LLM judge (as `judge_responder`) and answers positively, except:
- hallucinations_v1 labels a sentence `unsupported` when it makes one of the demo's unsupported claims
  (return_used_item's "Used items can be returned too, within 60 days");
- rubric `grounded` gets "no" for the return_used_item prompt ("used jacket");
- final_response_match_v2 answers "invalid" for half_degree ("21.5 degrees").
With it, a run of the demo agents has every failure kind the demos carry. Standard library only.
"""

from __future__ import annotations

import re

from tests.support.fake_gemini import RecordedRequest, Reply, Responder, json_reply, judge_responder

UNSUPPORTED = ("60 days",)


def demo_judge() -> Responder:
    """A responder for FakeGemini (`server.responder = demo_judge()`)."""
    positive = judge_responder()
    invalid = judge_responder(verdict="invalid")

    def respond(request: RecordedRequest) -> Reply | str | None:
        schema = request.response_schema
        if not isinstance(schema, dict):
            return None
        props = schema.get("properties") or {}
        text = request.prompt_text
        if "sentences" in props and (props["sentences"].get("items") or {}).get("type", "").upper() != "STRING":
            block = text.rsplit("<sentences>", 1)[-1].split("</sentences>", 1)[0].strip()
            labelled = []
            for line in block.splitlines():
                num, _, sentence = line.partition(". ")
                if num.isdigit():
                    bad = any(claim in sentence for claim in UNSUPPORTED)
                    labelled.append({"index": int(num), "sentence": sentence,
                                     "rationale": "no tool result says so" if bad else "the tool result says so",
                                     "label": "unsupported" if bad else "supported",
                                     "supporting_excerpt": None if bad else "from the knowledge base",
                                     "contradicting_excerpt": None})
            return json_reply({"sentences": labelled})
        if "verdicts" in props and "used jacket" in text:
            # Only `grounded` fails; the other rubrics of the same request pass.
            ids = re.findall(r"\[id: ([^\]]+)\]", text.rsplit("<properties>", 1)[-1])
            return json_reply({"verdicts": [
                {"rubric_id": rid, "evidence": "the tool results", "verdict": "no" if rid == "grounded" else "yes",
                 "rationale": "claims a 60-day return of used items" if rid == "grounded" else "answers it"}
                for rid in ids]})
        if "reasoning" in props and re.search(r"21\.5 degrees", text):
            return invalid(request)
        return positive(request)

    return respond
