"""`groove serve` and `groove mcp`: warm indexes behind MCP (stdio, streamable HTTP) and a plain
JSON HTTP API, the state file the command line forwards through, and the note watcher.

The light modules use the standard library only: `relay` (the `groove` script's way to a
running server, before the command line loads) and `state`, `client`, `codec` (the in-process
command line's forwarding), so a forwarded `groove search` loads neither the server (mcp,
starlette, uvicorn) nor a model; `service`, `app`, `tools`, `relayed` and `watch` run inside
the server and reach the engine through the public API
(`groove_cli.api`) only. docs/design/serve.md is the specification.
"""
