"""A throwaway PostgreSQL cluster for the integration tests (tests/pg_cluster/pg-cluster):
its own data directory and Unix socket under a temporary directory, no TCP, removed by
stop(). Never the system's cluster."""

import os
import subprocess
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PG_CLUSTER = os.path.join(REPO, "tests", "pg_cluster", "pg-cluster")
PORT = "55433"


class PgCluster:
    def __init__(self, parent=None):
        self.dir = tempfile.mkdtemp(prefix="space-pg-", dir=parent or "/tmp")
        self.running = False

    def start(self):
        subprocess.run([PG_CLUSTER, "start", self.dir, PORT], check=True, capture_output=True, timeout=120)
        self.running = True
        return self

    def url(self, database="postgres"):
        return "postgresql://space@/%s?host=%s&port=%s" % (database, self.dir, PORT)

    def psql(self, sql, database="postgres"):
        """Runs sql with psql and returns its unaligned output."""
        r = subprocess.run(["psql", "-X", "-qAt", "-v", "ON_ERROR_STOP=1", self.url(database), "-c", sql],
                           check=True, capture_output=True, text=True, timeout=60)
        return r.stdout.strip()

    def create_database(self, name):
        self.psql("CREATE DATABASE %s" % name)
        return self.url(name)

    def stop(self):
        """Stops the server and removes its directory. Best effort, never raises."""
        try:
            subprocess.run([PG_CLUSTER, "stop", self.dir, PORT], capture_output=True, timeout=120)
        except Exception:  # noqa: BLE001
            pass
        self.running = False
