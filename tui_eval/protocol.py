"""Every message that crosses between the engine and the processes that run agent code.

One closed, tagged union per direction of frozen, typed records (msgspec `Struct`s), one framing, a bound
on every message. The engine gives an agent process `Command`s; an agent process (a pool worker, the Ray
driver, relaying its Ray tasks) answers with `Report`s. Nothing that comes back is unpickled: a report is
decoded into exactly these types or refused, so no agent object, class or `__reduce__` reaches the engine.

Where a record is an ADK file shape (an eval case, a turn), the pydantic model is canonical: it crosses as
the JSON it is saved as, and is validated where it arrives (`schema.load`). Everything else is plain data.

A frame is `MAGIC`, the body's length and its CRC-32, then the msgpack body. A byte stream that agent code
wrote into (a stray `print` to the socket's descriptor) is caught at the next frame: a wrong magic, a
length over the bound or a checksum that does not match is a `ProtocolError` naming what was seen, never a
read of gigabytes or a wait for bytes that will not come.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from pathlib import Path
from typing import Any, Union

import msgspec

from .judge.client import JudgeStats
from .judge.options import JudgeOptions

__all__ = [
    "MAX_FRAME", "AgentLoaded", "CaseEnded", "CaseOutcome", "CaseSpec", "CancelCase", "Command", "LoadAgent",
    "ProtocolError", "ReloadAgent", "Report", "Retire", "RunCase", "Stop", "TurnFinished", "TurnStarted",
    "decode_command", "decode_report", "encode", "read_command", "read_report",
]

#: Bytes one message may take on the wire: a turn larger than this fails its own case, with the reason.
MAX_FRAME = 64 << 20
MAGIC = b"\xe7T"
_HEAD = struct.Struct(">2sII")
HEAD_SIZE = _HEAD.size


class ProtocolError(Exception):
    """What came over the wire is not a message of this protocol (a stray write, a torn frame, a foreign
    type, a message over the bound)."""


class _Record(msgspec.Struct, frozen=True, array_like=True, tag=True, forbid_unknown_fields=True):
    """A message: frozen, positional on the wire, tagged with its class name."""


# ---- what an agent process is asked to do (engine -> agent process) ---------------------------------


class CaseSpec(msgspec.Struct, frozen=True, array_like=True, forbid_unknown_fields=True):
    """Everything an agent process needs to answer one case."""

    eval_file: str
    eval_id: str
    #: The eval case as run, as the JSON its file holds (schema.model.EvalCase).
    case: bytes
    #: Seconds one turn may take before the case fails.
    turn_timeout: float
    #: A scenario (turns played by the user simulator), else `turns` static turns.
    scenario: bool = False
    turns: int = 0
    #: Scenario cases: the config whose user simulator settings apply, as JSON (schema.config.EvalConfig).
    config: bytes | None = None
    #: Scenario cases: how the agent process builds the user simulator's judge.
    judge: JudgeOptions | None = None
    #: --mock-tools: None, "strict" or "fallback".
    mock_tools: str | None = None


class LoadAgent(_Record, frozen=True):
    """Import the agent folder (once). `address`: the Ray cluster to join (the Ray driver only)."""

    folder: str
    address: str | None = None


class ReloadAgent(_Record, frozen=True):
    """The agent's files changed: load it again (the Ray driver packs it again)."""


class RunCase(_Record, frozen=True):
    """Run one case; `job` names it in every report about it."""

    job: int
    spec: CaseSpec


class CancelCase(_Record, frozen=True):
    job: int


class Stop(_Record, frozen=True):
    """End: cancel what runs, close the agent (its exit handlers run), exit."""


Command = Union[LoadAgent, ReloadAgent, RunCase, CancelCase, Stop]


# ---- what an agent process reports (agent process -> engine) ---------------------------------------


class AgentLoaded(_Record, frozen=True):
    """The answer to LoadAgent/ReloadAgent: the agent's name, or why it cannot be loaded."""

    name: str
    error: str | None = None


class TurnStarted(_Record, frozen=True):
    """Turn `index` of case `job` began (-1: opening the session)."""

    job: int
    index: int


class TurnFinished(_Record, frozen=True):
    """Turn `index` of case `job` finished: the actual turn, as JSON (`Invocation.to_wire`)."""

    job: int
    index: int
    invocation: bytes


