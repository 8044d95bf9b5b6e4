"""Surfaces over the public API (Hermes Agent provider, MCP server): thin, each call one library call."""
