"""Screens of the dashboard: the browser, a turn, the run history, help and confirmations."""
