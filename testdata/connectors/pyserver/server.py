"""pyserver: a test MCP server (stdio, newline-delimited JSON-RPC) whose
tools need its requirements.txt dependency, so it only works when the
reconciler installed .pydeps and PYTHONPATH reaches the launch."""

import json
import os
import sys

import tinypkg

TOOLS = [
    {
        "name": "search",
        "description": "Answers every query with tinypkg's answer.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
    {
        "name": "env",
        "description": "Returns one environment variable, or <unset>.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
]


def result(msg_id, value):
    return {"jsonrpc": "2.0", "id": msg_id, "result": value}


def text(s):
    return {"content": [{"type": "text", "text": s}]}


def handle(msg):
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2024-11-05"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "pyserver", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        args = params.get("arguments") or {}
        if params.get("name") == "search":
            return text("%s: %d" % (args.get("q", ""), tinypkg.ANSWER))
        if params.get("name") == "env":
            return text(os.environ.get(args.get("name", ""), "<unset>"))
        raise KeyError(params.get("name"))
    raise NotImplementedError(method)


def main():
    print("pyserver starting, tinypkg from", tinypkg.__file__, file=sys.stderr, flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if "id" not in msg:
            continue  # a notification
        try:
            out = result(msg["id"], handle(msg))
        except Exception as e:  # noqa: BLE001 - report any failure to the client
            out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": repr(e)}}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
