"""The Textual face of tui-eval: browse eval sets, run them, read verdicts, all from the keyboard."""

import os

# Repaint up to 120 times a second instead of Textual's 60: while the engine thread scores, a key's
# repaint otherwise waits for the next 1/60 s slot on top of its share of the GIL (bench/tui_latency.py:
# p95 key-to-paint 42-50 ms instead of 56-60 ms at ~450 events/s). Textual reads it once, at import;
# a value the user set wins.
os.environ.setdefault("TEXTUAL_FPS", "120")
