"""A stdio "MCP server" written from the protocol text that answers initialize and tools/list correctly, then answers
tools/call with a line that is not JSON-RPC (or, with `silent`, never answers it; with `stubborn`, also outlives
the end of its stdin and ignores SIGTERM). Used to check that a broken server ends in a clear ERROR instead of a
hang, and that a server cannot outlive the process that started it.
"""

from __future__ import annotations

import json
import signal
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "garbage"
TOOL = {"name": "status", "description": "Reports status.", "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True}}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    method, rid = request.get("method"), request.get("id")
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", "2025-06-18")
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": version, "capabilities": {"tools": {}},
                                                       "serverInfo": {"name": "garbage", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        if MODE in ("silent", "stubborn"):
            continue
        sys.stdout.write("this is not json-rpc {\n")
        sys.stdout.flush()
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})

if MODE == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(3600)
