#!/usr/bin/env python3
"""Upload target for the integration tests: PUT stores the body, POST parses multipart/form-data and
stores every part; each request is logged as a JSON line. /sink reads and drops the body (for the
benchmark: nothing kept, 204 once all of it arrived). Fault injection by query parameters:
rate=BYTES (read the body that slowly), status=CODE&times=N (answer CODE to the first N requests; with body=TEXT,
with TEXT as it is rather than JSON), endless=1 (answer 201 with a body that never ends, for at most 60 s), redirect=PATH&code=CODE (read the body, then answer CODE, 307 by default, to PATH; "self": to this same URL)."""
import argparse, hashlib, json, os, sys, threading, time
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

parser = argparse.ArgumentParser()
parser.add_argument("--address", required=True)
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--dir", required=True)
parser.add_argument("--log", required=True)
args = parser.parse_args()
counts, lock = {}, threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def record(self, status, received, completed, extra=None):
        entry = {"method": self.command, "path": urlsplit(self.path).path, "query": urlsplit(self.path).query,
                 "status": status, "received": received, "completed": completed,
                 "contentType": self.headers.get("Content-Type"), "authorization": self.headers.get("Authorization") is not None}
        entry.update(extra or {})
        with lock, open(args.log, "a") as log:
            log.write(json.dumps(entry, sort_keys=True) + "\n")

    def answer(self, status, body):
        """Answers `body`: a str as it is (UTF-8), else as JSON."""
        data = body.encode() if isinstance(body, str) else json.dumps(body, sort_keys=True).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self, rate):
        length, received, chunks = int(self.headers.get("Content-Length", "0")), 0, []
        while received < length:
            chunk = self.rfile.read(min(65536, length - received))
            if not chunk:
                break
            chunks.append(chunk)
            received += len(chunk)
            if rate:
                time.sleep(len(chunk) / rate)
        return b"".join(chunks), received == length

    def sink(self):
        length, received = int(self.headers.get("Content-Length", "0")), 0
        while received < length:
            chunk = self.rfile.read(min(1 << 20, length - received))
            if not chunk:
                break
            received += len(chunk)
        self.send_response(204 if received == length else 400)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.record(204, received, received == length)

    def endless(self, received):
        """A 201 whose body (no length, connection close) never ends: the client must stop reading by itself."""
        self.close_connection = True
        self.send_response(201)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Connection", "close")
        self.end_headers()
        sent, deadline = 0, time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                self.wfile.write(b"x" * 4096)
                self.wfile.flush()
                sent += 4096
                time.sleep(0.01)
        except OSError:
            pass
        self.record(201, received, True, {"answerBytes": sent})

    def handle_upload(self):
        if urlsplit(self.path).path == "/sink":
            return self.sink()
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        key = self.path
        with lock:
            counts[key] = counts.get(key, 0) + 1
            count = counts[key]
        if "status" in query and count <= int(query.get("times", "1")):
            self.close_connection = True
            self.answer(int(query["status"]), query.get("body", {"error": "injected"}))
            self.record(int(query["status"]), 0, False)
            return
        body, complete = self.read_body(int(query.get("rate", "0")))
        if not complete:
            self.record(0, len(body), False)
            self.close_connection = True
            return
        name = os.path.basename(urlsplit(self.path).path) or "upload"
        if "redirect" in query:
            code = int(query.get("code", "307"))
            self.send_response(code)
            self.send_header("Location", self.path if query["redirect"] == "self" else query["redirect"])
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.record(code, len(body), True)
            return
        if query.get("endless") == "1":
            return self.endless(len(body))
        if self.command == "PUT":
            with open(os.path.join(args.dir, name), "wb") as out:
                out.write(body)
            summary = {"received": len(body), "sha256": hashlib.sha256(body).hexdigest()}
            self.answer(201, summary)
            self.record(201, len(body), True, summary)
            return
        message = BytesParser(policy=policy.HTTP).parsebytes(
            b"Content-Type: " + self.headers.get("Content-Type", "").encode() + b"\r\n\r\n" + body)
        fields, files = {}, {}
        for part in message.iter_parts():
            field = part.get_param("name", header="content-disposition")
            filename = part.get_param("filename", header="content-disposition")
            content = part.get_payload(decode=True)
            if filename is None:
                fields[field] = content.decode()
            else:
                with open(os.path.join(args.dir, name + "." + field), "wb") as out:
                    out.write(content)
                files[field] = {"filename": filename, "contentType": part.get_content_type(), "size": len(content),
                                "sha256": hashlib.sha256(content).hexdigest()}
        summary = {"fields": fields, "files": files, "multipart": message.is_multipart()}
        self.answer(200, summary)
        self.record(200, len(body), True, summary)

    do_PUT = handle_upload
    do_POST = handle_upload


server = ThreadingHTTPServer((args.address, args.port), Handler)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
