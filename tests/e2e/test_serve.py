#!/usr/bin/env python3
"""`vitattn serve`: the API against the CLI, hostile requests, load, shutdown under load.

Each test starts the binary on a free loopback port (--port 0: the URL it prints says which)
and stops it with SIGTERM. The oracle is the CLI itself, run once per option set over every
image (one batch run): the server must answer byte for byte what the image command writes,
because it runs the same pipeline; the maps' math is checked against numpy elsewhere
(test_bundled_model.py, test_crosscheck.py). Only python's standard library talks HTTP here,
and raw sockets where the request must be malformed.
Run: python3 -m pytest tests/e2e/test_serve.py
"""
import http.client
import io
import json
import os
import re
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import zlib
from pathlib import Path

import cv2
import numpy as np

import safetensors_io
from harness import BIN, REPO, check_sanitizers, run_process, timm_tensors
from serve_process import Server

MODEL = REPO / "models" / "vit_cifar10_tintn.safetensors"
PHOTOS = [REPO / "images" / n for n in ("astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg")]


def status_of(raw):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", raw)
    return int(m.group(1)) if m else None


def cli_outputs(model_args, option_args, folder, out):
    """One batch run of the image command: {stem: (cls.npy bytes, attn.png bytes)}."""
    p = subprocess.run([BIN, *model_args, *option_args, "--save-attention", "-o", str(out), str(folder)],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    check_sanitizers(["cli"], p.stderr)
    assert p.returncode == 0, p.stderr[-2000:]
    return {q.name[:-len("_cls.npy")]: (q.read_bytes(), (out / (q.name[:-len("_cls.npy")] + "_attn.png")).read_bytes())
            for q in out.glob("*_cls.npy")}


# The API's parameters and the CLI's options for the same map.
CASES = [
    ("", []),
    ("layer=1&head=2", ["--layer", "1", "--head", "2"]),
    ("layer=-2&head=max", ["--layer", "-2", "--head", "max"]),
    ("method=rollout", ["--method", "rollout"]),
    ("method=chefer&class=3", ["--method", "chefer", "--class", "3"]),
    ("method=legrad", ["--method", "legrad"]),
    ("method=lrp&class=5", ["--method", "lrp", "--class", "5"]),  # the PNG: the signed pixel map, as the CLI's
]


def photo_folder(tmp, photos):
    """A folder of copies of `photos` for one CLI batch run: tmp/photos."""
    folder = tmp / "photos"
    folder.mkdir()
    for p in photos:
        (folder / p.name).write_bytes(p.read_bytes())
    return folder


def test_api_answers_what_the_cli_writes():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        photos = photo_folder(tmp, PHOTOS)
        server = Server("--model", MODEL)
        seeded = Server()
        try:
            for i, (query, options) in enumerate(CASES):
                expected = cli_outputs(["--model", str(MODEL)], options, photos, tmp / f"cli{i}")
                assert len(expected) == len(PHOTOS)
                for p in PHOTOS:
                    npy, png = expected[p.stem]
                    st, h, body = server.request("POST", f"/api/map?model=0&{query}", p.read_bytes())
                    assert st == 200 and h.get("Content-Type") == "application/octet-stream", (query, st, body[:200])
                    assert body == npy, f"{p.name} {query}: the .npy is the CLI's _cls.npy"
                    st, h, body = server.request("POST", f"/api/map?{query}&format=png", p.read_bytes())
                    assert st == 200 and h.get("Content-Type") == "image/png", (query, st, body[:200])
                    assert body == png, f"{p.name} {query}: the PNG is the CLI's overlay"
            expected = cli_outputs([], [], photos, tmp / "seeded")
            for p in PHOTOS:
                st, _, body = seeded.request("POST", "/api/map", p.read_bytes())
                assert st == 200 and body == expected[p.stem][0], f"{p.name}: the seeded model's map"
            # The oracle is not the server itself: the map is the class token's mean-over-heads row.
            st, _, body = server.request("POST", "/api/map", PHOTOS[1].read_bytes())
            attn = np.load(tmp / "cli0" / "chelsea_attn.npy")
            got = np.load(__import__("io").BytesIO(body))
            assert np.allclose(got, attn[:, 0, 1:].mean(0).reshape(8, 8), atol=1e-6)
        finally:
            assert server.stop() == 0
            assert seeded.stop() == 0


def test_class_and_head_take_the_clis_words_checked_against_the_model():
    """class= and head= take what --class and --head take (labels, lists, any case, all), resolved
    by the same function against the served model: a refusal names the model's own classes or
    heads, never a parser's range."""
    image = PHOTOS[1].read_bytes()
    server = Server("--model", MODEL)  # CIFAR-10: cat is 3, dog 5; 4 heads
    try:
        def answer(query):
            st, _, body = server.request("POST", f"/api/map?{query}", image)
            return st, body

        st, by_label = answer("method=chefer&class=cat&format=png")
        assert st == 200, by_label[:300]
        assert (st, by_label) == answer("method=chefer&class=3&format=png"), "class=cat is class 3"
        assert answer("method=chefer&class=%20Cat%20") == answer("method=chefer&class=3"), "any case, spaces trimmed"
        assert answer("head=MAX") == answer("head=max")
        refusals = {
            "class=lion": ("method=chefer&class=lion", "class lion: no class of", "closest"),
            "class=10": ("method=chefer&class=10", "class 10: ", "has classes 0…9"),
            "two classes": ("method=chefer&class=cat,dog", "class cat,dog: ", 'one of "cat" (3), "dog" (5)'),
            "head=all": ("head=all", "head all: ", "has heads 0…3: give one of them, or mean, max or min"),
            "head=4": ("head=4", "head 4: ", "heads 0…3"),
            "head=every": ("head=every", "head=every: expected ", "mean, max, min or all"),
        }
        for name, (query, starts, says) in refusals.items():
            st, body = answer(query)
            assert st == 400, (name, st, body[:200])
            message = json.loads(body)["error"]
            assert message.startswith(starts) and says in message, (name, message)
            assert not re.search(r"4095|16777216", message), (name, message)
    finally:
        assert server.stop() == 0


def random_vit(path, d, seed):
    """A random timm ViT of width d, not a multiple of 64, whose file does not say its head count:
    it opens only with --heads (d/64 is no count)."""
    safetensors_io.write(path, timm_tensors(d, 4, 2, 2, 2 * d, seed=seed), None, dtype="F32")
    return path


def test_each_model_is_served_with_the_settings_after_its_model():
    """Three entries with their own settings (the same file twice, with two head counts): each
    answers the CLI's map for the same settings, byte for byte, and the settings change the map
    (the equality is not that of two defaults)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        photos = photo_folder(tmp, PHOTOS[1:3])
        a, b = random_vit(tmp / "a.safetensors", 16, seed=1), random_vit(tmp / "b.safetensors", 24, seed=2)
        entries = [  # (file, its settings, its head count), in the server's order
            (a, ["--heads", "4", "--mean", "0.4,0.5,0.6", "--std", "0.2,0.25,0.3"], 4),
            (b, ["--heads", "2", "--img-size", "12", "--family", "timm", "--eps", "1e-5", "--gelu", "tanh",
                 "--pos-interp", "bicubic-corners"], 2),
            (a, ["--heads", "2"], 2),
        ]
        server = Server(*[x for f, settings, _ in entries for x in ("--model", f, *settings)])
        try:
            st, _, body = server.request("GET", "/api/models")
            assert st == 200
            assert [(m["name"], m["heads"]) for m in json.loads(body)] == [(str(f), h) for f, _, h in entries]
            maps = []
            for i, (f, settings, _) in enumerate(entries):
                expected = cli_outputs(["--model", str(f), *settings], [], photos, tmp / f"cli{i}")
                assert len(expected) == 2
                for stem, (npy, png) in expected.items():
                    image = (photos / f"{stem}.png").read_bytes()
                    st, _, got = server.request("POST", f"/api/map?model={i}", image)
                    assert st == 200 and got == npy, f"model={i} {stem}: the CLI's _cls.npy with {settings}"
                    st, _, got = server.request("POST", f"/api/map?model={i}&format=png", image)
                    assert st == 200 and got == png, f"model={i} {stem}: the CLI's overlay with {settings}"
                maps.append(np.load(io.BytesIO(expected["chelsea"][0])))
            assert maps[1].shape == (3, 3), "--img-size 12 of 4 px patches: a 3x3 grid, not the file's 2x2"
            assert not np.allclose(maps[0], maps[2]), "a.safetensors with 4 heads and its mean/std, and with 2 heads"
        finally:
            assert server.stop() == 0


def test_a_setting_out_of_place_or_that_does_not_fit_is_one_line():
    with tempfile.TemporaryDirectory() as tmp:
        a = random_vit(Path(tmp) / "a.safetensors", 16, seed=1)
        usage = {  # the arguments → what the one line says, before the pointer to serve's help
            ("--heads", "4", "--model", a): "error: --heads: given before any --model",
            ("--model", a, "--heads", "4", "--heads", "2"): f"error: --heads: given twice for --model {a}",
            ("--model", a, "--heads", "0"): "error: --heads: Value 0 not in range",
            ("--model", a, "--heads", "2", "--std", "0,1,1"): "error: --std: each value must be positive",
            ("--model", a, "--heads", "2", "--family", "nope"): "error: --family: nope not in",
            ("--model", a, "--heads", "2", "--model", a, "--pos-interp", "sideways"): "error: --pos-interp: sideways",
        }
        for args, start in usage.items():
            p = run_process("serve", "--port", "0", *args)
            lines = p.stderr.splitlines()
            assert p.returncode == 2 and len(lines) == 1, (args, p.returncode, p.stderr)
            assert lines[0].startswith(start) and lines[0].endswith("(see vitattn serve --help)"), (args, lines[0])
        misfits = {  # settings the model does not take: the model's own one line, as the image command's
            ("--model", a): f"error: --heads: {a}: d_model 16 is not a multiple of 64",
            ("--model", a, "--heads", "3"): f"error: --heads 3: {a}: 3 heads do not divide d_model 16",
            ("--model", a, "--heads", "2", "--img-size", "10"): f"error: --img-size 10: {a}: not a multiple of the patch size 4",
        }
        for args, start in misfits.items():
            p = run_process("serve", "--port", "0", *args)
            lines = p.stderr.splitlines()
            assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith(start), (args, p.returncode, p.stderr)
            assert p.stdout == "", "no URL: the server did not start"


def png_header_only(w, h):
    """A PNG that says it is w×h (a decompression bomb's header) with one tiny IDAT."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(b"IEND", b""))


def test_hostile_requests_are_refused_and_the_server_goes_on():
    image = PHOTOS[1].read_bytes()
    server = Server("--model", MODEL, "--max-upload-mb", "1", "--timeout", "2")
    secret = Server("--token", "s3cret", "--timeout", "2")
    try:
        host = f"{server.host}:{server.port}"
        hostile = {
            "wrong Host": server.request("GET", "/api/models", headers={"Host": "evil.example:80"})[0],
            "rebinding Host": server.request("POST", "/api/map", image, {"Host": f"evil.example:{server.port}"})[0],
            "foreign Origin": server.request("POST", "/api/map", image, {"Origin": "http://evil.example"})[0],
            "Origin of another port": server.request("POST", "/api/map", image,
                                                     {"Origin": f"http://{server.host}:{server.port + 1}"})[0],
            # Foreign origins that hold the server's own: the whole value must match, not a part.
            "Origin with ours as its prefix": server.request("POST", "/api/map", image,
                                                             {"Origin": f"http://{host}.evil.example"})[0],
            "Origin with our host in its path": server.request("POST", "/api/map", image,
                                                               {"Origin": f"http://evil/{host}"})[0],
            "Origin ending with ours": server.request("POST", "/api/report", image,
                                                      {"Origin": f"http://evil.example/http://{host}"})[0],
            "Origin with ours as its prefix, Expect: 100-continue": status_of(server.raw(
                f"POST /api/map HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}.evil.example\r\n"
                f"Expect: 100-continue\r\nContent-Length: {len(image)}\r\n\r\n".encode())),
            "body over the cap": status_of(server.raw(
                f"POST /api/map HTTP/1.1\r\nHost: {host}\r\nExpect: 100-continue\r\nContent-Length: {1 << 20 | 1}\r\n\r\n".encode())),
            "foreign Origin, Expect: 100-continue": status_of(server.raw(
                f"POST /api/map HTTP/1.1\r\nHost: {host}\r\nOrigin: http://evil.example\r\nExpect: 100-continue\r\n"
                f"Content-Length: {len(image)}\r\n\r\n".encode())),
            "Content-Length 1 GB": status_of(server.raw(
                f"POST /api/map HTTP/1.1\r\nHost: {host}\r\nContent-Length: 1000000000\r\n\r\n".encode())),
            "chunked body": status_of(server.raw(
                f"POST /api/map HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".encode())),
            "truncated multipart body": status_of(server.raw(
                f"POST /api/map HTTP/1.1\r\nHost: {host}\r\nContent-Type: multipart/form-data; boundary=xx\r\n"
                f"Content-Length: 500\r\n\r\n--xx\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nab".encode())),
            "truncated body": status_of(server.raw(
                f"POST /api/map HTTP/1.1\r\nHost: {host}\r\nContent-Length: 5000\r\n\r\n".encode() + image[:100])),
            "one byte a second": status_of(server.raw(
                f"POST /api/map HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100\r\n\r\n".encode(),
                [(1.0, b"x")] * 4)),
            "invalid JSON": server.request("POST", "/api/map", b"{\"model\": ", {"Content-Type": "application/json"})[0],
            "dot-dot path": status_of(server.raw(f"GET /../../etc/passwd HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())),
            "encoded traversal": status_of(server.raw(
                f"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())),
            "encoded slash": status_of(server.raw(f"GET /api/..%2f..%2fetc/passwd HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())),
            "not an image": server.request("POST", "/api/map", b"GIF89a not really")[0],
            "decompression bomb": server.request("POST", "/api/map", png_header_only(20000, 20000))[0],
            "unknown model": server.request("POST", "/api/map?model=7", image)[0],
            "unknown parameter": server.request("POST", "/api/map?path=/etc/passwd", image)[0],
            "layer out of range": server.request("POST", "/api/map?layer=9", image)[0],
            "class out of range": server.request("POST", "/api/map?method=chefer&class=10", image)[0],
            "bad head": server.request("POST", "/api/map?head=-1", image)[0],
            "no token": secret.request("GET", "/api/models")[0],
            "wrong token": secret.request("GET", "/api/models", headers={"Authorization": "Bearer s3creT"})[0],
            "wrong token in query": secret.request("GET", "/api/models?token=nope")[0],
        }
        bad = {k: v for k, v in hostile.items() if v is None or not 400 <= v < 500}
        assert not bad, f"answered with no 4xx: {bad}"
        assert hostile["Content-Length 1 GB"] == 413 and hostile["body over the cap"] == 413
        assert hostile["one byte a second"] == 408 and hostile["no token"] == 401
        assert hostile["decompression bomb"] == 413 and hostile["unknown model"] == 404
        origins = {k: v for k, v in hostile.items() if "Origin" in k}
        assert set(origins.values()) == {403}, origins
        st, h, body = server.request("POST", "/api/map", image)
        assert st == 200 and "Access-Control-Allow-Origin" not in h, "still serving, and no CORS"
        assert server.request("POST", "/api/map", image, {"Origin": f"http://{host}"})[0] == 200, "its own Origin"
        assert secret.request("GET", "/api/models", headers={"Authorization": "Bearer s3cret"})[0] == 200
        assert secret.request("GET", "/api/models?token=s3cret")[0] == 200
        st, h, body = server.request("POST", "/api/map?layer=9", image)
        assert h.get("Content-Type") == "application/json" and body.count(b"\n") == 1 and b'"error"' in body
    finally:
        assert server.stop() == 0
        assert secret.stop() == 0
    lines = [ln for ln in server.stderr.splitlines() if " → 4" in ln]
    assert len(lines) >= 15, f"one log line per refusal:\n{server.stderr}"
    assert "s3cret" not in secret.stderr, "the token is never logged"


def png_padded_to(png, size):
    """`png` made `size` bytes long by a private ancillary chunk before IEND, which decoders
    pass over: the same pixels."""
    pad = size - len(png) - 12
    assert pad >= 0, (len(png), size)
    kind, data = b"paDd", b"\0" * pad
    chunk = struct.pack(">I", pad) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    iend = png.rindex(b"IEND") - 4
    return png[:iend] + chunk + png[iend:]


def test_an_upload_of_exactly_the_cap_is_taken_one_byte_more_is_not():
    """--max-upload-mb 1 is 2^20 bytes. An upload of exactly that passes both checks of the cap,
    the declared Content-Length's (before the body is read) and the body reader's (as it is
    read), to /api/map and /api/report; a Content-Length one byte over is refused with 413
    before the body is read. (The body reader never sees more than the declared length, and a
    chunked body is refused with 411: its own refusal one byte over is the unit test's,
    ServeAccess.BodyReadWithinTheCapExactlyAsDeclared.)"""
    cap = 1 << 20
    image = PHOTOS[1].read_bytes()
    exact = png_padded_to(image, cap)
    assert len(exact) == cap
    server = Server("--model", MODEL, "--max-upload-mb", "1")
    try:
        host = f"{server.host}:{server.port}"
        st, _, want = server.request("POST", "/api/map", image)
        assert st == 200
        for path in ("/api/map", "/api/report?name=exact.png"):
            try:
                st, _, body = server.request("POST", path, exact)
            except (BrokenPipeError, ConnectionResetError) as e:  # refused from its Content-Length, unread
                raise AssertionError(f"{path}: the upload of exactly the cap was cut off while it was sent ({e})")
            assert st == 200, (path, st, body[:200])
            if path == "/api/map":
                assert body == want, "the same pixels: the same map"
        for path in ("/api/map", "/api/report"):
            got = status_of(server.raw(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {cap + 1}\r\n\r\n".encode()))
            assert got == 413, (path, got)
    finally:
        assert server.stop() == 0


def test_report_cache_tells_apart_uploads_that_differ_only_in_the_head():
    """head=0, then head=1, of the same bytes and name: two pages, neither from the cache, each
    the CLI's page for its --head and opening on that head (the pages differ there, and in the
    summary drawn from that head's map)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        photo = PHOTOS[1]
        folder = photo_folder(tmp, [photo])
        expected = [cli_reports(["--model", str(MODEL)], ["--head", str(h)], folder, tmp / f"cli{h}")[photo.stem]
                    for h in (0, 1)]
        assert expected[0] != expected[1], "the CLI's pages for --head 0 and --head 1 differ"
        server = Server("--model", MODEL)
        try:
            image = photo.read_bytes()
            answers = []
            for h in (0, 1):
                answer, _, page = post_report(server, f"name={photo.name}&head={h}", image)
                assert answer["cached"] is False, f"head={h}: the page of another head was served from the cache"
                assert page == expected[h], f"head={h}: the page is the CLI's --head {h} page"
                start = re.search(rb'"start":\{[^}]*"head":"([^"]*)"', page)
                assert start and start.group(1) == str(h).encode(), f"head={h}: the page opens on head {start}"
                answers.append(answer)
            assert answers[0]["id"] != answers[1]["id"]
            again, _, page = post_report(server, f"name={photo.name}&head=1", image)
            assert again["cached"] is True and again["id"] == answers[1]["id"] and page == expected[1]
        finally:
            assert server.stop() == 0


def small_images(folder, n):
    rng = np.random.default_rng(7)
    paths = []
    for i in range(n):
        h, w = int(rng.integers(24, 64)), int(rng.integers(24, 64))
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        path = folder / f"im{i:03d}.png"
        cv2.imwrite(str(path), img)
        paths.append(path)
    return paths


def test_load_eight_clients_every_answer_is_the_clis():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "in").mkdir()
        paths = small_images(tmp / "in", 200)
        expected = cli_outputs(["--model", str(MODEL)], [], tmp / "in", tmp / "cli")
        server = Server("--model", MODEL, "--workers", "2", "--queue", "8")
        answers, errors = {}, []
        lock = threading.Lock()

        def client(k):
            c = http.client.HTTPConnection(server.host, server.port, timeout=60)
            for p in paths[k::8]:
                for _ in range(20):  # 503: retry after the time it says
                    c.request("POST", "/api/map", p.read_bytes())
                    r = c.getresponse()
                    body = r.read()
                    if r.status != 503:
                        break
                    time.sleep(float(r.getheader("Retry-After", "1")) / 10)
                with lock:
                    if r.status != 200:
                        errors.append((p.name, r.status, body[:200]))
                    answers[p.stem] = body
            c.close()

        start = time.monotonic()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.monotonic() - start
        hwm = server.vm_hwm_mb()
        assert server.stop() == 0
        assert not errors, errors[:5]
        assert len(answers) == 200
        wrong = [s for s in answers if answers[s] != expected[s][0]]
        assert not wrong, f"answers that are not the CLI's for that image: {wrong[:5]}"
        print(f"\nload: 200 uploads from 8 clients in {seconds:.2f} s; server VmHWM {hwm:.0f} MB")
        if "ASAN_OPTIONS" not in os.environ:  # ASan's shadow memory and quarantine are not the server's
            assert hwm < 400, f"the server's peak memory {hwm:.0f} MB"


def test_full_queue_answers_503_and_shutdown_finishes_requests_in_hand():
    image = PHOTOS[1].read_bytes()
    server = Server("--model", MODEL, "--workers", "1", "--queue", "1", "--timeout", "20")
    host = f"{server.host}:{server.port}"
    head = f"POST /api/map HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(image)}\r\n\r\n".encode()
    # Two uploads in hand (their bodies half sent): the worker and the queue place are taken.
    socks = []
    for _ in range(2):
        s = socket.create_connection((server.host, server.port), timeout=30)
        s.sendall(head + image[:1000])
        socks.append(s)
    time.sleep(0.5)
    st, h, _ = server.request("POST", "/api/map", image)
    assert st == 503 and h.get("Retry-After") == "1"
    server.proc.send_signal(signal.SIGTERM)  # stop accepting; the two in hand must still be answered
    time.sleep(0.5)
    refused = False
    try:
        server.request("GET", "/api/models", timeout=2)
    except OSError:
        refused = True
    assert refused, "no new connection after SIGTERM"
    for s in socks:
        s.sendall(image[1000:])
    for s in socks:
        out = b""
        while b"\r\n\r\n" not in out or len(out) < 200:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        assert status_of(out) == 200, out[:300]
        s.close()
    _, server.stderr = server.proc.communicate(timeout=30)
    assert server.proc.returncode == 0, server.stderr


def cli_reports(model_args, option_args, folder, out):
    """One batch run of the image command with --report: {stem: page bytes}."""
    p = subprocess.run([BIN, *model_args, *option_args, "--report", "-o", str(out), str(folder)],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    check_sanitizers(["cli"], p.stderr)
    assert p.returncode == 0, p.stderr[-2000:]
    return {q.name[:-len("_report.html")]: q.read_bytes() for q in out.glob("*_report.html")}


def post_report(server, path_query, image, headers=None):
    """POST /api/report, then GET its page: (JSON answer, page headers, page bytes)."""
    st, _, body = server.request("POST", f"/api/report?{path_query}", image, headers)
    assert st == 200, (path_query, st, body[:300])
    answer = __import__("json").loads(body)
    st, h, page = server.request("GET", f"/api/report/{answer['id']}", headers=headers)
    assert st == 200 and h.get("Content-Type") == "text/html; charset=utf-8", (st, page[:300])
    assert len(page) == answer["bytes"]
    return answer, h, page


REPORT_CASES = [
    ("", []),
    ("layer=1&head=2", ["--layer", "1", "--head", "2"]),
    ("method=chefer&class=3", ["--method", "chefer", "--class", "3"]),
    ("method=rollout&head=max", ["--method", "rollout", "--head", "max"]),
    ("top=10&pca=1", ["--top", "10", "--pca"]),
]


def test_report_is_the_page_the_cli_writes_and_is_cached():
    shown = [PHOTOS[1], PHOTOS[3]]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        photos = photo_folder(tmp, shown)
        server = Server("--model", MODEL)
        seeded = Server("--token", "s3cret")
        try:
            for i, (query, options) in enumerate(REPORT_CASES):
                expected = cli_reports(["--model", str(MODEL)], options, photos, tmp / f"cli{i}")
                for p in shown:
                    answer, h, page = post_report(server, f"name={p.name}&{query}", p.read_bytes())
                    assert page == expected[p.stem], f"{p.name} {query}: the page is the CLI's _report.html"
                    assert answer["name"] == p.name and answer["cached"] is False
                    meta = re.search(rb'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1).decode()
                    assert h.get("Content-Security-Policy") == meta + "; frame-ancestors 'self'"
            # The same bytes and options again: found, not made again; another option: another page.
            image = shown[0].read_bytes()
            again, _, _ = post_report(server, f"name={shown[0].name}", image)
            assert again["cached"] is True
            other, _, _ = post_report(server, f"name={shown[0].name}&layer=0", image)
            assert other["cached"] is False and other["id"] != again["id"]
            st, h, body = server.request("GET", f"/api/report/{again['id']}?download=1")
            assert st == 200 and h.get("Content-Disposition") == \
                "attachment; filename=\"chelsea_report.html\"; filename*=UTF-8''chelsea_report.html"
            # A name outside ASCII: UTF-8 in filename* (RFC 5987), an ASCII fallback in filename=.
            accented = post_report(server, "name=%C3%BCn%C3%AF%20c%C3%B8d%C3%A9.png", image)[0]
            assert accented["name"] == "ünï cødé.png"
            st, h, body = server.request("GET", f"/api/report/{accented['id']}?download=1")
            assert st == 200 and h.get("Content-Disposition") == \
                "attachment; filename=\"uni_code_report.html\"; filename*=UTF-8''%C3%BCn%C3%AF%20c%C3%B8d%C3%A9_report.html"
            refusals = {
                "unknown id": (server.request("GET", "/api/report/" + "0" * 64)[0], 404),
                "id not hex": (server.request("GET", "/api/report/" + "Z" * 64)[0], 404),
                "path in name": (server.request("POST", "/api/report?name=../x.png", image)[0], 400),
                "format": (server.request("POST", "/api/report?format=png", image)[0], 400),
                "top out of range": (server.request("POST", "/api/report?top=0", image)[0], 400),
                "other parameter": (server.request("GET", f"/api/report/{again['id']}?x=1")[0], 400),
                "foreign Origin": (server.request("POST", "/api/report", image, {"Origin": "http://evil.example"})[0], 403),
                "not an image": (server.request("POST", "/api/report", b"GIF89a no")[0], 400),
                "text= on a model without a text tower": (server.request("POST", "/api/report?text=a%20cat", image)[0], 400),
                "text= on the map endpoint": (server.request("POST", "/api/map?text=a%20cat", image)[0], 400),
            }
            assert all(got == want for got, want in refusals.values()), refusals
            # The seeded model, behind a token: the page needs it too.
            expected = cli_reports([], [], photos, tmp / "seeded")
            auth = {"Authorization": "Bearer s3cret"}
            answer, _, page = post_report(seeded, f"name={shown[1].name}", shown[1].read_bytes(), auth)
            assert page == expected[shown[1].stem]
            assert seeded.request("GET", f"/api/report/{answer['id']}")[0] == 401
            assert seeded.request("GET", f"/api/report/{answer['id']}?token=s3cret")[0] == 200
            # No classifier, no classes to list.
            st, _, body = seeded.request("POST", "/api/report?top=5", shown[1].read_bytes(), auth)
            assert st == 400 and b"no classifier" in body, (st, body)
        finally:
            assert server.stop() == 0
            assert seeded.stop() == 0


def test_report_load_the_cache_stays_within_its_budget():
    """8 clients, 200 different images to /api/report with --cache-mb 2. Each page (~180 KB) is
    fetched by the client that posted it and must be its own (its name; every 8th byte for byte
    the CLI's). Memory: the peak after the first 16 uploads (every worker warm, the cache
    full) is the baseline; the other 184 pages (about 33 MB of them) may add only the pages in
    flight (at most one per connection thread, 14 × 0.2 MB, twice: the response copies it) and allocator slack (per-thread
    arenas): 16 MB, half of what keeping every page would add (48 MB under ThreadSanitizer, below)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "in").mkdir()
        (tmp / "some").mkdir()
        paths = small_images(tmp / "in", 200)
        for p in paths[::8]:
            (tmp / "some" / p.name).write_bytes(p.read_bytes())
        expected = cli_reports(["--model", str(MODEL)], [], tmp / "some", tmp / "cli")
        server = Server("--model", MODEL, "--workers", "2", "--queue", "8", "--cache-mb", "2")
        errors, got, lost = [], {}, []
        lock = threading.Lock()

        def client(batch):
            c = http.client.HTTPConnection(server.host, server.port, timeout=60)
            for p in batch:
                for _ in range(40):  # 503: retry; 404: the page went before it was fetched: post again
                    c = http.client.HTTPConnection(server.host, server.port, timeout=60)
                    c.request("POST", f"/api/report?name={p.name}", p.read_bytes())
                    r = c.getresponse()
                    body = r.read()
                    if r.status == 503:
                        time.sleep(0.1)
                        continue
                    if r.status != 200:
                        break
                    c = http.client.HTTPConnection(server.host, server.port, timeout=60)
                    c.request("GET", f"/api/report/{__import__('json').loads(body)['id']}")
                    r = c.getresponse()
                    body = r.read()
                    if r.status != 404:
                        break
                    with lock:
                        lost.append(p.name)
                with lock:
                    if r.status != 200:
                        errors.append((p.name, r.status, body[:200]))
                    got[p.stem] = body

        def run(batch):
            threads = [threading.Thread(target=client, args=(batch[k::8],)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        start = time.monotonic()
        run(paths[:16])
        warm = server.vm_hwm_mb()
        run(paths[16:])
        seconds = time.monotonic() - start
        hwm = server.vm_hwm_mb()
        assert server.stop() == 0
        assert not errors, errors[:5]
        assert len(got) == 200
        swapped = [s for s, page in got.items() if f"<title>{s}.png — vitattn report</title>".encode() not in page]
        assert not swapped, f"pages that are not their client's image: {swapped[:5]}"
        wrong = [s for s in expected if got[s] != expected[s]]
        assert not wrong, f"pages that are not the CLI's: {wrong[:5]}"
        print(f"\nreport load: 200 uploads from 8 clients in {seconds:.2f} s; VmHWM {warm:.0f} MB after 16, "
              f"{hwm:.0f} MB after 200; {len(lost)} pages evicted before their GET, posted again")
        if "ASAN_OPTIONS" not in os.environ:  # ASan's shadow memory and quarantine are not the server's
            # Under ThreadSanitizer every heap page the server touches also gets shadow pages, and
            # its allocator reuses memory less eagerly: one run there grew by 23 MB with the cache
            # working. Keeping every page would add 33 MB of heap, several times that with its
            # shadow, so a bound of 48 MB still tells the two apart.
            bound = 48 if os.environ.get("TSAN_OPTIONS") else 16
            assert hwm - warm < bound, f"the peak grew by {hwm - warm:.1f} MB past a full 2 MB cache (bound {bound} MB)"
