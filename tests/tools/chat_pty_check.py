#!/usr/bin/env python3
"""run -cnv in a pseudo-terminal, typed into as a person would: two turns, then Ctrl-C during
a long answer (which stops the answer, not the program), then /exit.

Checks, against independent truths:
  - the first reply equals `run --json` on the same turn formatted by qinfer-chat-template
    (the chat path adds nothing of its own);
  - the second turn evaluates only the new text: its prompt is the last sampled token plus the
    tokens of what the template adds (qinfer-chat-template + qinfer-tokenize), not the whole
    conversation again;
  - Ctrl-C ends the answer and the prompt comes back; /exit ends with status 0.

Usage: chat_pty_check.py BIN_DIR DATA_DIR
"""
import fcntl
import json
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import termios
import time

from checks import check, summary


class Terminal:
    def __init__(self, args):
        self.master, slave = pty.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.OPOST  # no \n -> \r\n
        attrs[3] &= ~termios.ECHO  # the typed text is not echoed back
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        self.err = tempfile.TemporaryFile()
        def controlling_terminal():  # as a shell does: ^C then reaches the program as SIGINT
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=self.err,
                                     preexec_fn=controlling_terminal)
        os.close(slave)
        self.buf = b""

    def read_until(self, marker, timeout=60):
        end = time.time() + timeout
        while marker not in self.buf:
            left = end - time.time()
            if left <= 0 or self.proc.poll() is not None and not select.select([self.master], [], [], 0)[0]:
                raise TimeoutError(f"no {marker!r} in {self.buf[-300:]!r}")
            if select.select([self.master], [], [], min(left, 0.5))[0]:
                try:
                    self.buf += os.read(self.master, 4096)
                except OSError:
                    pass
        at = self.buf.index(marker)
        out, self.buf = self.buf[:at], self.buf[at + len(marker):]
        return out.decode("utf-8", "replace")

    def type(self, text):
        os.write(self.master, text.encode())

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    b = lambda tool: os.path.join(bin_dir, tool)
    model = os.path.join(data, "models/stories260K.gguf")
    system, turn1, turn2 = "You are a storyteller.", "Tell me about Lily.", "And then?"
    common = ["-m", model, "--temp", "0", "-t", "1"]

    term = Terminal([b("run")] + common + ["-cnv", "-sys", system, "-n", "24", "--verbose-prompt"])
    try:
        term.read_until(b"> ")
        term.type(turn1 + "\n")
        reply1 = term.read_until(b"\n> ")
        term.type(turn2 + "\n")
        reply2 = term.read_until(b"\n> ")
        term.type("/exit\n")
        status = term.proc.wait(timeout=60)
    except Exception as e:  # a hang or an early exit is a failure, not a crash of the check
        term.proc.kill()
        check("run -cnv: two turns then /exit", False, f"{e}; stderr: {term.stderr()[-500:]}")
        return summary()
    check("run -cnv: two turns, /exit ends with status 0", status == 0 and reply1 and reply2,
          f"status {status}, replies {reply1!r} {reply2!r}")

    with tempfile.TemporaryDirectory() as tmp:
        def formatted(messages, gen):
            path = os.path.join(tmp, "m.json")
            json.dump(messages, open(path, "w"))
            args = [b("qinfer-chat-template"), "--template", "chatml", "-f", path]
            return subprocess.run(args + ([] if gen else ["--no-generation-prompt"]),
                                  capture_output=True, check=True).stdout.decode()

        msgs = [{"role": "system", "content": system}, {"role": "user", "content": turn1}]
        first = formatted(msgs, True)
        r = subprocess.run([b("run")] + common + ["-p", first, "--parse-special", "-n", "24", "--json"],
                           capture_output=True)
        want = json.loads(r.stdout)["text"] if r.returncode == 0 else None
        check("run -cnv: the first reply is the single-shot continuation of the formatted turn",
              reply1 == want, f"{reply1!r} vs {want!r}")

        msgs.append({"role": "assistant", "content": reply1})
        before = formatted(msgs, False)
        msgs.append({"role": "user", "content": turn2})
        delta = formatted(msgs, True)[len(before):]
        r = subprocess.run([b("qinfer-tokenize"), "-m", model, "-p", delta, "--ids", "--no-bos",
                            "--parse-special"], capture_output=True)
        n_delta = len(r.stdout.split())
        sizes = [int(n) for n in re.findall(r"prompt: (\d+) tokens", term.stderr())]
        check("run -cnv: the second turn evaluates only the new text (+ the last sampled token)",
              len(sizes) == 2 and sizes[1] == n_delta + 1, f"{sizes} vs {n_delta} + 1")

    # Ctrl-C during a long answer: the answer stops, the prompt returns, the program goes on.
    term = Terminal([b("run")] + common + ["-cnv", "-n", "-1", "--ignore-eos", "-c", "16384"])
    try:
        term.read_until(b"> ")
        term.type("Tell me a very long story.\n")
        term.read_until(b" ")  # the answer has started
        term.type("\x03")  # the terminal's interrupt character
        reply = term.read_until(b"\n> ")
        term.type("/exit\n")
        status = term.proc.wait(timeout=60)
        check("run -cnv: Ctrl-C stops the answer, not the program",
              "[interrupted]" in reply and status == 0, f"{reply[-200:]!r} status {status}")
    except Exception as e:
        term.proc.kill()
        check("run -cnv: Ctrl-C stops the answer, not the program", False, f"{e}")

    # EOF at the prompt ends the chat cleanly.
    r = subprocess.run([b("run")] + common + ["-cnv", "-n", "4"], input=b"hi\n", capture_output=True)
    check("run -cnv: EOF ends the chat with status 0", r.returncode == 0, r.stderr.decode()[-300:])

    return summary()


if __name__ == "__main__":
    sys.exit(main())
