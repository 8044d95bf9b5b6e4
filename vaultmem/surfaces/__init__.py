"""Surfaces over the public API (MCP server, Hermes Agent provider): thin, imported only when used."""
