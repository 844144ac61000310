"""A fake Hugging Face hub on 127.0.0.1 (port 0; nothing leaves the machine), for the tests
that fetch hf:ORG/NAME models: tests/oracle/test_hf_hub.py (the hub's protocol, the cache,
failures) and tests/oracle/test_hf_families.py (one repository per checkpoint family).

It speaks the hub's URL scheme and headers: HEAD/GET /ORG/NAME/resolve/REV/FILE answer with
X-Repo-Commit and ETag (the git blob sha1) for small files, and for LFS files a 302 to a
CDN-like /cdn/<sha256> path on another host name (localhost) with X-Linked-Etag and
X-Linked-Size; missing things get 404 + X-Error-Code (RepoNotFound, RevisionNotFound,
EntryNotFound), a gated repository 401 + GatedRepo without the right Bearer token.
"""
import hashlib
import http.server
import os
import re
import socket
import threading


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def commit_of(text):
    return hashlib.sha1(text.encode()).hexdigest()


class Hub:
    """repos: {"org/name": {"refs": {rev: commit}, "files": {commit: {file: bytes}}, "lfs": {file}, "gated": token}}"""

    def __init__(self):
        self.repos = {}
        self.log = []         # (method, path, headers dict)
        self.drop_once = set()  # sha256 of blobs whose first GET stops half way
        self.corrupt = set()    # sha256 of blobs served with one byte changed
        self.delay = 0.0
        self.lock = threading.Lock()
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self.answer(body=False)

            def do_GET(self):
                self.answer(body=True)

            def send(self, status, headers, data=b"", body=True):
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if body and data:
                    self.wfile.write(data)

            def answer(self, body):
                with hub.lock:
                    hub.log.append((self.command, self.path, dict(self.headers)))
                m = re.fullmatch(r"/cdn/([0-9a-f]{64})", self.path.split("?")[0])
                if m:
                    return self.cdn(m.group(1), body)
                m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", self.path)
                if not m:
                    return self.send(404, {"Content-Length": "0"})
                repo_id, rev, file = m.groups()
                repo = hub.repos.get(repo_id)
                if repo is None:
                    return self.send(401, {"X-Error-Code": "RepoNotFound", "Content-Length": "0"})
                if repo.get("gated") and self.headers.get("Authorization") != f"Bearer {repo['gated']}":
                    return self.send(401, {"X-Error-Code": "GatedRepo", "Content-Length": "0"})
                commit = repo["refs"].get(rev, rev if rev in repo["files"] else None)
                if commit is None:
                    return self.send(404, {"X-Error-Code": "RevisionNotFound", "Content-Length": "0"})
                data = repo["files"][commit].get(file)
                if data is None:
                    return self.send(404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": commit, "Content-Length": "0"})
                common = {"X-Repo-Commit": commit, "ETag": f'"{git_sha1(data)}"'}
                if file in repo["lfs"]:
                    sha = hashlib.sha256(data).hexdigest()
                    hub.blobs[sha] = data
                    return self.send(302, {**common, "X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(len(data)),
                                           "Location": f"http://localhost:{hub.port}/cdn/{sha}?expires=1",
                                           "Content-Length": "0"})
                self.send(200, {**common, "Content-Length": str(len(data))}, data, body)

            def cdn(self, sha, body):
                data = hub.blobs.get(sha)
                if data is None:
                    return self.send(404, {"Content-Length": "0"})
                if sha in hub.corrupt:
                    data = bytes([data[0] ^ 1]) + data[1:]
                start = 0
                rng = self.headers.get("Range")
                if rng:
                    start = int(re.fullmatch(r"bytes=(\d+)-", rng).group(1))
                part = data[start:]
                headers = {"Content-Length": str(len(part)), "Accept-Ranges": "bytes"}
                status = 200
                if rng:
                    status = 206
                    headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
                if not body:
                    return self.send(status, headers)
                self.send(status, headers)
                if hub.delay:
                    import time  # noqa: PLC0415
                    time.sleep(hub.delay)
                with hub.lock:
                    drop = sha in hub.drop_once
                    hub.drop_once.discard(sha)
                if drop:  # half the bytes, then the connection goes away
                    self.wfile.write(part[:len(part) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.wfile.write(part)

        self.blobs = {}
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, repo_id, files_by_rev, lfs=("model.safetensors", "pytorch_model.bin"), gated=None):
        repo = {"refs": {}, "files": {}, "lfs": set(lfs), "gated": gated}
        for rev, files in files_by_rev.items():
            commit = commit_of(repo_id + rev)
            repo["refs"][rev] = commit
            repo["files"][commit] = files
            for name, data in files.items():
                if name in lfs:
                    self.blobs[hashlib.sha256(data).hexdigest()] = data
        self.repos[repo_id] = repo
        return repo

    def requests(self):
        with self.lock:
            return list(self.log)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def hub_env(env):
    """harness.run_process's `env` for a run against the fake hub: this process's own hub
    settings (every HF_* variable, HUGGING_FACE_HUB_TOKEN) removed, then `env`'s set."""
    cleared = {k: None for k in os.environ if k.startswith("HF_") or k == "HUGGING_FACE_HUB_TOKEN"}
    return {**cleared, **env}


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: connections are refused
    return f"http://127.0.0.1:{port}"
