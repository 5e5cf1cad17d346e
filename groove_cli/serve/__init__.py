"""`groove serve` and `groove mcp`: warm indexes behind MCP (stdio, streamable HTTP) and a plain
JSON HTTP API, the state file the command line forwards through, and the note watcher.

The light modules use the standard library only: `reach`, `state`, `client`, `codec` (the
command line's forwarding of a core call), so a forwarded `groove search` loads neither the
server (mcp, starlette, uvicorn) nor a model; `service`, `app`, `tools` and `watch` run inside
the server, never run the command line, and reach the engine through the public API
(`groove_cli.api`) only. docs/design/serve.md is the specification.
"""
