"""A real slicestream-server for the client's tests: CPU backend, ephemeral loopback ports
(read from its "ready" line), HTTP on an ephemeral port. SLICESTREAM_SERVER names the program
(ctest sets it); else the build tree's."""
import os
import re
import subprocess
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SERVER = os.path.join(HERE, "..", "..", "..", "build", "server", "slicestream-server")
READY = re.compile(r"ready: data (\S+) \| slices (\S+) \| requests (\S+) \| http (\S+)")


class RunningServer:
    def __init__(self, *args):
        program = os.environ.get("SLICESTREAM_SERVER", DEFAULT_SERVER)
        if not os.path.exists(program):
            pytest.fail(f"{program} not found: build slicestream-server or set SLICESTREAM_SERVER")
        self.process = subprocess.Popen(
            [program, "--backend", "cpu", "--threads", "2", "--data", "tcp://127.0.0.1:*",
             "--slices", "tcp://127.0.0.1:*", "--requests", "tcp://127.0.0.1:*",
             "--http", "127.0.0.1:0", "--stats-interval", "0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.log = []
        ready = threading.Event()

        def read():
            for line in self.process.stdout:
                self.log.append(line)
                match = READY.search(line)
                if match:
                    self.data, self.slices, self.requests, self.http = match.groups()
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(30):
            self.stop()
            pytest.fail("slicestream-server did not start:\n" + "".join(self.log))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                return self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()


@pytest.fixture
def server():
    running = RunningServer("--slice-size", "48", "--preview-size", "16")
    yield running
    status = running.stop()
    assert status == 0, "the server must drain and exit 0:\n" + "".join(running.log[-20:])


def wait_until(predicate, timeout_s=20):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
