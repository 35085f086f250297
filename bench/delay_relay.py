"""A delay line for ssh's ProxyCommand (bench/machines.py ``--delay``), where ``tc netem``
cannot be had: ``delay_relay.py HOST PORT SECONDS`` connects to HOST:PORT and relays stdin to
it and it to stdout, each chunk held SECONDS after it was read before it is written (chunks
keep their order; a chunk is never held behind the previous one's wait).  Stdlib only."""

from __future__ import annotations

import os
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable


def pump(read: Callable[[], bytes], write: Callable[[bytes], object], delay: float) -> None:
    held: queue.Queue[tuple[float, bytes]] = queue.Queue()

    def writer() -> None:
        while True:
            due, chunk = held.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not chunk:
                os._exit(0)
            write(chunk)

    threading.Thread(target=writer, daemon=True).start()
    while True:
        try:
            chunk = read()
        except OSError:
            chunk = b""
        held.put((time.monotonic() + delay, chunk))
        if not chunk:
            return


def main() -> None:
    host, port, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    conn = socket.create_connection((host, port))
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()

    def to_stdout(chunk: bytes) -> None:
        os.write(stdout, chunk)

    threading.Thread(
        target=pump, args=(lambda: conn.recv(65536), to_stdout, delay), daemon=True
    ).start()
    pump(lambda: os.read(stdin, 65536), conn.sendall, delay)
    time.sleep(delay + 1)  # let the other way drain; its end exits the process


if __name__ == "__main__":
    main()
