"""A stdio MCP server written from the MCP specification (2025-06-18, server/tools: "Structured Content", "Output
Schema", "Resource Links"), without an SDK: `counted` declares an outputSchema and returns conforming
structuredContent beside a text block and a `resource_link`; `drifted` declares the same outputSchema and returns
structuredContent that does not conform to it (a server bug the spec says clients SHOULD validate). Each answer
carries the server's pid, so a test sees whether the server was restarted."""

from __future__ import annotations

import json
import os
import sys

SCHEMA = {"type": "object", "properties": {"pods": {"type": "integer"}, "pid": {"type": "integer"}},
          "required": ["pods", "pid"]}
TOOLS = [{"name": name, "description": f"{name} pods.", "inputSchema": {"type": "object", "properties": {}},
          "outputSchema": SCHEMA, "annotations": {"readOnlyHint": True}} for name in ("counted", "drifted")]


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(name: str) -> dict[str, object]:
    structured = {"pods": 3, "pid": os.getpid()} if name == "counted" else {"pods": "three", "pid": str(os.getpid())}
    return {"content": [{"type": "text", "text": json.dumps(structured)},
                        {"type": "resource_link", "uri": "file:///var/log/pods.log", "name": "pods.log",
                         "description": "the pod log", "mimeType": "text/plain", "size": 1024}],
            "structuredContent": structured, "isError": False}


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    method, rid = request.get("method"), request.get("id")
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", "2025-06-18")
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": version, "capabilities": {"tools": {}},
                                                       "serverInfo": {"name": "schema", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "result": result(request.get("params", {}).get("name", ""))})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
