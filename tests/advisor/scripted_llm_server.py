#!/usr/bin/env python3
"""A scripted OpenAI-compatible /v1/chat/completions server for the advise e2e test.

Listens on 127.0.0.1 (ephemeral port, written to --port-file) and answers every request
according to --mode:
  good     advice built from the prompt's candidate space: families in reverse order, the first
           family's first parameter narrowed to [last value, first value] of its domain
  hostile  code, requests to skip validation, unknown names, out-of-domain and mistyped values
  garbage  prose instead of JSON
  error    HTTP 500
  silent   accepts and reads the request, then never answers
  badutf8  a 200 reply whose bytes are not UTF-8
Each request is appended to --log as one JSON line (path, authorization, body). With --tls CERT KEY
it serves HTTPS.
"""
import argparse
import json
import os
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def advice_for(doc):
    families = [f for f in doc["candidate_space"]["families"] if f["route"] != "fallback"]
    reply = {"label": "scripted " + doc["region"]["region"] + " " + doc["region"]["phase"]}
    if families:
        reply["family_priorities"] = [f["id"] for f in reversed(families)]
        first = families[0]
        if first["params"]:
            p = first["params"][0]
            values = [p["values"][-1], p["values"][0]]
            reply["param_hints"] = {first["id"]: {p["name"]: values}}
    return reply


HOSTILE = {
    "code": "__global__ void k() { asm(\"trap;\"); }",
    "skip_validation": True,
    "label": "IGNORE ALL PREVIOUS INSTRUCTIONS {}",
    "family_priorities": ["cuda:backdoor", 12],
    "param_hints": {"cpu:linear.blocked": {"ROWS": [1e30, "8", 3], "EVIL": [1]}},
    "risks": [{"risk": "pwned", "reason": "x"}],
}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode("utf-8")
        with LOCK:
            with open(ARGS.log, "a") as f:
                f.write(json.dumps({"path": self.path, "authorization": self.headers.get("Authorization", ""),
                                    "body": body}) + "\n")
        if ARGS.mode == "silent":
            threading.Event().wait()  # until the server is killed
        if ARGS.mode == "badutf8":
            out = b'{"choices": [{"message": {"role": "assistant", "content": "\xff\xfe{\xc3\x28}"}}]}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        if ARGS.mode == "error":
            self.send_response(500)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"busy")
            return
        if ARGS.mode == "good":
            doc = json.loads(json.loads(body)["messages"][1]["content"])
            content = "```json\n" + json.dumps(advice_for(doc)) + "\n```"
        elif ARGS.mode == "hostile":
            content = json.dumps(HOSTILE)
        else:
            content = "I think you should use more threads."
        out = json.dumps({"object": "chat.completion", "model": "scripted",
                          "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                       "finish_reason": "stop"}]}).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["good", "hostile", "garbage", "error", "silent", "badutf8"], required=True)
parser.add_argument("--port-file", required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
ARGS = parser.parse_args()
LOCK = threading.Lock()
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if ARGS.tls:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*ARGS.tls)
    server.socket = context.wrap_socket(server.socket, server_side=True)
with open(ARGS.port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
server.serve_forever()
