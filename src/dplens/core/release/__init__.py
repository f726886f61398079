"""Releasing: exports and their metadata, gradual release, recipes and session configs."""
