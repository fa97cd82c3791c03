"""Bridges to the tools people already account privacy with (imported on first use: no optional
dependency is imported here)."""
