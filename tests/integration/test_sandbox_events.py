"""GET /v1/sandboxes/events (docs/api.md, "Sandbox events"): the sandboxes the caller
lists, `synced`, then a `sandbox` event for one that appears or changes and `removed` for
one destroyed; a key of another project sees none of them; bad input is a 4xx."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spaced_harness import SpacedTestCase  # noqa: E402


def until(stream, test, what, deadline_s=30):
    """Reads events until test(event) is true; returns the events read, that one last."""
    seen = []
    end = time.time() + deadline_s
    while time.time() < end:
        ev = stream.next()
        if ev is None:
            raise AssertionError("the stream ended before %s: %r" % (what, seen))
        seen.append(ev)
        if test(ev):
            return seen
    raise AssertionError("no %s within %ss: %r" % (what, deadline_s, seen))


class SandboxEventsTest(SpacedTestCase):
    def test_list_then_changes(self):
        first = self.new_sandbox()
        s = self.spaced.events("/v1/sandboxes/events")
        try:
            self.assertEqual(s.status, 200)
            self.assertTrue(s.headers["content-type"].startswith("text/event-stream"))
            got = until(s, lambda e: e.get("event") == "synced", "synced")
            listed = [json.loads(e["data"]) for e in got if e.get("event") == "sandbox"]
            self.assertIn(first, [sb["id"] for sb in listed])
            self.assertEqual(json.loads(got[-1]["data"])["count"], len(listed))
            self.assertTrue(all("id" not in e for e in got), "events carry no id")

            # a new one appears (creating, then running), a pause is seen, a destroy removes it
            second = self.new_sandbox()
            until(s, lambda e: e.get("event") == "sandbox" and json.loads(e["data"])["id"] == second
                  and json.loads(e["data"])["state"] == "running", "the new sandbox running")
            self.spaced.api("POST", "/v1/sandboxes/%s/pause?wait=true" % first, {}, expect=200)
            until(s, lambda e: e.get("event") == "sandbox" and json.loads(e["data"])["id"] == first
                  and json.loads(e["data"])["state"] == "paused", "the pause")
            self.spaced.api("DELETE", "/v1/sandboxes/%s?wait=true" % second, expect=200)
            until(s, lambda e: e.get("event") == "removed" and json.loads(e["data"]) == {"id": second}, "the removal")
        finally:
            s.conn.close()

    def test_another_project_sees_nothing_of_ours(self):
        mine = self.new_sandbox()
        self.spaced.api("POST", "/v1/projects", {"id": "events-other"}, expect=201)
        _, key = self.spaced.api("POST", "/v1/keys", {"name": "other", "project": "events-other", "role": "owner"},
                                 expect=201)
        s = self.spaced.events("/v1/sandboxes/events", key=key["secret"])
        try:
            self.assertEqual(s.status, 200)
            got = until(s, lambda e: e.get("event") == "synced", "synced")
            self.assertEqual([e for e in got if e.get("event") == "sandbox"], [])
            self.assertEqual(json.loads(got[-1]["data"]), {"count": 0})
        finally:
            s.conn.close()
        # ours asked for by name is a 404, as on the list
        s = self.spaced.events("/v1/sandboxes/events?project=default", key=key["secret"])
        try:
            self.assertEqual(s.status, 404)
            self.assertEqual(s.body()["error"]["code"], "not_found")
        finally:
            s.conn.close()
        self.assertTrue(mine)

    def test_bad_input(self):
        for q, status in (("?keepalive_s=0", 400), ("?keepalive_s=x", 400), ("?state=running", 400),
                          ("?project=../x", 400)):
            s = self.spaced.events("/v1/sandboxes/events" + q)
            try:
                self.assertEqual(s.status, status, q)
                self.assertEqual(s.body()["error"]["code"], "invalid_request", q)
            finally:
                s.conn.close()
        s = self.spaced.events("/v1/sandboxes/events", key=None)
        try:
            self.assertEqual(s.status, 401)
        finally:
            s.conn.close()


if __name__ == "__main__":
    unittest.main()