class CaseOutcome(msgspec.Struct, frozen=True, array_like=True, forbid_unknown_fields=True):
    """How a case ended where the agent ran (its turns went back one by one)."""

    #: The reason on the first line, details below; None when every turn answered.
    error: str | None = None
    session_id: str = ""
    #: The user simulator failed (not the agent): the case is not evaluated rather than failed.
    simulator_failed: bool = False
    #: Seconds the conversation took where the agent ran.
    seconds: float = 0.0
    #: The agent's session state when the case ended, as JSON (None: not captured).
    final_session_state: bytes | None = None
    #: The content hash of the agent code that answered (what the process loaded: `agents.version`).
    agent_version: str = ""
    #: The files outside the agent's folder that `agent_version` covers (modules it imported from elsewhere).
    agent_outside: tuple[str, ...] = ()


class CaseEnded(_Record, frozen=True):
    """Case `job` ended; `judge`: the user simulator's judge counters since the last report."""

    job: int
    outcome: CaseOutcome
    judge: JudgeStats | None = None


class Retire(_Record, frozen=True):
    """This agent process ran out of memory (or nearly): the engine replaces it and runs the cases that were
    in it again, one by one; sent before the CaseEnded of the case that ran out."""


Report = Union[AgentLoaded, TurnStarted, TurnFinished, CaseEnded, Retire]


# ---- framing ----------------------------------------------------------------------------------------


def _enc_hook(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise NotImplementedError(f"{type(value).__name__} does not cross a process")


def _dec_hook(kind: type, value: Any) -> Any:
    if kind is Path and isinstance(value, str):
        return Path(value)
    raise NotImplementedError(f"{kind!r} does not cross a process")


_encoder = msgspec.msgpack.Encoder(enc_hook=_enc_hook)
_commands = msgspec.msgpack.Decoder(Command, dec_hook=_dec_hook)
_reports = msgspec.msgpack.Decoder(Report, dec_hook=_dec_hook)


def encode(message: Command | Report, *, limit: int = MAX_FRAME) -> bytes:
    """One message as a frame. Raises ProtocolError when it is larger than `limit`."""
    body = _encoder.encode(message)
    if len(body) > limit:
        raise ProtocolError(f"{type(message).__name__} of {len(body) / 1e6:.1f} MB is over the "
                            f"{limit / 1e6:.0f} MB bound of one message")
    return _HEAD.pack(MAGIC, len(body), zlib.crc32(body)) + body


def check_head(head: bytes, *, limit: int = MAX_FRAME) -> tuple[int, int]:
    """(length, checksum) of a frame from its head; ProtocolError when it is not one."""
    magic, size, crc = _HEAD.unpack(head)
    if magic != MAGIC:
        raise ProtocolError(f"bytes that are not a message of ours: {head[:24]!r}")
    if size > limit:
        raise ProtocolError(f"a message of {size / 1e6:.1f} MB announced, over the {limit / 1e6:.0f} MB bound")
    return size, crc


def check_body(body: bytes, crc: int) -> bytes:
    if zlib.crc32(body) != crc:
        raise ProtocolError("a message whose bytes do not match its checksum (something else wrote to the socket)")
    return body


def decode_report(body: bytes) -> Report:
    report: Report = _decode(_reports, body, "report")
    return report


def decode_command(body: bytes) -> Command:
    command: Command = _decode(_commands, body, "command")
    return command


def _decode(decoder: msgspec.msgpack.Decoder[Any], body: bytes, what: str) -> Any:
    try:
        return decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, NotImplementedError) as exc:
        raise ProtocolError(f"a message that is not a {what}: {exc}") from None


async def _read_body(reader: asyncio.StreamReader, limit: int) -> bytes | None:
    try:
        head = await reader.readexactly(HEAD_SIZE)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ProtocolError(f"a torn message: {exc.partial!r}") from None
        return None
    except ConnectionError:
        return None
    size, crc = check_head(head, limit=limit)
    try:
        body = await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        raise ProtocolError(f"the other side went in the middle of a message of {size} bytes") from None
    return check_body(body, crc)


async def read_report(reader: asyncio.StreamReader, *, limit: int = MAX_FRAME) -> Report | None:
    """The next report, or None when the other side has gone; ProtocolError for anything else."""
    body = await _read_body(reader, limit)
    return None if body is None else decode_report(body)


async def read_command(reader: asyncio.StreamReader, *, limit: int = MAX_FRAME) -> Command | None:
    """The next command, or None when the engine has gone."""
    body = await _read_body(reader, limit)
    return None if body is None else decode_command(body)
