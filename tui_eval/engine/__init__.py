"""The run engine: plans runs, infers and scores with bounded concurrency, emits events, stores results."""
