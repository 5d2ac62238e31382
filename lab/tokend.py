#!/usr/bin/env python3
"""The lab's token service: the `auth` host of the pull path.

It speaks the Docker/Distribution token protocol the way hosted registries do:
  GET  /token?service=S&scope=repository:NAME:pull   (Basic auth or anonymous)
  POST /token  grant_type=password (the OAuth2 form containerd tries first)
and answers a JWT signed with RS256 whose `x5c` header carries the signing certificate, which
the registry trusts through its `rootcertbundle`.

Identities and what they may do:
  anonymous  pull on public/* and pause (the sandbox image, public as registry.k8s.io's is);
             asking for anything else is refused with 401
  alice      pull on team-a/* and public/*, and on what anonymous may pull (a public repository
             is public to a signed-in identity too, as on hosted registries); other repositories
             get a token without that scope (the registry then answers insufficient_scope)
  admin      push and pull everywhere (the lab uses it to push the test images)

Only standard library and the `openssl` command: no packages to install.
"""

import base64
import fnmatch
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ISSUER = "pullpath-lab-auth"
USERS = {
    "alice": ("alice-secret", {"team-a/*": ["pull"], "public/*": ["pull"]}),
    "admin": ("admin-secret", {"*": ["pull", "push", "delete"]}),
}
ANONYMOUS = {"public/*": ["pull"], "pause": ["pull"]}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Signer:
    def __init__(self, key_path: str, cert_path: str):
        self.key_path = key_path
        with open(cert_path, "rb") as f:
            pem = f.read().decode()
        body = "".join(line for line in pem.splitlines() if not line.startswith("-----"))
        self.x5c = [body]

    def token(self, subject: str, service: str, access: list) -> str:
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": self.x5c}
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": service,
            "iat": now,
            "nbf": now - 10,
            "exp": now + 300,
            "jti": b64url(os.urandom(12)),
            "access": access,
        }
        signing_input = (
            b64url(json.dumps(header, separators=(",", ":")).encode())
            + "."
            + b64url(json.dumps(claims, separators=(",", ":")).encode())
        )
        signature = subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", self.key_path],
            input=signing_input.encode(),
            capture_output=True,
            check=True,
        ).stdout
        return signing_input + "." + b64url(signature)


def allowed_actions(rules: dict, repository: str) -> list:
    actions = set()
    for pattern, granted in rules.items():
        if fnmatch.fnmatchcase(repository, pattern):
            actions.update(granted)
    return sorted(actions)


def parse_scopes(scopes: list) -> list:
    """`repository:team-a/small:pull,push` -> (type, name, [actions])."""
    parsed = []
    for scope in scopes:
        for one in scope.split(" "):
            parts = one.split(":")
            if len(parts) < 3:
                continue
            parsed.append((parts[0], ":".join(parts[1:-1]), parts[-1].split(",")))
    return parsed


class Handler(BaseHTTPRequestHandler):
    server_version = "pullpath-lab-auth/1"
    signer: Signer = None

    def log_message(self, fmt, *args):  # one line per request, without credentials
        sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def reply(self, status: int, body: dict, extra_headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra_headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def unauthorized(self, message: str):
        self.reply(
            401,
            {"errors": [{"code": "UNAUTHORIZED", "message": message}]},
            [("WWW-Authenticate", 'Basic realm="pullpath-lab-auth"')],
        )

    def identity(self, username, password):
        """None for anonymous, the user name when the password matches, False otherwise."""
        if username is None:
            return None
        user = USERS.get(username)
        if user is None or user[0] != password:
            return False
        return username

    def issue(self, username, password, service, scopes, oauth: bool):
        who = self.identity(username, password)
        if who is False:
            return self.unauthorized("invalid username or password")
        rules = ANONYMOUS if who is None else {**ANONYMOUS, **USERS[who][1]}
        access = []
        for kind, name, wanted in parse_scopes(scopes):
            if kind != "repository":
                continue
            granted = [a for a in wanted if a in allowed_actions(rules, name)]
            if who is None and not granted:
                return self.unauthorized("authentication required")
            access.append({"type": kind, "name": name, "actions": granted})
        token = self.signer.token(who or "", service, access)
        if oauth:
            body = {"access_token": token, "expires_in": 300, "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        else:
            body = {"token": token, "access_token": token, "expires_in": 300}
        self.reply(200, body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/token":
            return self.reply(404, {"errors": [{"code": "NOT_FOUND", "message": "no such endpoint"}]})
        query = urllib.parse.parse_qs(url.query)
        username = password = None
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            try:
                username, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                return self.unauthorized("malformed basic credentials")
        self.issue(username, password, query.get("service", [""])[0], query.get("scope", []), oauth=False)

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/token":
            return self.reply(404, {"errors": [{"code": "NOT_FOUND", "message": "no such endpoint"}]})
        length = min(int(self.headers.get("Content-Length", "0") or 0), 65536)
        form = urllib.parse.parse_qs(self.rfile.read(length).decode(errors="replace"))
        if form.get("grant_type", [""])[0] != "password":
            return self.reply(400, {"error": "unsupported_grant_type"})
        self.issue(
            form.get("username", [None])[0],
            form.get("password", [""])[0],
            form.get("service", [""])[0],
            form.get("scope", []),
            oauth=True,
        )


def main():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="address:port")
    parser.add_argument("--tls-cert", required=True)
    parser.add_argument("--tls-key", required=True)
    parser.add_argument("--signing-key", required=True)
    parser.add_argument("--signing-cert", required=True)
    args = parser.parse_args()

    Handler.signer = Signer(args.signing_key, args.signing_cert)
    host, _, port = args.listen.rpartition(":")
    server = ThreadingHTTPServer((host, int(port)), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.tls_cert, args.tls_key)
    # Handshake in the handler thread, so one stalled client cannot block accept().
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    sys.stderr.write("listening on %s\n" % args.listen)
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
