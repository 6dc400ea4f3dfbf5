"""The Textual face of tui-eval: browse eval sets, run them, read verdicts, all from the keyboard."""
