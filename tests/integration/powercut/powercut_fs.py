"""Drives the powercut FUSE filesystem (powercut.c) from the tests: mount it over a backing
directory, ask what a cut would undo, cut the power, unmount.

The binary comes from $POWERCUT (set by meson) or build/tests/integration/powercut/powercut
of the repository. Standard library only.
"""

import os
import signal
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
POWERCUT = os.environ.get("POWERCUT", os.path.join(REPO, "build/tests/integration/powercut/powercut"))


def require_powercut():
    """Fails (never skips) when the tool or FUSE is missing: the durability claims would go untested."""
    if not os.access(POWERCUT, os.X_OK):
        raise AssertionError("powercut binary missing: %s (install libfuse3-dev fuse3 with scripts/install-deps, "
                             "then ./scripts/build)" % POWERCUT)
    if not os.path.exists("/dev/fuse"):
        raise AssertionError("/dev/fuse is missing: the power-cut tests need FUSE")


def parse_status(text):
    """'cut files=F blocks=B bytes_beyond=N error=E' plus 'file NAME size=.. synced=.. blocks=..' lines."""
    lines = text.splitlines()
    head = lines[0].split()
    out = {"kind": head[0], "paths": {}}
    for kv in head[1:]:
        k, _, v = kv.partition("=")
        out[k] = int(v)
    for line in lines[1:]:
        parts = line.split()
        if parts and parts[0] == "file":
            fields = dict(p.partition("=")[::2] for p in parts[2:])
            out["paths"][parts[1]] = {k: int(v) for k, v in fields.items()}
    return out


class PowercutFs:
    """One powercut mount: backing directory `backing` shown at `mountpoint`."""

    def __init__(self, backing, mountpoint, log_path=None, torn_seed=None):
        self.backing = os.path.abspath(backing)
        self.mountpoint = os.path.abspath(mountpoint)
        self.status_path = self.backing + ".powercut-status"
        self.log_path = log_path or self.backing + ".powercut-log"
        self.torn_seed = torn_seed  # a cut keeps a seeded random part of the unsynced writes
        self.proc = None

    def mount(self):
        require_powercut()
        os.makedirs(self.backing, exist_ok=True)
        os.makedirs(self.mountpoint, exist_ok=True)
        with open(self.log_path, "wb") as log:
            torn = ["--torn", str(self.torn_seed)] if self.torn_seed else []
            self.proc = subprocess.Popen([POWERCUT, "--status", self.status_path] + torn +
                                         [self.backing, self.mountpoint, "-o", "max_threads=16"],
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, close_fds=True)
        deadline = time.monotonic() + 10
        while not self.mounted():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("powercut did not mount %s: %s" % (self.mountpoint, self.log()))
            time.sleep(0.02)
        return self

    def mounted(self):
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                if fields[4] == self.mountpoint and " - fuse.powercut " in line:
                    return True
        return False

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _signal(self, sig, kind, timeout=60):
        try:
            os.unlink(self.status_path)
        except FileNotFoundError:
            pass
        self.proc.send_signal(sig)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(self.status_path) as f:
                    st = parse_status(f.read())
                if st["kind"] == kind:
                    return st
            except FileNotFoundError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("powercut did not answer %s: %s" % (kind, self.log()))
            time.sleep(0.02)

    def pending(self):
        """What a cut would undo now: {"paths": {backing path: {size, synced, blocks}}, "files": .., "blocks": ..}."""
        return self._signal(signal.SIGUSR2, "pending")

    def cut(self):
        """Cuts the power: from now on every operation fails with EIO and the backing
        directory holds exactly what was synced. Returns what was undone."""
        st = self._signal(signal.SIGUSR1, "cut")
        if st.get("error"):
            raise AssertionError("powercut could not undo everything (error %d): %s" % (st["error"], self.log()))
        return st

    def unmount(self, timeout=20):
        """Lazily unmounts and waits for the daemon to end (kills it past timeout)."""
        if self.mounted():
            subprocess.run(["umount", "-l", self.mountpoint], capture_output=True)
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # Something (a loop device) still holds a file open: the backing directory is
            # final anyway after a cut, so end the daemon.
            self.proc.kill()
            self.proc.wait()
