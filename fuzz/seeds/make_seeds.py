#!/usr/bin/env python3
"""Writes the seed inputs of every fuzz target into corpus/<target>/ (real requests,
responses, frames and header blocks, in each target's input format). Run from fuzz/."""
import os, struct, hashlib

def put(target, data):
    d = os.path.join("corpus", target)
    os.makedirs(d, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def h(s):
    return bytes.fromhex("".join(s.split()))

# ---- HPACK blocks (RFC 7541 Appendix C.3, C.4, C.5, C.6) ----
c5 = [h("4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
      h("4803 3330 37c1 c0bf"),
      h("88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31")]
c6 = [h("3fe1 01"),
      h("4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3"),
      h("4883 640e ffc1 c0bf"),
      h("88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07")]
c3 = [h("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
      h("8286 84be 5808 6e6f 2d63 6163 6865"),
      h("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65")]
ok_head = bytes([0x88, 0x0f, 0x0d, 0x02]) + b"13"
for blocks in (c5, c6, c3, [ok_head], [bytes([0x88, 0x5c, 0x01]) + b"7", bytes([0x8d, 0xbe])]):
    put("hpack", b"".join(bytes([len(b)]) + b for b in blocks))

# ---- Huffman strings (RFC 7541 C.4, C.6) ----
for s in ["f1e3 c2e5 f23a 6ba0 ab90 f4ff", "a8eb 1064 9cbf", "25a8 49e9 5ba9 7d7f",
          "25a8 49e9 5bb8 e8b4 bf", "6402", "aec3 771a 4b",
          "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
          "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3", "ffff ffff", ""]:
    put("huffman", h(s))

# ---- HTTP/2 connection scripts (see gatebench_loadgen::fuzz::h2_conn) ----
def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

def server(data):
    out = b""
    while data:
        chunk, data = data[:255], data[255:]
        out += bytes([0, len(chunk)]) + chunk
    return out

settings = frame(4, 0, 0, struct.pack(">HI", 3, 100) + struct.pack(">HI", 4, 65535))
ack = frame(4, 1, 0, b"")
pong = frame(6, 1, 0, b"gatebnch")
resp_headers = frame(1, 4, 1, ok_head)
resp_data = frame(0, 1, 1, b"0123456789abc")
OPEN_GET, OPEN_POST, CANCEL, POLL, EOF = 4, 5, 6, 7, 15
put("h2_conn", server(settings + ack + pong) + bytes([OPEN_GET]) + server(resp_headers + resp_data) + bytes([POLL]))
put("h2_conn", server(settings + ack + pong) + bytes([OPEN_POST, 1]) + server(frame(1, 5, 1, bytes([0x88]))) + bytes([POLL]))
put("h2_conn", server(settings) + bytes([OPEN_POST | 8, 250]) + server(frame(8, 0, 0, struct.pack(">I", 100000)) + frame(8, 0, 1, struct.pack(">I", 100000))) + bytes([POLL]) + server(frame(1, 4, 1, ok_head[:1] + bytes([0x0f, 0x0d, 0x01]) + b"0") + frame(0, 1, 1, b"")) + bytes([POLL]))
put("h2_conn", server(settings) + bytes([OPEN_GET, OPEN_GET | 8]) + server(frame(3, 0, 1, struct.pack(">I", 7)) + frame(7, 0, 0, struct.pack(">II", 1, 0))) + bytes([POLL, EOF]))
put("h2_conn", server(settings) + bytes([OPEN_GET]) + server(frame(1, 0, 1, bytes([0x88])) + frame(9, 4, 1, bytes([0x0f, 0x0d, 0x01]) + b"0")) + bytes([CANCEL, 0, POLL]))
put("h2_conn", server(settings) + bytes([OPEN_GET]) + server(frame(1, 8 | 4 | 1, 1, bytes([2, 0x88, 0, 0]))) + bytes([POLL]))

# ---- HTTP/1.1 responses ----
responses = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n",
    b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\n\r\nall of it",
    b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nContent-Length: 2\r\nX-A: b\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 302 Found\r\nLocation: /x\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\n\r\n",
]
for i, r in enumerate(responses):
    put("http1_response", bytes([[0, 1, 2 | 4 | (5 << 3), 2][i % 4], i * 37 % 256]) + r)
    put("h1client", bytes([1 if i == 6 else 0, i * 53 % 256]) + r)

# ---- HTTP/1.1 requests ----
requests = [
    b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
    b"GET http://a/x HTTP/1.0\r\n\r\n",
    b"\r\nGET / HTTP/1.1\nHost: a\n\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
    b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloGET /smuggled HTTP/1.1\r\n\r\n",
]
for i, r in enumerate(requests):
    put("h1server", bytes([i * 41 % 256]) + r)

# ---- JSON documents ----
docs = [
    b'{"s":"x","n":-1.5e3,"t":true,"f":false,"z":null,"a":[1,"y",[]],"o":{"k":{}},"e":""}',
    b'[1, 2.5, -0, 1e400, "\\u00e9\\ud83d\\ude00", {"a b": 1, "xml": 2, "_": 3, "\xe6\x97\xa5": 4}]',
    b'{"a":1,"a":2}', b'"text with <&>\\"\' and \\r\\n"', b"  null  ", b"[[[[[[]]]]]]",
    b'{"seed":4,"items":[{"id":1,"name":"widget","price":9.99,"tags":["a","b"]}]}',
    b'"\\u0000"', b'{"k":"\\ud800"}',
]
for d in docs:
    put("json_xml", d)
