"""A smart-home agent: device and temperature tools over a per-session house, and an offline policy.

The house starts from DEVICES/TEMPERATURES below; a case's session_input.state can override them
(state["devices"][device_id] = {...}). Offline a deterministic policy stands in for the model, with a
few bugs on purpose that the eval sets catch.
"""

from __future__ import annotations

import copy
import re

from tui_eval.agents.native import NativeAgent, PolicyTurn, Step, ToolContext

DEVICES: dict[str, dict[str, str]] = {
    "light_kitchen": {"room": "kitchen", "type": "light", "status": "OFF"},
    "light_living_room": {"room": "living room", "type": "light", "status": "ON"},
    "lamp_bedroom": {"room": "bedroom", "type": "lamp", "status": "ON"},
    "light_office_desk": {"room": "office", "type": "light", "status": "ON"},
    "light_office_ceiling": {"room": "office", "type": "light", "status": "ON"},
    "light_porch": {"room": "porch", "type": "light", "status": "OFF"},
    "door_garage": {"room": "garage", "type": "door", "status": "CLOSED"},
}
TEMPERATURES: dict[str, float] = {"living room": 22.0, "bedroom": 20.0, "kitchen": 21.0, "office": 21.5}
ROOMS = ("living room", "bedroom", "kitchen", "office", "porch", "garage")


def _house(ctx: ToolContext) -> tuple[dict[str, dict[str, str]], dict[str, float]]:
    state = ctx.state
    if "devices" not in state or "temperatures" not in state:
        devices = copy.deepcopy(DEVICES)
        for device_id, fields in (state.get("devices") or {}).items():
            devices.setdefault(device_id, {}).update(fields)
        state["devices"] = devices
        state["temperatures"] = dict(TEMPERATURES) | dict(state.get("temperatures") or {})
    return state["devices"], state["temperatures"]


def get_devices(room: str, tool_context: ToolContext) -> dict:
    """List the devices in a room with their status.

    Args:
        room: The room, e.g. "kitchen" or "living room".
    """
    devices, _ = _house(tool_context)
    found = [{"device_id": d, "type": f["type"], "status": f["status"]} for d, f in devices.items()
             if f["room"] == room.lower()]
    return {"room": room.lower(), "devices": found}


def get_device_info(device_id: str, tool_context: ToolContext) -> dict:
    """Get the room, type and status of one device.

    Args:
        device_id: The device's id, e.g. "light_kitchen".
    """
    devices, _ = _house(tool_context)
    if device_id not in devices:
        return {"error": f"no device {device_id!r}"}
    return {"device_id": device_id, **devices[device_id]}


def set_device_info(device_id: str, status: str, tool_context: ToolContext) -> dict:
    """Switch a device: status ON or OFF (doors: OPEN or CLOSED).

    Args:
        device_id: The device's id.
        status: The new status.
    """
    devices, _ = _house(tool_context)
    if device_id not in devices:
        return {"error": f"no device {device_id!r}"}
    devices[device_id]["status"] = status.upper()
    return {"device_id": device_id, "status": status.upper()}


def get_temperature(room: str, tool_context: ToolContext) -> dict:
    """Get the current temperature of a room in degrees Celsius.

    Args:
        room: The room.
    """
    _, temps = _house(tool_context)
    if room.lower() not in temps:
        return {"error": f"no thermostat in {room!r}"}
    return {"room": room.lower(), "celsius": temps[room.lower()]}


def set_temperature(room: str, celsius: float, tool_context: ToolContext) -> dict:
    """Set the target temperature of a room in degrees Celsius.

    Args:
        room: The room.
        celsius: The target temperature.
    """
    _, temps = _house(tool_context)
    if room.lower() not in temps:
        return {"error": f"no thermostat in {room!r}"}
    temps[room.lower()] = float(celsius)
    return {"room": room.lower(), "celsius": float(celsius)}


INSTRUCTION = """You control the devices of a house. Find device ids with get_devices(room) or use the
ids you already know; read a device with get_device_info and switch it with set_device_info (ON/OFF,
doors OPEN/CLOSED). Read and set room temperatures in degrees Celsius with get_temperature and
set_temperature. Do what the user asked in the order they asked it, then confirm briefly."""

