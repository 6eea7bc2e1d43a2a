#!/usr/bin/env python3
"""Attack-shaped clients for bench/hostile-clients.sh: each shape against one target on
127.0.0.1, bounded in count and time, printing one TSV line:

    shape  target  outcome  seconds  count  detail

`outcome` is what the server did (closed, goaway, rst, status NNN, served, none), `seconds` when
(from the attack's start; the cap when nothing happened), `count` a shape's count (resets or
PINGs sent before the GOAWAY, connections served past the cap, DATA bytes before the reset).
HTTP/2 frames are written by hand (RFC 9113 §4; HPACK literals without indexing, RFC 7541
§6.2.2), so no library decides what goes on the wire.

    hostile_clients.py SHAPE TARGET_NAME H1_PORT H2C_PORT [CAP_SECONDS]

With UNTIL=<Unix seconds> in the environment, the shape is repeated until then (one line each),
each run starting PACE seconds (default 0) or more after the one before.
"""

import os
import select
import socket
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(s):
    b = s.encode()
    assert len(b) < 127
    return bytes([len(b)]) + b


def headers(stream, fields, end_stream):
    block = b"".join(b"\x00" + literal(n) + literal(v) for n, v in fields)
    return frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream, block)


STATIC_STATUS = {0x88: 200, 0x89: 204, 0x8A: 206, 0x8B: 304, 0x8C: 400, 0x8D: 404, 0x8E: 500}


def status_of(block):
    """The :status of a response header block: a static-table index (RFC 7541 Appendix A), or
    a literal with the indexed name :status (8 to 14), its value plain or Huffman-coded
    (digits only: '0'-'2' are 5-bit codes 0-2, '3'-'9' 6-bit codes 0x19-0x1f, Appendix B)."""
    if not block:
        return "?"
    b = block[0]
    if b in STATIC_STATUS:
        return STATIC_STATUS[b]
    if not ((b & 0xC0 == 0x40 and 8 <= b & 0x3F <= 14) or (b & 0xE0 == 0 and 8 <= b & 0x0F <= 14)):
        return "?"
    n = block[1] & 0x7F
    raw = block[2 : 2 + n]
    if not block[1] & 0x80:
        return raw.decode(errors="replace")
    bits = "".join(format(x, "08b") for x in raw)
    out, at = "", 0
    while len(out) < 3 and at + 5 <= len(bits):
        five = int(bits[at : at + 5], 2)
        if five < 3:
            out += str(five)
            at += 5
        else:
            six = int(bits[at : at + 6], 2)
            out += str(3 + six - 0x19)
            at += 6
    return out


def request_fields(method, path="/", extra=()):
    return [(":method", method), (":scheme", "http"), (":path", path), (":authority", "localhost")] + list(extra)


