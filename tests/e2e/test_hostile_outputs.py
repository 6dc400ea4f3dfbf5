"""Outputs never clobber inputs or devices (issue 23): --json/--junit/--md naming an input is refused
before the run, a link to a device or a pipe is written through, and --md "$GITHUB_STEP_SUMMARY" appends.
Every run is a child bounded in time and memory."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.support.bounded import tui_eval
from tests.support.evalfiles import dice_pair


@pytest.mark.parametrize("flag", ["--json", "--junit", "--md"])
@pytest.mark.parametrize("which", ["eval", "recording", "config"])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path: Path, flag: str, which: str) -> None:
    golden, recorded = dice_pair(tmp_path)
    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    target = {"eval": golden, "recording": recorded, "config": config}[which]
    before = target.read_bytes()
    # Named through another spelling of the same file: a relative path from the folder.
    done = tui_eval("run", f"replay:{recorded}", str(golden), flag, f"./{target.name}", cwd=tmp_path)
    assert done.code == 2, (done.out, done.err)
    assert target.read_bytes() == before
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag} ./{target.name} is ") and "overwritten" in lines[0]
    assert not (tmp_path / ".adk").exists()  # refused before anything ran


def test_two_outputs_naming_one_file_are_refused(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    done = tui_eval("run", f"replay:{recorded}", str(golden), "--json", "out", "--junit", "out", cwd=tmp_path)
    assert done.code == 2 and "--junit out is also the --json output" in done.err


def test_an_output_through_a_link_to_stdout_is_printed_and_the_link_kept(tmp_path: Path) -> None:
    """`--json /dev/stdout` as root once replaced the /dev/stdout link with a file and printed nothing;
    a link of the test's own shows the same without touching the machine's /dev."""
    golden, recorded = dice_pair(tmp_path)
    link = tmp_path / "stdout.json"
    link.symlink_to("/dev/stdout")
    done = tui_eval("run", f"replay:{recorded}", str(golden), "--json", str(link), "-q", "--no-save", cwd=tmp_path)
    assert done.code == 1, done.err
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"
    start = done.out.index("[")
    results = json.loads(done.out[start:done.out.index("\n]", start) + 2])
    assert results[0]["eval_set_id"] == "golden"


def test_junit_into_a_fifo_reaches_its_reader(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    fifo = tmp_path / "junit.pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    # Opened non-blocking before the run, so the reader never waits on a writer that never comes.
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

    def read() -> None:
        import select
        import time
        deadline = time.monotonic() + 60
        seen_writer = False
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if chunk:
                got.append(chunk)
                seen_writer = True
            elif seen_writer:
                return  # the writer closed
            else:
                time.sleep(0.05)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        done = tui_eval("run", f"replay:{recorded}", str(golden), "--junit", str(fifo), "-q", "--no-save",
                        cwd=tmp_path)
        reader.join(70)
    finally:
        os.close(fd)
    assert done.code == 1, done.err
    assert fifo.exists() and not fifo.is_file()  # still a FIFO
    assert b"<testsuite" in b"".join(got)


def test_md_to_the_github_step_summary_appends(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    summary = tmp_path / "step_summary.md"
    summary.write_text("## an earlier step\n")
    done = tui_eval("run", f"replay:{recorded}", str(golden), "--md", str(summary), "-q", "--no-save",
                    cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.code == 1, done.err
    text = summary.read_text()
    assert text.startswith("## an earlier step\n") and "## tui-eval" in text
    # Without the variable, --md replaces the file as before.
    done = tui_eval("run", f"replay:{recorded}", str(golden), "--md", str(summary), "-q", "--no-save",
                    cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": ""})
    assert not summary.read_text().startswith("## an earlier step")
