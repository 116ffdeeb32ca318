"""free_port: ports that no outgoing connection takes and that one process never repeats."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

from workcoord.kit.startup import _ephemeral_low, free_port


def test_free_ports_are_below_the_ephemeral_range_and_never_repeat() -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        ports = list(pool.map(lambda _: free_port(), range(400)))
    assert len(set(ports)) == len(ports)
    assert all(1024 <= port < _ephemeral_low() for port in ports)


def test_a_free_port_can_be_listened_on() -> None:
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", port))
        server.listen(1)
    assert free_port() != port