_DEVICE_WORDS = ("light", "lights", "lamp", "door")


def _room(text: str) -> str | None:
    for room in ROOMS:
        if room in text:
            return room
    return None


def _room_before(text: str, anchor: int) -> str | None:
    """The room named closest before position `anchor` (for "the bedroom lamp")."""
    best, where = None, -1
    for room in ROOMS:
        i = text.rfind(room, 0, anchor + 1)
        if i > where:
            best, where = room, i
    return best


def policy(turn: PolicyTurn) -> Step | str:
    """The offline stand-in for the model. Its bugs on purpose: switches devices before setting a
    temperature whatever the order asked, switches only the first device of a room, and rounds
    temperatures to whole degrees."""
    text = turn.user_text.lower()
    done = {(r.name, r.args.get("device_id") or r.args.get("room")) for r in turn.results}
    listing = turn.last("get_devices")

    switch = re.search(r"\b(?:turn|switch)\s+(?:\w+\s+)?(on|off)\b|\b(open|close) the\b", text)
    if switch:
        status = (switch.group(1) or switch.group(2)).upper()
        status = {"CLOSE": "CLOSED"}.get(status, status)
        if " it" in f" {text}" and not _room(text):
            device_id = turn.state.get("last_device")
            if device_id and ("set_device_info", device_id) not in done:
                return Step(calls=[("set_device_info", {"device_id": device_id, "status": status})])
        else:
            room = _room_before(text, switch.start() + 40) or _room(text)
            if room and listing is None:
                return Step(calls=[("get_devices", {"room": room})])
            if listing is not None:
                kind = next((w.rstrip("s") for w in _DEVICE_WORDS if w in text[switch.start():]), "light")
                targets = [d for d in listing.response["devices"] if d["type"] == kind]
                if targets and ("set_device_info", targets[0]["device_id"]) not in done:
                    turn.state["last_device"] = targets[0]["device_id"]
                    return Step(calls=[("set_device_info", {"device_id": targets[0]["device_id"],
                                                            "status": status})])

    degrees = re.search(r"(\d+(?:\.\d+)?) degrees", text)
    if degrees and "set" in text:
        room = _room(text)
        if room and ("set_temperature", room) not in done:
            return Step(calls=[("set_temperature", {"room": room, "celsius": int(float(degrees.group(1)))})])
    if "temperature" in text and "set" not in text:
        room = _room(text)
        if room and ("get_temperature", room) not in done:
            return Step(calls=[("get_temperature", {"room": room})])
    if re.search(r"\bis the .* (on|off|open|closed)\b", text):
        room = _room(text)
        kind = next((w.rstrip("s") for w in _DEVICE_WORDS if w in text), "light")
        device_id = f"{kind}_{room.replace(' ', '_')}" if room else None
        if device_id and ("get_device_info", device_id) not in done:
            turn.state["last_device"] = device_id
            return Step(calls=[("get_device_info", {"device_id": device_id})])

    lines = []
    for r in turn.results:
        resp = r.response
        if "error" in resp:
            lines.append(f"Sorry, {resp['error']}.")
        elif r.name == "set_device_info":
            lines.append(f"Done: {resp['device_id']} is now {resp['status']}.")
        elif r.name == "set_temperature":
            lines.append(f"The {resp['room']} is now set to {resp['celsius']:g} degrees.")
        elif r.name == "get_temperature":
            lines.append(f"It is {resp['celsius']:g} degrees in the {resp['room']}.")
        elif r.name == "get_device_info":
            lines.append(f"The {resp['type']} in the {resp['room']} is {resp['status']}.")
    if lines:
        return " ".join(lines)
    return "I can switch devices and set temperatures room by room. What would you like to do?"


root_agent = NativeAgent(
    name="home_automation_agent",
    instruction=INSTRUCTION,
    tools=[get_devices, get_device_info, set_device_info, get_temperature, set_temperature],
    policy=policy,
    description="Controls lights, doors and thermostats by room.",
)
