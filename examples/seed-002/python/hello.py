"""Seed 002's Python hello world: the standard library alone (http.server), no framework.

ThreadingHTTPServer serves each connection on a thread of its own; HTTP/1.1 keeps connections
alive. Answers "Hello World\\n" as text/plain on 127.0.0.1 at the port given as the only
argument (gatebench's {port}), without logging every request.
"""

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HELLO = b"Hello World\n"


class Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The headers and the body are two writes: without TCP_NODELAY the body waits for the
    # client's delayed ACK of the headers (Nagle's algorithm, RFC 896), about 40 ms on Linux.
    disable_nagle_algorithm = True

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(HELLO)))
        self.end_headers()
        self.wfile.write(HELLO)

    def log_message(self, format, *args):
        pass


class Server(ThreadingHTTPServer):
    # Room for a burst of new connections (the default backlog is 5).
    request_queue_size = 4096
    daemon_threads = True


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 hello.py PORT")
    Server(("127.0.0.1", int(sys.argv[1])), Hello).serve_forever()
