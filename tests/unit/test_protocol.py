"""The wire between the engine and an agent process: typed records in checked frames, nothing unpickled."""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path

import pytest

from tui_eval.judge.client import JudgeStats
from tui_eval.judge.options import JudgeOptions
from tui_eval.protocol import (MAX_FRAME, AgentLoaded, CaseEnded, CaseOutcome, CaseSpec, ProtocolError, RunCase,
                               TurnFinished, encode, read_command, read_report)


def _reader(*chunks: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    for chunk in chunks:
        reader.feed_data(chunk)
    reader.feed_eof()
    return reader


async def _reports(*chunks: bytes) -> list[object]:
    reader = _reader(*chunks)
    out: list[object] = []
    while (report := await read_report(reader)) is not None:
        out.append(report)
    return out


async def test_reports_arrive_whole_and_typed_in_order() -> None:
    ended = CaseEnded(7, CaseOutcome(error="boom", seconds=1.5, agent_version="abc"), JudgeStats(requests=3))
    frames = encode(AgentLoaded("dice")) + encode(TurnFinished(7, 0, b'{"user_content": {}}')) + encode(ended)
    # Split at awkward places, as a socket may deliver them.
    assert await _reports(frames[:5], frames[5:31], frames[31:]) == [
        AgentLoaded("dice"), TurnFinished(7, 0, b'{"user_content": {}}'), ended]


async def test_a_command_carries_the_judge_settings_whole() -> None:
    options = JudgeOptions(concurrency=3, base_url="http://127.0.0.1:9", cache_dir=Path("/tmp/x"))
    command = RunCase(1, CaseSpec("a.evalset.json", "c1", b"{}", 30.0, judge=options))
    got = await read_command(_reader(encode(command)))
    assert got == command
    assert isinstance(got, RunCase) and got.spec.judge is not None and got.spec.judge.cache_dir == Path("/tmp/x")


async def test_a_stray_line_is_refused_at_once_naming_what_was_written() -> None:
    with pytest.raises(ProtocolError, match="not a message of ours: b.hello from"):
        await _reports(encode(AgentLoaded("dice")) + b"hello from the tool\n" + encode(AgentLoaded("x")))


async def test_a_head_announcing_more_than_the_bound_is_refused_without_reading_it() -> None:
    frame = bytearray(encode(AgentLoaded("dice")))
    frame[2:6] = (MAX_FRAME + 1).to_bytes(4, "big")
    with pytest.raises(ProtocolError, match="over the 67 MB bound"):
        await _reports(bytes(frame))


async def test_bytes_written_into_a_frame_break_its_checksum() -> None:
    frame = bytearray(encode(TurnFinished(1, 0, b"x" * 100)))
    frame[40:45] = b"oops!"
    with pytest.raises(ProtocolError, match="checksum"):
        await _reports(bytes(frame))


async def test_a_torn_frame_is_an_error_not_an_end() -> None:
    frame = encode(TurnFinished(1, 0, b"x" * 100))
    with pytest.raises(ProtocolError, match="went in the middle"):
        await _reports(frame[:50])


class _Sneaky:
    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(Path(_MARKER[0])), "w"))


_MARKER: list[str] = []


async def test_a_pickle_in_a_well_formed_frame_is_refused_and_never_run(tmp_path: Path) -> None:
    import struct
    import zlib

    _MARKER[:] = [str(tmp_path / "ran")]
    body = pickle.dumps(("done", 1, _Sneaky()))
    frame = struct.pack(">2sII", b"\xe7T", len(body), zlib.crc32(body)) + body
    with pytest.raises(ProtocolError, match="not a report"):
        await _reports(frame)
    assert not (tmp_path / "ran").exists()


async def test_a_command_is_not_a_report() -> None:
    with pytest.raises(ProtocolError, match="not a report"):
        await _reports(encode(RunCase(1, CaseSpec("a", "b", b"{}", 1.0))))


def test_a_message_over_the_bound_is_not_sent() -> None:
    with pytest.raises(ProtocolError, match="over the 1 MB bound"):
        encode(TurnFinished(1, 0, b"x" * 2_000_000), limit=1_000_000)
