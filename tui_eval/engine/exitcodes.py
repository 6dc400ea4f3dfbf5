"""The exit codes every command gives (`run`, `watch`, `migrate`, `report`, `ces`): the one place they are spelt.

Imports nothing, so a command starts without loading the engine. SPEC section 6: 0 every case passed,
1 a case failed, 2 bad arguments, unreadable input or results that could not be written, 3 nothing
failed but the run is incomplete (`--strict` folds 3 into 1).
"""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
#: Results (eval history, --json, --junit, --md) that could not be written: output is lost, as with bad
#: input, so the same code (SPEC: "2 for ... results that could not be written").
EXIT_WRITE_FAILED = EXIT_BAD_INPUT
EXIT_INCOMPLETE = 3
#: Stopped by Ctrl-C where the command could not stop gracefully (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_INCOMPLETE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_WRITE_FAILED"]
