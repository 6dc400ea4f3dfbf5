"""Metrics: one module per criterion, registered by name in `metrics.base`."""

from .base import MetricInput, MetricSpec, get_metric, register, registered_metrics

__all__ = ["MetricInput", "MetricSpec", "get_metric", "register", "registered_metrics"]