class Frames:
    """Reads frames from a socket without blocking longer than asked."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.closed = False

    def poll(self, timeout):
        """Frames that arrive within `timeout` (the first wait only); [] and closed at EOF."""
        out = []
        end = time.monotonic() + timeout
        while not self.closed:
            left = max(0.0, end - time.monotonic())
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                break
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                chunk = b""
            if not chunk:
                self.closed = True
                break
            self.buf += chunk
            while len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + n:
                    break
                kind, flags = self.buf[3], self.buf[4]
                sid = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
                out.append((kind, flags, sid, self.buf[9 : 9 + n]))
                self.buf = self.buf[9 + n :]
            if out:
                end = time.monotonic()  # return what came, without waiting again
        return out


def connect(port, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.setblocking(True)
    return s


def h2_start(port, rcvbuf=None):
    s = connect(port, rcvbuf)
    s.sendall(PREFACE + frame(SETTINGS, 0, 0))
    return s, Frames(s)


def watch(s, f, cap, start, stream=None, ack_settings=True):
    """Waits for GOAWAY, RST_STREAM (on `stream`), or close, up to `cap` seconds."""
    data = 0
    while time.monotonic() - start < cap:
        for kind, flags, sid, payload in f.poll(min(0.5, cap)):
            if kind == SETTINGS and not flags & ACK and ack_settings:
                s.sendall(frame(SETTINGS, ACK, 0))
            elif kind == GOAWAY:
                return "goaway", time.monotonic() - start, data, "code %d" % int.from_bytes(payload[4:8], "big")
            elif kind == RST_STREAM and (stream is None or sid == stream):
                return "rst", time.monotonic() - start, data, "code %d" % int.from_bytes(payload[:4], "big")
            elif kind == DATA:
                data += len(payload)
        if f.closed:
            return "closed", time.monotonic() - start, data, ""
    return "none", cap, data, ""


def idle_h2_preface(h1, h2c, cap):
    """The preface and SETTINGS, then silence."""
    start = time.monotonic()
    s, f = h2_start(h2c)
    outcome = watch(s, f, cap, start)
    if outcome[0] == "goaway":  # and then the close?
        rest = watch(s, f, cap, start)
        outcome = (outcome[0] + "+" + rest[0], rest[1], 0, outcome[3])
    s.close()
    return outcome


def stalled_h2_body(h1, h2c, cap):
    """POST with content-length 10, 5 bytes of DATA, then silence."""
    s, f = h2_start(h2c)
    start = time.monotonic()
    s.sendall(headers(1, request_fields("POST", extra=[("content-length", "10")]), False) + frame(DATA, 0, 1, b"hello"))
    while time.monotonic() - start < cap:
        for kind, flags, sid, payload in f.poll(0.5):
            if kind == SETTINGS and not flags & ACK:
                s.sendall(frame(SETTINGS, ACK, 0))
            elif kind == HEADERS and sid == 1:
                return "status %s" % status_of(payload), time.monotonic() - start, 0, ""
            elif kind == RST_STREAM and sid == 1:
                return "rst", time.monotonic() - start, 0, "code %d" % int.from_bytes(payload[:4], "big")
            elif kind == GOAWAY:
                return "goaway", time.monotonic() - start, 0, "code %d" % int.from_bytes(payload[4:8], "big")
        if f.closed:
            return "closed", time.monotonic() - start, 0, ""
    s.close()
    return "none", cap, 0, ""


def server_side_state(server_port, client_port):
    """The TCP state of the server's end of our connection, from /proc/net/tcp (01 is
    ESTABLISHED); None once it is gone. A server that gives up on a client that does not read
    queues its FIN behind unsent bytes, so the client cannot see the close: the server's
    socket leaving ESTABLISHED can be seen."""
    local = "0100007F:%04X" % server_port
    remote = "0100007F:%04X" % client_port
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                return fields[3]
    return None


def slow_reader_h1(h1, h2c, cap):
    """GET a large body with a 4 KiB receive buffer and never read: when does the server's end
    of the connection leave ESTABLISHED (closed, or reset)?"""
    s = connect(h1, rcvbuf=4096)
    start = time.monotonic()
    s.sendall(b"GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n")
    client_port = s.getsockname()[1]
    while time.monotonic() - start < cap:
        time.sleep(0.25)
        state = server_side_state(h1, client_port)
        if state != "01":
            s.close()
            return "closed", time.monotonic() - start, 0, "server socket %s" % (state or "gone")
    s.close()
    return "none", cap, 0, ""


def slow_reader_h2(h1, h2c, cap):
    """GET a large body over h2c; never send WINDOW_UPDATE (the window stays 65,535)."""
    s, f = h2_start(h2c)
    start = time.monotonic()
    s.sendall(headers(1, request_fields("GET", "/big"), True))
    outcome = watch(s, f, cap, start, stream=1)
    s.close()
    return outcome


def rapid_reset(h1, h2c, cap, limit=1000):
    """HEADERS then, once the server had time to accept it (2 ms), RST_STREAM; repeated."""
    s, f = h2_start(h2c)
    start = time.monotonic()
    sent = 0
    for i in range(limit):
        sid = 2 * i + 1
        try:
            s.sendall(headers(sid, request_fields("POST", extra=[("content-length", "0")]), True))
            # The 2 ms wait reads what the server sends meanwhile (a GOAWAY must be seen before
            # the server's close can reset it away).
            frames = f.poll(0.002)
            s.sendall(frame(RST_STREAM, 0, sid, struct.pack(">I", 8)))
        except (BrokenPipeError, ConnectionResetError):
            return "closed", time.monotonic() - start, sent, ""
        sent += 1
        for kind, flags, sid_, payload in frames + f.poll(0):
            if kind == SETTINGS and not flags & ACK:
                s.sendall(frame(SETTINGS, ACK, 0))
            if kind == GOAWAY:
                return "goaway", time.monotonic() - start, sent, "code %d" % int.from_bytes(payload[4:8], "big")
        if f.closed:
            return "closed", time.monotonic() - start, sent, ""
        if time.monotonic() - start > cap:
            break
    outcome = watch(s, f, 2, time.monotonic())
    s.close()
    return outcome[0], time.monotonic() - start, sent, outcome[3]


def ping_flood(h1, h2c, cap, limit=100000):
    """PINGs as fast as the socket takes them, never reading the ACKs."""
    s, f = h2_start(h2c)
    s.setblocking(False)
    start = time.monotonic()
    sent = 0
    ping = frame(PING, 0, 0, b"12345678")
    batch = ping * 100
    while sent < limit and time.monotonic() - start < cap:
        try:
            n = s.send(batch)
            sent += n // len(ping)
            if n < len(batch):
                time.sleep(0.05)
        except BlockingIOError:
            time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            return "closed", time.monotonic() - start, sent, "write failed"
    s.setblocking(True)
    outcome = watch(s, f, 2, time.monotonic(), ack_settings=False)
    s.close()
    detail = "stopped taking PINGs" if sent < limit else ""
    return outcome[0], time.monotonic() - start, sent, (outcome[3] + " " + detail).strip()


def trickled_head(h1, h2c, cap):
    """A request head, one byte every 100 ms (never ending: the padding field grows)."""
    s = connect(h1)
    start = time.monotonic()
    head = b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Pad: " + b"a" * 100000
    for i, byte in enumerate(head):
        if time.monotonic() - start > cap:
            break
        try:
            s.send(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return "closed", time.monotonic() - start, i, ""
        r, _, _ = select.select([s], [], [], 0.1)
        if r:
            try:
                got = s.recv(4096)
            except ConnectionResetError:
                got = b""
            if got.startswith(b"HTTP/1.1 "):
                return "status " + got[9:12].decode(), time.monotonic() - start, i, ""
            if not got:
                return "closed", time.monotonic() - start, i, ""
    s.close()
    return "none", cap, 0, ""


def connection_flood(h1, h2c, cap):
    """FLOOD connections at once, each sending a request and then keeping its connection; how
    many are answered within FLOOD_WINDOW seconds (1.5: less than the servers' idle timers, so
    that no connection has yet been closed for idling and made room), and whether a new client
    is still served once they close."""
    flood = int(os.environ.get("FLOOD", "300"))
    socks = []
    start = time.monotonic()
    for _ in range(flood):
        try:
            s = connect(h1)
            s.sendall(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")
            socks.append(s)
        except OSError:
            break
    answered = 0
    deadline = time.monotonic() + float(os.environ.get("FLOOD_WINDOW", "1.5"))
    pending = list(socks)
    while pending and time.monotonic() < deadline:
        r, _, _ = select.select(pending, [], [], max(0, deadline - time.monotonic()))
        for s in r:
            try:
                got = s.recv(4096)
            except OSError:
                got = b""
            if got.startswith(b"HTTP/1.1 2"):
                answered += 1
            pending.remove(s)
    for s in socks:
        s.close()
    time.sleep(0.5)
    after = connect(h1)
    after.sendall(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")
    r, _, _ = select.select([after], [], [], 5)
    ok = bool(r) and after.recv(4096).startswith(b"HTTP/1.1 2")
    after.close()
    return "served %d/%d" % (answered, len(socks)), time.monotonic() - start, answered, "new client afterwards: %s" % ("served" if ok else "not served")


def hold_connections(h1, h2c, cap):
    """Keeps HOLD idle connections open for `cap` seconds, opening a new one whenever the
    server closes one (the soak's connection flood up to the cap)."""
    hold = int(os.environ.get("HOLD", "100"))
    start = time.monotonic()
    socks, opened, refused = [], 0, 0
    while time.monotonic() - start < cap:
        while len(socks) < hold:
            try:
                socks.append(connect(h1))
                opened += 1
            except OSError:
                refused += 1
                break
        r, _, _ = select.select(socks, [], [], 0.5)
        for s in r:
            try:
                got = s.recv(4096)
            except OSError:
                got = b""
            if not got:
                s.close()
                socks.remove(s)
    for s in socks:
        s.close()
    return "held %d" % hold, time.monotonic() - start, opened, "connect failures %d" % refused


SHAPES = {
    "hold-connections": hold_connections,
    "idle-h2-preface": idle_h2_preface,
    "stalled-h2-body": stalled_h2_body,
    "slow-reader-h1": slow_reader_h1,
    "slow-reader-h2": slow_reader_h2,
    "rapid-reset": rapid_reset,
    "ping-flood": ping_flood,
    "trickled-head": trickled_head,
    "connection-flood": connection_flood,
}


def main():
    shape, target, h1, h2c = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    cap = float(sys.argv[5]) if len(sys.argv) > 5 else 15.0
    # UNTIL (Unix seconds): repeat the shape in this process until then, one line per run. A
    # soak's attacks then cost no process start per run: starting Python is mostly kernel work
    # (exec, page faults) that the scheduler cannot cut short for the measured processes.
    # PACE (seconds): the least time from one run's start to the next's, so that a shape that
    # ends at once (a PING flood cut off by GOAWAY) stays that shape rather than becoming a
    # flood of new connections.
    until = float(os.environ.get("UNTIL", "0"))
    pace = float(os.environ.get("PACE", "0"))
    while True:
        started = time.monotonic()
        try:
            outcome, seconds, count, detail = SHAPES[shape](h1, h2c, cap)
        except Exception as error:  # a shape that broke is a result too, never a crash of the run
            outcome, seconds, count, detail = "error", 0.0, 0, repr(error)[:80]
        print("\t".join([shape, target, outcome, "%.2f" % seconds, str(count), detail]), flush=True)
        if time.time() >= until:
            break
        time.sleep(max(0.0, pace - (time.monotonic() - started)))


if __name__ == "__main__":
    main()
