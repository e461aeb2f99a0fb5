"""Reusable views: the model config form, export helpers."""
