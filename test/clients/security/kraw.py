"""Minimal Kafka framing and a SCRAM-SHA-256 client, for the SASL state machine tests.

Only what test_sasl_raw.py needs: request header v1, SaslHandshake v1,
SaslAuthenticate v0/v1, Metadata v1, ApiVersions v0; responses parsed just far
enough to read their error codes.
"""
import base64
import hashlib
import hmac
import os
import socket
import ssl
import struct


class Closed(Exception):
    pass


class Conn:
    def __init__(self, port, host="127.0.0.1", timeout=10, cafile=None):
        self.s = socket.create_connection((host, port), timeout=timeout)
        if cafile:
            ctx = ssl.create_default_context(cafile=cafile)
            self.s = ctx.wrap_socket(self.s, server_hostname=host)
        self.corr = 0

    def close(self):
        self.s.close()

    def send(self, api_key, version, body, client_id=b"kraw"):
        self.corr += 1
        hdr = struct.pack(">hhih", api_key, version, self.corr, len(client_id)) + client_id
        msg = hdr + body
        self.s.sendall(struct.pack(">i", len(msg)) + msg)
        return self.corr

    def send_raw(self, data):
        self.s.sendall(struct.pack(">i", len(data)) + data)

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise Closed()
            buf += chunk
        return buf

    def recv(self):
        (size,) = struct.unpack(">i", self._read(4))
        data = self._read(size)
        return struct.unpack(">i", data[:4])[0], data[4:]

    def is_closed(self, wait=3.0):
        """True if the peer closes the connection (EOF) within wait seconds."""
        self.s.settimeout(wait)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
        except socket.timeout:
            return False
        except (ConnectionResetError, ssl.SSLError):
            return True

    # --- requests ---
    def handshake(self, mechanism, version=1):
        m = mechanism.encode()
        self.send(17, version, struct.pack(">h", len(m)) + m)
        _, body = self.recv()
        (err,) = struct.unpack(">h", body[:2])
        (n,) = struct.unpack(">i", body[2:6])
        mechs, p = [], 6
        for _ in range(max(n, 0)):
            (ln,) = struct.unpack(">h", body[p:p + 2])
            mechs.append(body[p + 2:p + 2 + ln].decode())
            p += 2 + ln
        return err, mechs

    def authenticate(self, token, version=1):
        self.send(36, version, struct.pack(">i", len(token)) + token)
        _, body = self.recv()
        (err,) = struct.unpack(">h", body[:2])
        (ln,) = struct.unpack(">h", body[2:4])
        p = 4
        msg = None
        if ln >= 0:
            msg = body[p:p + ln].decode()
            p += ln
        (bl,) = struct.unpack(">i", body[p:p + 4])
        auth = body[p + 4:p + 4 + bl]
        p += 4 + max(bl, 0)
        lifetime = struct.unpack(">q", body[p:p + 8])[0] if version >= 1 else None
        return err, msg, auth, lifetime

    def metadata(self):
        """Metadata v1 for all topics; returns the raw body."""
        self.send(3, 1, struct.pack(">i", -1))
        return self.recv()[1]

    def api_versions(self):
        self.send(18, 0, b"")
        _, body = self.recv()
        return struct.unpack(">h", body[:2])[0]


def scram_login(conn, user, password, tamper=None):
    """SCRAM-SHA-256 over SaslAuthenticate v1; returns (error, message, lifetime)."""
    cnonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = "n=%s,r=%s" % (user.replace("=", "=3D").replace(",", "=2C"), cnonce)
    err, msg, server_first, _ = conn.authenticate(("n,," + first_bare).encode())
    if err:
        return err, msg, None
    attrs = dict(kv.split("=", 1) for kv in server_first.decode().split(","))
    assert attrs["r"].startswith(cnonce)
    salt = base64.b64decode(attrs["s"])
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    without_proof = "c=biws,r=" + attrs["r"]
    auth_message = ",".join([first_bare, server_first.decode(), without_proof])
    sig = hmac.new(stored_key, auth_message.encode(), hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, sig))
    final = without_proof + ",p=" + base64.b64encode(proof).decode()
    if tamper:
        final = tamper(final)
    err, msg, server_final, lifetime = conn.authenticate(final.encode())
    if err:
        return err, msg, lifetime
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    expect = base64.b64encode(hmac.new(server_key, auth_message.encode(), hashlib.sha256).digest())
    assert server_final == b"v=" + expect, server_final
    return 0, None, lifetime
