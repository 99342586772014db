#!/usr/bin/env python3
"""A bounded load test of qinfer-server on loopback.

Phase 1: 200 requests from 16 concurrent clients (completions and chat, streamed and not,
random lengths and seeds) against 4 slots: every response must be 200 and well-formed (valid
JSON or Server-Sent Events ending with [DONE], the usage adding up); prints p50/p99 latency and
the total tokens/s.
Phase 2: 48 clients that start a stream and disconnect after the first event: afterwards no slot
may stay busy and the server must answer a normal request.

Usage: server_load.py BIN_DIR DATA_DIR [REQUESTS] [CONCURRENCY]
"""
import concurrent.futures
import json
import os
import random
import socket
import sys
import time

from checks import check, summary
from server_proc import Server


def one_request(srv, i):
    """(ok, detail, latency seconds, completion tokens) of request number i."""
    rng = random.Random(i)
    chat = rng.random() < 0.5
    stream = rng.random() < 0.5
    n = rng.randint(4, 48)
    body = {"max_tokens": n, "temperature": 0.8, "seed": i}
    if chat:
        path = "/v1/chat/completions"
        body["messages"] = [{"role": "user", "content": f"Tell story number {i}."}]
    else:
        path = "/v1/completions"
        body["prompt"] = rng.choice(["Once upon a time", "The sea", "In the morning the king"])
    t0 = time.time()
    try:
        if stream:
            body["stream_options"] = {"include_usage": True}
            st, events, done = srv.stream(path, body)
            if st != 200 or not done or not events:
                return False, f"{st} {events}", 0, 0
            usage = events[-1].get("usage", {})
            finals = [e for e in events if e["choices"] and e["choices"][0]["finish_reason"]]
            ok = (len(finals) == 1 and finals[0]["choices"][0]["finish_reason"] in ("stop", "length")
                  and usage.get("completion_tokens", 0) <= n)
            return ok, f"{events[-2:]}", time.time() - t0, usage.get("completion_tokens", 0)
        st, resp, _ = srv.post(path, body)
        if st != 200:
            return False, f"{st} {resp}", 0, 0
        u = resp["usage"]
        ch = resp["choices"][0]
        text = ch["message"]["content"] if chat else ch["text"]
        ok = (isinstance(text, str) and ch["finish_reason"] in ("stop", "length")
              and u["completion_tokens"] <= n
              and u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
              and (ch["finish_reason"] == "stop" or u["completion_tokens"] == n))
        return ok, f"{resp}", time.time() - t0, u["completion_tokens"]
    except Exception as e:  # a broken response is a failed request, reported below
        return False, repr(e), 0, 0


def disconnecting_client(srv, i):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    body = json.dumps({"prompt": "Once upon a time", "stream": True, "ignore_eos": True,
                       "max_tokens": 400, "seed": i})
    s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    got = b""
    while b"data: " not in got:  # mid-stream: after the first event
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    s.close()
    return got.startswith(b"HTTP/1.1 200") and b"data: " in got


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    n_requests = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    concurrency = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    model = os.path.join(data, "models/wp-llama-Q4_0.gguf")
    srv = Server(os.path.join(bin_dir, "qinfer-server"), model, "-np", "4", "-c", "2048")
    try:
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(lambda i: one_request(srv, i), range(n_requests)))
        wall = time.time() - t0
        failed = [(i, r[1]) for i, r in enumerate(results) if not r[0]]
        lat = sorted(r[2] for r in results if r[0])
        tokens = sum(r[3] for r in results)
        if lat:
            p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
            print(f"{n_requests} requests, {concurrency} concurrent: p50 {p(0.5) * 1000:.0f} ms, "
                  f"p99 {p(0.99) * 1000:.0f} ms, {tokens} tokens in {wall:.2f} s = "
                  f"{tokens / wall:.0f} tokens/s")
        check(f"{n_requests} requests, {concurrency} at once: none failed", not failed,
              f"{len(failed)} failed, first: {failed[:2]}")
        deadline = time.time() + 10  # a stream ends at its client before the counters move
        while time.time() < deadline and srv.metrics().get("requests_processing") != 0:
            time.sleep(0.05)
        m = srv.metrics()
        check("the server counted every generated token",
              m.get("tokens_predicted_total") == tokens, f"{m} vs {tokens}")

        before = m.get("tasks_cancelled_total", 0)
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            started = list(pool.map(lambda i: disconnecting_client(srv, i), range(48)))
        check("48 streams started, then their clients disconnected", all(started),
              f"{started}")
        deadline = time.time() + 15
        while time.time() < deadline and srv.metrics().get("requests_processing") != 0:
            time.sleep(0.05)
        m = srv.metrics()
        check("no slot stays busy after the disconnects",
              m.get("requests_processing") == 0 and m.get("requests_deferred") == 0, f"{m}")
        check("most disconnected streams were cancelled, not run to the end",
              m.get("tasks_cancelled_total", 0) - before >= 24, f"{m}")
        ok, detail, _, _ = one_request(srv, 0)
        check("the server answers afterwards", ok, detail)
    finally:
        code = srv.stop()
    check("SIGTERM: exit 0", code == 0, f"{code}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
