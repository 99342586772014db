"""Starts qinfer-server on a free loopback port and talks to it with http.client."""
import http.client
import json
import re
import subprocess
import time


class Server:
    def __init__(self, binary, model, *args):
        self.proc = subprocess.Popen([binary, "-m", model, "--port", "0", "-q", *args],
                                     stderr=subprocess.PIPE, text=True)
        self.port = None
        deadline = time.time() + 30
        self.log = []
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("the server did not start: " + "".join(self.log))

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, raw=None):
        """(status, parsed JSON or text, headers) of one request on a fresh connection."""
        c = self.conn()
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        h = {"Content-Type": "application/json", **(headers or {})}
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
        return r.status, parsed, dict(r.getheaders())

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def stream(self, path, body, headers=None):
        """(status, [parsed events], saw [DONE]) of a streaming request."""
        c = self.conn()
        c.request("POST", path, body=json.dumps({**body, "stream": True}),
                  headers={"Content-Type": "application/json", **(headers or {})})
        r = c.getresponse()
        events, done = [], False
        if r.status != 200:
            return r.status, json.loads(r.read()), False
        for line in r.read().decode().split("\n"):
            if not line.startswith("data: "):
                continue
            payload = line[len("data: "):]
            if payload == "[DONE]":
                done = True
            else:
                events.append(json.loads(payload))
        c.close()
        return r.status, events, done

    def metrics(self):
        _, text, _ = self.get("/metrics")
        return {m.group(1): float(m.group(2))
                for m in re.finditer(r"^qinfer_(\w+) (\S+)$", text, re.M)}

    def stop(self, sig=None):
        """Sends SIGTERM (or `sig`); returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig or 15)
        try:
            code = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = "hung"
        if code != 0:  # show why (a sanitizer's report, an error line)
            print("server stderr:\n" + self.proc.stderr.read()[-20000:])
        return code
