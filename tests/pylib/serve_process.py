"""`vitattn serve` as a test runs it: started on 127.0.0.1 with --port 0 (the kernel picks a free
port, the server prints its URL first), stopped with SIGTERM, its log checked for sanitizer
reports. Shared by the end-to-end tests of the API and the browser tests of its pages."""
import http.client
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from harness import BIN, check_sanitizers


class Server:
    """`vitattn serve ARGS --port 0` until stop(); url, host, port from its first line."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([BIN, "serve", "--port", "0", *map(str, args)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline().strip()
        m = re.match(r"http://([0-9.]+):(\d+)/", line)
        assert m, f"the server prints its URL first (got {line!r}; stderr {self.proc.stderr.read()[-2000:] if not line else ''})"
        self.url, self.host, self.port = line, m.group(1), int(m.group(2))
        self.stderr = ""

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers dict, body bytes) through http.client (no redirects, no path rewriting)."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def raw(self, data, pause_then=None, read_timeout=15):
        """Sends raw bytes; optionally more pieces [(seconds, bytes)…]; returns what came back."""
        s = socket.create_connection((self.host, self.port), timeout=read_timeout)
        try:
            s.sendall(data)
            for wait, more in pause_then or []:
                time.sleep(wait)
                try:
                    s.sendall(more)
                except OSError:
                    break
            out = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except (socket.timeout, ConnectionResetError):
                    break
                if not chunk:
                    break
                out += chunk
                if b"\r\n\r\n" in out and b"}" in out:
                    break
            return out
        finally:
            s.close()

    def stop(self):
        """SIGTERM; returns the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, self.stderr = self.proc.communicate(timeout=30)  # text: the log must be UTF-8
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, self.stderr = self.proc.communicate()
        check_sanitizers(["serve"], self.stderr)
        return self.proc.returncode

    def vm_hwm_mb(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")
