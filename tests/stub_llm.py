"""A stand-in for an OpenAI-compatible model server on 127.0.0.1: scripted replies, no LLM.

Each POST to /v1/chat/completions is recorded and answered with the next scripted reply: a text,
or tool calls. A request asking to stream gets the same reply as server-sent events.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def text(content: str) -> dict[str, Any]:
    """A scripted assistant reply with text."""
    return {"content": content}


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted assistant reply calling one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


class StubLLM:
    """The server; `requests` holds every chat request body, in order."""

    def __init__(self, replies: list[dict[str, Any]]):
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> StubLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            return self.replies.pop(0) if self.replies else text("(the script has no more replies)")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - /v1/models and any probe
                self._json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply = stub._next(body)
                if body.get("stream"):
                    self._stream(reply)
                else:
                    self._json(200, _completion(reply))

            def _json(self, code: int, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, reply: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(reply):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def _calls(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": f"call_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for i, c in enumerate(reply.get("tool_calls") or [])]


_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _completion(reply: dict[str, Any]) -> dict[str, Any]:
    calls = _calls(reply)
    message = {"role": "assistant", "content": reply.get("content")}
    if calls:
        message["tool_calls"] = calls
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": "stub-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": _USAGE}


def _chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": "stub-model"}
    calls = _calls(reply)
    delta: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if calls:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(calls)]
    return [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}],
             "usage": _USAGE}]
