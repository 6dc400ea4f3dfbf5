"""Shared test helpers: the fake Gemini server and friends."""
