"""Widgets of the dashboard: the eval browser, the run panel, and the turn view's parts."""
