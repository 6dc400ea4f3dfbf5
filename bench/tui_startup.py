"""Time to first paint of the dashboard, in a real pseudo-terminal, on the demo and on 5,000 cases.

    python bench/tui_startup.py [--runs 5] [--size 80x24]

Starts `tui-eval PATH` in a pty (as a terminal would), and times from the spawn to the first frame on
screen (the browser's border title is drawn), then to the whole folder being loaded (the top bar's
"N eval files ·" line, drawn once the start-up scan is done). The 5,000-case folder (50 eval files of
100 two-turn cases with tool calls, plus a config) is generated under bench/.data/. The package is
byte-compiled first, as an installed copy is. A bare Textual app drawing one line is timed too, as the
floor any Textual app pays on the machine. Goals: first paint under 0.5 s on the demo and under 1 s
on 5,000 cases.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import select
import signal
import statistics
import struct
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / ".data"
TUI_EVAL = str(Path(sys.executable).with_name("tui-eval"))
FIRST_FRAME = b"Eval sets"


class PtyApp:
    """`tui-eval ARGS` in a pseudo-terminal of a given size; reads its output as a terminal would."""

    def __init__(self, args: list[str], size: tuple[int, int] = (80, 24), cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.args = args
        self.size = size
        self.cwd = cwd
        self.env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor", **(env or {})}
        self.out = bytearray()
        self.pid = -1
        self.fd = -1
        self.t0 = 0.0

    def start(self) -> PtyApp:
        self.t0 = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:  # the child: become tui-eval
            if self.cwd is not None:
                os.chdir(self.cwd)
            os.execvpe(TUI_EVAL, [TUI_EVAL, *self.args], self.env)
        self.pid, self.fd = pid, fd
        cols, rows = self.size
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        return self

    def read(self, timeout: float) -> bytes:
        """Whatever the app wrote within `timeout` seconds (b"" if nothing)."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return b""
        try:
            chunk = os.read(self.fd, 1 << 16)
        except OSError:
            return b""
        self.out += chunk
        return chunk

    def wait_for(self, marker: bytes, timeout: float = 20.0, since: int = 0) -> float:
        """Seconds from spawn until `marker` appears in the output after offset `since`."""
        deadline = time.perf_counter() + timeout
        while marker not in self.out[since:]:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{marker!r} not drawn within {timeout} s")
            self.read(0.01)
        return time.perf_counter() - self.t0

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def stop(self) -> None:
        if self.pid <= 0:
            return
        try:
            self.send(b"q")
            deadline = time.perf_counter() + 3
            while time.perf_counter() < deadline:
                self.read(0.05)
                done, _status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    break
            else:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass
        finally:
            os.close(self.fd)
            self.pid = -1


def make_big_folder(cases: int = 5000, per_file: int = 100) -> Path:
    """A folder of `cases` two-turn cases with tool calls (generated once, kept in bench/.data)."""
    folder = DATA / f"cases_{cases}"
    marker = folder / ".complete"
    if marker.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)

    def turn(i: int, j: int) -> dict:
        return {
            "invocation_id": f"c{i}-t{j}",
            "user_content": {"role": "user", "parts": [{"text": f"Turn {j} of case {i}: book a table for {i % 7 + 1}"}]},
            "final_response": {"role": "model", "parts": [{"text": f"Booked a table for {i % 7 + 1} at {18 + j}:00."}]},
            "intermediate_data": {"tool_uses": [{"name": "find_table", "args": {"people": i % 7 + 1, "hour": 18 + j}},
                                                {"name": "book", "args": {"table": f"T{i % 13}"}}],
                                  "tool_responses": [], "intermediate_responses": []},
        }

    for f in range(cases // per_file):
        eval_set = {
            "eval_set_id": f"set_{f:03d}",
            "eval_cases": [{"eval_id": f"case_{f:03d}_{k:03d}", "conversation": [turn(f * per_file + k, j) for j in range(2)],
                            "session_input": {"app_name": "bench", "user_id": "u", "state": {}}}
                           for k in range(per_file)],
        }
        (folder / f"set_{f:03d}.evalset.json").write_text(json.dumps(eval_set))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0,
                                                                       "response_match_score": 0.8}}))
    marker.write_text("")
    return folder


FLOOR_APP = """
from textual.app import App
from textual.widgets import Static
class Floor(App):
    def compose(self):
        yield Static("Eval sets")
Floor().run()
"""


def measure_floor(runs: int, size: tuple[int, int]) -> list[float]:
    """First paint of a bare Textual app drawing one Static: what any Textual app pays here."""
    script = DATA / "floor_app.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(FLOOR_APP)
    times = []
    for _ in range(runs):
        app = PtyApp([], size=size, cwd=ROOT)
        app.args = [str(script)]
        global TUI_EVAL
        saved, TUI_EVAL = TUI_EVAL, sys.executable
        try:
            app.start()
            times.append(app.wait_for(FIRST_FRAME))
        finally:
            TUI_EVAL = saved
            app.send(b"\x11")  # ctrl+q
            app.stop()
    return times


def ensure_bytecode() -> None:
    """Compile tui_eval to bytecode as `pip install` does (PYTHONDONTWRITEBYTECODE would otherwise make
    every start recompile the package, which no installed copy does)."""
    import compileall

    compileall.compile_dir(str(ROOT / "tui_eval"), quiet=1)


def measure(path: Path, loaded_marker: bytes, runs: int, size: tuple[int, int]) -> tuple[list[float], list[float]]:
    firsts, loads = [], []
    for _ in range(runs):
        app = PtyApp([str(path)], size=size, cwd=ROOT).start()
        try:
            firsts.append(app.wait_for(FIRST_FRAME))
            loads.append(app.wait_for(loaded_marker, timeout=120))
        finally:
            app.stop()
    return firsts, loads


def summary(name: str, values: list[float]) -> str:
    return (f"{name:<12} median {statistics.median(values) * 1000:7.0f} ms   min {min(values) * 1000:7.0f} ms   "
            f"max {max(values) * 1000:7.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size", default="80x24")
    args = parser.parse_args()
    size = tuple(int(n) for n in args.size.split("x"))
    ensure_bytecode()
    measure_floor(1, size)  # type: ignore[arg-type]
    floor = measure_floor(args.runs, size)  # type: ignore[arg-type]
    print(f"bare Textual app ({args.runs} runs, {args.size}): for reference")
    print("  " + summary("first paint", floor))
    # Warm the OS file cache and Python's bytecode cache once, as a second start of the app would be.
    for target, marker in ((ROOT / "demo_agents", b" eval files \xc2\xb7"), (make_big_folder(), b"50 eval files \xc2\xb7")):
        measure(target, marker, 1, size)  # type: ignore[arg-type]
        firsts, loads = measure(target, marker, args.runs, size)  # type: ignore[arg-type]
        label = "demo_agents" if target.name == "demo_agents" else "5,000 cases"
        print(f"{label} ({args.runs} runs, {args.size}, 2 cores)")
        print("  " + summary("first paint", firsts))
        print("  " + summary("all loaded", loads))


if __name__ == "__main__":
    main()
