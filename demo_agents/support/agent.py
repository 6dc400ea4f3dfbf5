"""A customer-support agent answering from a small knowledge base (its replies invite grounding checks).

Offline a deterministic policy stands in for the model. On purpose it sometimes says more than the
knowledge base supports (which hallucinations_v1 catches, with a judge), opens a ticket where a help
article would do, and passes order ids exactly as typed.
"""

from __future__ import annotations

import re

from tui_eval.agents.native import NativeAgent, PolicyTurn, Step

ARTICLES = [
    {
        "id": "kb-101",
        "title": "Refunds",
        "text": "Refunds go back to the original payment method within 5 to 7 business days after the "
        "returned item reaches our warehouse.",
        "keywords": ["refund", "money back"],
    },
    {
        "id": "kb-102",
        "title": "Returns",
        "text": "Unused items in their original packaging can be returned within 30 days of delivery. "
        "Return shipping is free for members.",
        "keywords": ["return", "send back"],
    },
    {
        "id": "kb-103",
        "title": "Password reset",
        "text": "To reset your password, choose 'Forgot password' on the sign-in page; the reset link we "
        "email you is valid for 1 hour.",
        "keywords": ["password", "sign in", "log in", "login"],
    },
    {
        "id": "kb-104",
        "title": "Shipping times",
        "text": "Standard shipping takes 3 to 5 business days; express shipping takes 1 to 2 business days.",
        "keywords": ["shipping", "delivery time", "how long does delivery"],
    },
]

ORDERS = {
    "A1001": {"status": "shipped", "carrier": "UPS", "eta": "2025-06-12"},
    "A1002": {"status": "delivered", "delivered_on": "2025-06-03"},
    "A1003": {"status": "processing"},
}


def search_knowledge_base(query: str) -> dict:
    """Search the help-center knowledge base.

    Args:
        query: What to look for, in a few words.
    """
    q = query.lower()
    hits = [{"id": a["id"], "title": a["title"], "text": a["text"]} for a in ARTICLES
            if any(k in q for k in a["keywords"]) or a["title"].lower() in q]
    return {"articles": hits}


def get_order_status(order_id: str) -> dict:
    """Look up the status of an order.

    Args:
        order_id: The order id, e.g. "A1001".
    """
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        return {"error": f"no order {order_id!r}"}
    return {"order_id": order_id.strip().upper(), **order}


def create_ticket(summary: str, priority: str = "normal") -> dict:
    """Open a support ticket for a human agent.

    Args:
        summary: One sentence describing the problem.
        priority: "low", "normal" or "high".
    """
    return {"ticket_id": "T-" + str(sum(map(ord, summary)) % 9000 + 1000), "priority": priority}


INSTRUCTION = """You are a customer-support agent for an online shop. Answer only from the knowledge
base (search_knowledge_base) and from order data (get_order_status); never state policies, times or
amounts that the tools did not return. Open a ticket (create_ticket) only for problems you cannot solve,
such as damaged items. Be brief and friendly."""

_ORDER = re.compile(r"\b([a-z]\d{4})\b", re.IGNORECASE)


def _topic(text: str) -> str | None:
    for article in ARTICLES:
        for keyword in article["keywords"]:
            if keyword in text:
                return keyword
    return None


def policy(turn: PolicyTurn) -> Step | str:
    """The offline stand-in for the model, bugs on purpose included (see the module docstring)."""
    raw = turn.user_text
    text = raw.lower()
    order = _ORDER.search(raw)
    done = {r.name for r in turn.results}
    calls: list[tuple[str, dict]] = []

    if "damaged" in text or "broken" in text:
        if "create_ticket" not in done:
            calls.append(("create_ticket", {"summary": f"Damaged item in order {order.group(1) if order else '?'}",
                                            "priority": "high"}))
        if order and "get_order_status" not in done:
            calls.append(("get_order_status", {"order_id": order.group(1)}))
        if calls:
            return Step(calls=calls, text="I'm sorry to hear that, let me sort it out.")
    elif "password" in text:
        if "create_ticket" not in done:
            return Step(calls=[("create_ticket", {"summary": "Customer cannot reset their password",
                                                  "priority": "normal"})])
    elif order and "get_order_status" not in done:
        return Step(calls=[("get_order_status", {"order_id": order.group(1)})])
    elif (topic := _topic(text)) and "search_knowledge_base" not in done:
        return Step(calls=[("search_knowledge_base", {"query": topic})])

    parts: list[str] = []
    for r in turn.results:
        resp = r.response
        if "error" in resp:
            parts.append(f"I couldn't find that: {resp['error']}.")
        elif r.name == "search_knowledge_base":
            articles = resp["articles"]
            if not articles:
                parts.append("I couldn't find anything about that in our help center.")
            for a in articles:
                parts.append(a["text"])
            if "used" in text and any(a["id"] == "kb-102" for a in articles):
                # Bug on purpose: a claim the knowledge base does not support.
                parts.append("Used items can be returned too, within 60 days.")
        elif r.name == "get_order_status":
            status = resp["status"]
            line = f"Order {resp['order_id']} is {status}"
            if "eta" in resp:
                line += f" with {resp['carrier']}, arriving on {resp['eta']}"
            if "delivered_on" in resp:
                line += f" (delivered on {resp['delivered_on']})"
            parts.append(line + ".")
        elif r.name == "create_ticket":
            parts.append(f"I've opened ticket {resp['ticket_id']} ({resp['priority']} priority); "
                         "a colleague will contact you.")
    if parts:
        return " ".join(parts)
    if "order" in text and not order:
        return "Sure, I can check that. What's your order number?"
    if "thank" in text or "that's all" in text or "bye" in text:
        return "You're welcome! Have a great day."
    return "Hi! I can help with orders, returns, refunds, shipping and your account. What do you need?"


root_agent = NativeAgent(
    name="support_agent",
    instruction=INSTRUCTION,
    tools=[search_knowledge_base, get_order_status, create_ticket],
    policy=policy,
    description="Answers customer questions from the knowledge base.",
)
