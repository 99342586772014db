#!/usr/bin/env python3
"""qinfer-server's endpoints with a real HTTP client (http.client), against independent results:
  completions: the text and prompt tokens of `run --json` for the same prompt, greedy and seeded;
  chat: run's continuation of the conversation formatted by qinfer-chat-template;
  streaming: the same text in well-formed Server-Sent Events ending with [DONE];
  stop strings: the greedy text cut before the stop string, streamed or not;
  embeddings: the cosines the `embed` example (the C++ API) prints;
  tokenize: qinfer-tokenize's ids;
plus the error objects (400, 401, 404, 413, 503), the API key, the prompt cache, /metrics,
cancellation when a client disconnects, and SIGTERM during a stream.

Usage: server_check.py BIN_DIR DATA_DIR
"""
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time

from checks import check, summary
from server_proc import Server


def is_error(status, body, code):
    return (status == code and isinstance(body, dict) and isinstance(body.get("error"), dict)
            and body["error"].get("code") == code and isinstance(body["error"].get("message"), str))


# Generous: under ctest -j2 another test's threads share the two cores, and OpenMP teams
# that oversubscribe them can make a 200-token generation take over 10 s (seen: the slot was
# still busy, not yet at the write that finds the client gone).
def wait_for(srv, done, seconds=90):
    """Polls /metrics until done(metrics) holds; a loaded machine (CI, sanitizers) is slow."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if done(srv.metrics()):
            return True
        time.sleep(0.05)
    return False


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    b = lambda tool: os.path.join(bin_dir, tool)
    model = os.path.join(data, "models/wp-llama-Q4_0.gguf")
    run = lambda *args: json.loads(subprocess.run([b("run"), "-m", model, "--json", *args],
                                                  capture_output=True, check=True).stdout)
    prompt = "Once upon a time"

    srv = Server(b("qinfer-server"), model, "-np", "2", "-c", "512", "--max-body", "65536")
    try:
        # --- health, models ---
        st, body, _ = srv.get("/health")
        check("/health is ok", st == 200 and body == {"status": "ok"}, f"{st} {body}")
        st, body, _ = srv.get("/v1/models")
        check("/v1/models lists the file", st == 200 and body["object"] == "list"
              and body["data"][0]["id"] == "wp-llama-Q4_0.gguf"
              and body["data"][0]["object"] == "model", f"{st} {body}")

        r = subprocess.run([b("qinfer-server"), "-m", model, "--port", str(srv.port)],
                           capture_output=True, text=True, timeout=30)
        check("a port in use: one error line, exit 1", r.returncode == 1
              and r.stderr.strip().splitlines()[-1].startswith("error: cannot listen"), r.stderr)
        r = subprocess.run([b("qinfer-server"), "-m", model, "--port", "0",
                            "--chat-template", "no-such-template"],
                           capture_output=True, text=True, timeout=30)
        check("an unknown chat template: refused at start", r.returncode == 1
              and r.stderr.startswith("error: "), r.stderr)

        # --- completions against run ---
        ref = run("-p", prompt, "-n", "24", "--temp", "0")
        st, body, _ = srv.post("/v1/completions",
                               {"prompt": prompt, "max_tokens": 24, "temperature": 0})
        ch = body["choices"][0] if st == 200 else {}
        check("completion: run's greedy text", st == 200 and ch.get("text") == ref["text"],
              f"{st} {body} vs {ref['text']!r}")
        check("completion: object, finish_reason and usage",
              st == 200 and body["object"] == "text_completion" and ch["finish_reason"] == "length"
              and body["usage"]["prompt_tokens"] == len(ref["prompt_tokens"])
              and body["usage"]["completion_tokens"] == 24
              and body["usage"]["total_tokens"] == len(ref["prompt_tokens"]) + 24, f"{body}")
        seeded = run("-p", prompt, "-n", "24", "--temp", "0.9", "-s", "7")
        st, body, _ = srv.post("/v1/completions",
                               {"prompt": prompt, "max_tokens": 24, "temperature": 0.9, "seed": 7})
        check("completion: run's text for the same seed and temperature",
              st == 200 and body["choices"][0]["text"] == seeded["text"],
              f"{body} vs {seeded['text']!r}")
        st, body, _ = srv.post("/v1/completions", {"prompt": ref["prompt_tokens"],
                                                   "max_tokens": 24, "temperature": 0})
        check("completion: a prompt of token ids", st == 200
              and body["choices"][0]["text"] == ref["text"], f"{body}")
        st, body, _ = srv.post("/v1/completions", {"prompt": prompt, "max_tokens": 24,
                                                   "temperature": 0})
        check("completion: a repeated prompt is served from the slot's cache",
              st == 200 and body["usage"]["prompt_tokens_details"]["cached_tokens"]
              == len(ref["prompt_tokens"]) - 1 and body["choices"][0]["text"] == ref["text"],
              f"{body}")

        # --- streaming ---
        st, events, done = srv.stream("/v1/completions",
                                      {"prompt": prompt, "max_tokens": 24, "temperature": 0})
        text = "".join(e["choices"][0]["text"] for e in events)
        check("completion stream: run's text in text_completion events, then [DONE]",
              st == 200 and done and text == ref["text"]
              and all(e["object"] == "text_completion" for e in events)
              and events[-1]["choices"][0]["finish_reason"] == "length"
              and all(e["choices"][0]["finish_reason"] is None for e in events[:-1]),
              f"{st} {text!r} {done}")

        # --- chat against run on the formatted conversation ---
        messages = [{"role": "system", "content": "You tell stories."},
                    {"role": "user", "content": "Tell me about the sea."}]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(messages, f)
        formatted = subprocess.run([b("qinfer-chat-template"), "-m", model, "-f", f.name],
                                   capture_output=True, text=True, check=True).stdout
        os.unlink(f.name)
        chat_ref = run("-p", formatted, "--parse-special", "-n", "16", "--temp", "0",
                       "--no-conversation")
        st, body, _ = srv.post("/v1/chat/completions",
                               {"messages": messages, "max_tokens": 16, "temperature": 0})
        msg = body["choices"][0]["message"] if st == 200 else {}
        check("chat: run's continuation of the formatted conversation",
              st == 200 and body["object"] == "chat.completion" and msg["role"] == "assistant"
              and msg["content"] == chat_ref["text"]
              and body["usage"]["prompt_tokens"] == len(chat_ref["prompt_tokens"]),
              f"{body} vs {chat_ref}")
        st, events, done = srv.stream("/v1/chat/completions",
                                      {"messages": messages, "max_tokens": 16, "temperature": 0,
                                       "stream_options": {"include_usage": True}})
        deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
        text = "".join(d.get("content", "") for d in deltas)
        check("chat stream: role first, the same text in chunks, usage, [DONE]",
              st == 200 and done and deltas[0].get("role") == "assistant"
              and text == chat_ref["text"]
              and all(e["object"] == "chat.completion.chunk" for e in events)
              and events[-1]["usage"]["completion_tokens"] == 16, f"{events[-3:]} {done}")

        # --- stop strings, streamed or not ---
        long_ref = run("-p", prompt, "-n", "40", "--temp", "0")["text"]
        stop = long_ref[12:15]
        cut = long_ref[:long_ref.index(stop)]
        st, body, _ = srv.post("/v1/completions", {"prompt": prompt, "max_tokens": 40,
                                                   "temperature": 0, "stop": [stop]})
        check("stop string: the text before it, finish_reason stop", st == 200
              and body["choices"][0]["text"] == cut
              and body["choices"][0]["finish_reason"] == "stop", f"{body} vs {cut!r}")
        st, events, done = srv.stream("/v1/completions", {"prompt": prompt, "max_tokens": 40,
                                                          "temperature": 0, "stop": stop})
        text = "".join(e["choices"][0]["text"] for e in events)
        check("stop string streamed: no part of it is sent", st == 200 and done and text == cut,
              f"{text!r} vs {cut!r}")

        # --- embeddings against the embed example ---
        texts = ["the sea was calm", "a ship sailed", "the sea was calm"]
        st, body, _ = srv.post("/v1/embeddings", {"input": texts})
        vecs = [d["embedding"] for d in body["data"]] if st == 200 else []
        ex = subprocess.run([b("embed"), model, texts[0], texts[1]], capture_output=True,
                            text=True).stdout.split("\t")
        cos = sum(x * y for x, y in zip(vecs[0], vecs[1])) if vecs else None
        check("embeddings: one unit vector per input, the example's cosine",
              st == 200 and len(vecs) == 3 and all(len(v) == 256 for v in vecs)
              and all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-4 for v in vecs)
              and vecs[0] == vecs[2] and abs(cos - float(ex[0])) < 2e-4
              and body["usage"]["prompt_tokens"] > 0, f"{st} cos {cos} vs {ex}")

        # --- tokenize / detokenize against qinfer-tokenize ---
        ids = [int(t) for t in subprocess.run(
            [b("qinfer-tokenize"), "-m", model, "-p", "Hello world", "--ids"],
            capture_output=True, text=True, check=True).stdout.split()]
        st, body, _ = srv.post("/tokenize", {"content": "Hello world", "add_special": True})
        check("/tokenize: qinfer-tokenize's ids", st == 200 and body["tokens"] == ids,
              f"{body} vs {ids}")
        st, body, _ = srv.post("/detokenize", {"tokens": ids[1:]})
        check("/detokenize: the text back", st == 200 and body["content"] == " Hello world",
              f"{body}")

        # --- errors ---
        bad = [
            ("malformed JSON", "/v1/completions", None, "{\"prompt\": "),
            ("a body that is not an object", "/v1/completions", None, "[1, 2]"),
            ("a temperature that is a string", "/v1/completions",
             {"prompt": "x", "temperature": "hot"}, None),
            ("a negative max_tokens", "/v1/completions", {"prompt": "x", "max_tokens": -3}, None),
            ("a stop that is a number", "/v1/completions", {"prompt": "x", "stop": 5}, None),
            ("no prompt", "/v1/completions", {"max_tokens": 3}, None),
            ("a token id out of range", "/v1/completions", {"prompt": [1, 99999]}, None),
            ("n = 2", "/v1/completions", {"prompt": "x", "n": 2}, None),
            ("logprobs", "/v1/chat/completions",
             {"messages": [{"role": "user", "content": "x"}], "logprobs": True}, None),
            ("no messages", "/v1/chat/completions", {"messages": []}, None),
            ("a message without a role", "/v1/chat/completions",
             {"messages": [{"content": "x"}]}, None),
            ("a prompt longer than a slot's context", "/v1/completions",
             {"prompt": "the sea " * 400}, None),
            ("max_tokens past the context", "/v1/completions",
             {"prompt": prompt, "max_tokens": 1000}, None),
            ("embeddings without input", "/v1/embeddings", {}, None),
            ("tokenize without content", "/tokenize", {"text": 3}, None),
        ]
        for name, path, body, raw in bad:
            st, resp, _ = srv.post(path, body, raw=raw)
            check(f"400 for {name}", is_error(st, resp, 400)
                  and resp["error"]["type"] == "invalid_request_error", f"{st} {resp}")
        st, resp, _ = srv.get("/etc/passwd")
        check("404 with an error object outside the API", is_error(st, resp, 404), f"{st} {resp}")
        st, resp, _ = srv.post("/v1/completions", None, raw=json.dumps({"prompt": "x" * 70000}))
        check("413 for a body over --max-body", is_error(st, resp, 413), f"{st} {resp}")
        st, body, _ = srv.get("/health")
        check("still healthy after the bad requests", st == 200, f"{st}")

        # --- metrics ---
        # cpp-httplib calls the logger, which counts a request, after it has written the
        # response: the last requests' counts may land just after their clients go on, so the
        # counters are read again until they add up (a few seconds at most, under ASan on a
        # loaded machine).
        def adds_up(m):
            return (m.get("slots") == 2 and m.get("requests_processing") == 0
                    and m.get("tokens_predicted_total", 0) >= 24 * 5
                    and m.get("requests_errors_total", 0) >= len(bad) + 2
                    and m.get("prompt_tokens_cached_total", 0) >= len(ref["prompt_tokens"]) - 1)
        m = srv.metrics()
        for _ in range(50):
            if adds_up(m):
                break
            time.sleep(0.1)
            m = srv.metrics()
        check("/metrics: Prometheus counters that add up", adds_up(m), f"{m}")

        # --- a client that disconnects mid-stream frees its slot at once ---
        before = srv.metrics().get("tasks_cancelled_total", 0)
        s = socket.create_connection(("127.0.0.1", srv.port))
        req = json.dumps({"prompt": prompt, "stream": True, "ignore_eos": True,
                          "max_tokens": 200, "temperature": 0.8})
        s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                   f"\r\nContent-Length: {len(req)}\r\n\r\n{req}").encode())
        s.recv(200)
        s.close()
        check("a disconnected stream is cancelled and its slot freed",
              # Not just "no slot busy": right after the disconnect the task may still be
              # queued, not yet in a slot.
              wait_for(srv, lambda m: m.get("tasks_cancelled_total", 0) == before + 1
                       and m.get("requests_processing") == 0
                       and m.get("requests_deferred") == 0),
              f"{srv.metrics()}")
        st, body, _ = srv.post("/v1/completions", {"prompt": prompt, "max_tokens": 24,
                                                   "temperature": 0})
        check("the next request is served the same",
              st == 200 and body["choices"][0]["text"] == ref["text"], f"{body}")
    finally:
        code = srv.stop()
    check("SIGTERM: exit 0", code == 0, f"{code}")

    # --- API key ---
    srv = Server(b("qinfer-server"), model, "--api-key", "s3cret")
    try:
        st, resp, _ = srv.get("/v1/models")
        check("401 without the key", is_error(st, resp, 401)
              and resp["error"]["type"] == "authentication_error", f"{st} {resp}")
        st, resp, _ = srv.get("/v1/models", headers={"Authorization": "Bearer wrong"})
        check("401 with a wrong key", is_error(st, resp, 401), f"{st} {resp}")
        st, resp, _ = srv.post("/v1/completions", {"prompt": "x", "max_tokens": 2},
                               headers={"Authorization": "Bearer s3cret"})
        check("200 with the key", st == 200, f"{st} {resp}")
        st, _, _ = srv.get("/health")
        check("/health needs no key", st == 200, f"{st}")
    finally:
        srv.stop()

    # --- a full queue answers 503; SIGTERM during a stream ends it and exits 0 ---
    srv = Server(b("qinfer-server"), model, "-np", "1", "--queue", "0", "-c", "8192")
    long_req = {"prompt": prompt, "stream": True, "ignore_eos": True, "max_tokens": 8000}
    c = srv.conn()
    c.request("POST", "/v1/completions", body=json.dumps(long_req),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    first = r.readline()
    st, resp, _ = srv.post("/v1/completions", {"prompt": "x", "max_tokens": 2})
    check("503 when the slot is busy and the queue is full", first.startswith(b"data: ")
          and is_error(st, resp, 503) and resp["error"]["type"] == "unavailable_error",
          f"{first!r} {st} {resp}")
    code = srv.stop()
    rest = r.read().decode()
    check("SIGTERM mid-stream: the stream ends, exit 0", code == 0 and rest.endswith("[DONE]\n\n"),
          f"{code} {rest[-200:]!r}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
