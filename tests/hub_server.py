"""A Hugging Face Hub on 127.0.0.1 for the download tests: one or more tiny repositories, served as the Hub serves them.

What huggingface_hub asks for, and what is answered here:
    GET  /api/models/{repo}/revision/{rev}        {"id", "sha", "siblings": [{"rfilename"}]}
    GET  /api/models/{repo}/tree/{rev}?recursive  [{"type": "file", "path", "size", "oid", "lfs"?}]
    HEAD /{repo}/resolve/{rev}/{file}             ETag, X-Repo-Commit, Content-Length (and X-Linked-* for LFS)
    GET  /{repo}/resolve/{rev}/{file}             the bytes; a Range: bytes=N- request gets 206 and the rest
A file named in `cut_once` is cut off half-way through its first GET (the connection closes), as a
dropped network connection would; one named in `slow` trickles out in small pieces, as over a slow
line; every request is logged with its Range header.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"
SLOW_PIECE = 4096
SLOW_PAUSE_S = 0.05  # a 160 kB file takes about 2 s: long enough to interrupt it


@dataclass
class HubRepo:
    repo_id: str
    files: dict[str, bytes]

    def lfs(self, name: str) -> bool:
        return name.endswith(".safetensors")

    def etag(self, name: str) -> str:
        data = self.files[name]
        if self.lfs(name):
            return hashlib.sha256(data).hexdigest()
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's blob id


@dataclass
class FakeHub:
    repos: dict[str, HubRepo]
    cut_once: set[str] = field(default_factory=set)
    slow: set[str] = field(default_factory=set)
    log: list[tuple[str, str, str | None]] = field(default_factory=list)  # (method, path, Range)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def gets_of(self, filename: str) -> list[str | None]:
        """The Range header of each GET of a file (None: from the start)."""
        return [rng for method, path, rng in self.log if method == "GET" and path.endswith("/" + filename)]


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # keep the test output clean
            pass

        def _json(self, data) -> None:
            body = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _not_found(self) -> None:
            body = b'{"error": "Repository not found"}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _route(self) -> None:
            path = unquote(urlparse(self.path).path)
            hub.log.append((self.command, path, self.headers.get("Range")))
            api = re.fullmatch(r"/api/models/(.+?)/(revision|tree)/([^/]+)(/.*)?", path)
            if api:
                repo = hub.repos.get(api.group(1))
                if repo is None:
                    return self._not_found()
                if api.group(2) == "revision":
                    return self._json(
                        {"id": repo.repo_id, "sha": COMMIT, "private": False,
                         "siblings": [{"rfilename": name} for name in sorted(repo.files)]}
                    )
                entries = []
                for name in sorted(repo.files):
                    entry = {"type": "file", "path": name, "size": len(repo.files[name]), "oid": repo.etag(name)[:40]}
                    if repo.lfs(name):
                        entry["lfs"] = {"oid": repo.etag(name), "size": len(repo.files[name]), "pointerSize": 134}
                    entries.append(entry)
                return self._json(entries)
            resolve = re.fullmatch(r"/(.+?)/resolve/([^/]+)/(.+)", path)
            if resolve and resolve.group(1) in hub.repos and resolve.group(3) in hub.repos[resolve.group(1)].files:
                return self._file(hub.repos[resolve.group(1)], resolve.group(3))
            return self._not_found()

        def _file(self, repo: HubRepo, name: str) -> None:
            data = repo.files[name]
            start = 0
            match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
            if match:
                start = int(match.group(1))
            self.send_response(206 if match else 200)
            self.send_header("ETag", f'"{repo.etag(name)}"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Accept-Ranges", "bytes")
            if repo.lfs(name):
                self.send_header("X-Linked-Etag", f'"{repo.etag(name)}"')
                self.send_header("X-Linked-Size", str(len(data)))
            if match:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            if self.command == "HEAD":
                return
            body = data[start:]
            if name in hub.cut_once and not match:
                hub.cut_once.discard(name)
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)  # the peer sees the connection drop mid-body
                return
            if name in hub.slow:
                for start in range(0, len(body), SLOW_PIECE):
                    self.wfile.write(body[start : start + SLOW_PIECE])
                    self.wfile.flush()
                    time.sleep(SLOW_PAUSE_S)
                return
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            self._route()

        def do_HEAD(self) -> None:  # noqa: N802
            self._route()

    return Handler


def start_hub(repos: list[HubRepo], cut_once: set[str] | None = None) -> FakeHub:
    hub = FakeHub({repo.repo_id: repo for repo in repos}, set(cut_once or ()))
    hub.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.server.daemon_threads = True
    threading.Thread(target=hub.server.serve_forever, daemon=True).start()
    return hub


def stop_hub(hub: FakeHub) -> None:
    assert hub.server is not None
    hub.server.shutdown()
    hub.server.server_close()


def repo_from_folder(repo_id: str, folder: Path) -> HubRepo:
    """A repository holding a model folder's files, plus a pickle file and a subfolder the download must skip."""
    files = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}
    files["pytorch_model.bin"] = b"pickle weights: never downloaded"
    files["onnx/model.onnx"] = b"not needed by the app"
    return HubRepo(repo_id, files)


def closed_port() -> str:
    """An address on 127.0.0.1 where nothing listens: the Hub unreachable."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
