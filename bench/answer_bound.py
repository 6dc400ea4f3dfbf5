"""Benchmark: one judge call answered by a gzip bomb (issue 23): time and peak memory of the call.

    python bench/answer_bound.py [--mib 1024]

The local fake Gemini server answers with about 1 MB of gzip that inflates to `--mib` MiB of zeros; the
real google-genai client asks once (no retries) in a child process, which prints the call's error and its
peak RSS. With the answer bound (judge/answer_size.py, 64 MB decoded) the call fails at once and the
child stays small; without it, the whole answer was inflated (measured before the bound: 3.15 GB peak
RSS and 19.7 s for a 1 GiB answer).
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.bounded import python  # noqa: E402
from tests.support.fake_gemini import FakeGemini, Reply  # noqa: E402

CHILD = """
import asyncio, resource, time
from tui_eval.judge.options import JudgeOptions
from tui_eval.judge.service import JudgeError, JudgeService

async def main():
    service = JudgeService(JudgeOptions(use_cache=False, max_retries=0))
    t0 = time.perf_counter()
    try:
        await service.ask(model="gemini-2.5-flash", contents="is this fine?")
        print("answer read whole")
    except JudgeError as exc:
        print("call error:", exc.reason[:120])
    print(f"call: {time.perf_counter() - t0:.2f} s")
    await service.aclose()

asyncio.run(main())
print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
"""


def gzip_bomb(mib: int) -> bytes:
    """Gzip of `mib` MiB of zeros: one full-flush block repeated (fast to build), then a valid trailer."""
    zeros = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    return first + block * (mib - 1) + b"\x03\x00" + struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="decoded size of the answer in MiB")
    args = parser.parse_args()
    bomb = gzip_bomb(args.mib)
    import socketserver

    # The client hangs up mid-answer (that is the point): the fake server need not print a traceback for it.
    socketserver.BaseServer.handle_error = lambda self, request, client_address: None  # type: ignore[method-assign]
    with FakeGemini() as server:
        server.default = Reply(body=bomb, headers={"Content-Encoding": "gzip"})
        t0 = time.perf_counter()
        done = python(CHILD, memory=8 * 1024**3, timeout=600,
                      env={"GOOGLE_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": server.base_url,
                           "GOOGLE_GENAI_USE_VERTEXAI": ""})
    print(f"answer: {len(bomb) / 1e6:.2f} MB of gzip, {args.mib} MiB decoded")
    print(done.out.strip() or done.err.strip()[-500:])
    print(f"child process: {time.perf_counter() - t0:.2f} s wall")


if __name__ == "__main__":
    main()
