"""GET /metrics: Prometheus' text format, parsed strictly, checked against what the test did
(requests by route and status, operations by kind and outcome, sandboxes by state, streams,
the pool), who may read it on --listen, and the keyless --metrics-listen listener."""
import http.client
import math
import re
import time
import unittest

from spaced_harness import SpacedTestCase, free_port

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(%s)(?:\{(.*)\})? (\S+)$" % NAME)
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def parse(text):
    """{family: {"type", "help", "samples": [(name, labels dict, value)]}}; raises on any line
    that is not the text exposition format, a sample before its TYPE, a family declared
    twice, or a histogram whose buckets are not cumulative up to +Inf == _count."""
    families, current = {}, None
    assert text.endswith("\n"), "the text must end with a newline"
    for line in text.split("\n")[:-1]:
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert name not in families, "family %s declared twice" % name
            families[name] = {"help": line.split(" ", 3)[3], "type": None, "samples": []}
            current = name
            continue
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ")
            assert name == current and typ in ("counter", "gauge", "histogram"), line
            families[name]["type"] = typ
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        name, labels_text, value = m.groups()
        labels, pos = {}, 0
        while labels_text and pos < len(labels_text):
            lm = LABEL.match(labels_text, pos)
            assert lm, "bad labels in %r" % line
            labels[lm.group(1)] = lm.group(2).replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
            pos = lm.end()
        fam = families.get(current)
        assert fam and fam["type"], "sample before its family's TYPE: %r" % line
        base = name
        if fam["type"] == "histogram":
            assert name in (current + "_bucket", current + "_sum", current + "_count"), line
        else:
            assert name == current, line
        fam["samples"].append((base, labels, float(value)))
    for name, fam in families.items():
        if fam["type"] != "histogram":
            continue
        series = {}
        for sname, labels, value in fam["samples"]:
            key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
            series.setdefault(key, {"buckets": [], "count": None})
            if sname.endswith("_bucket"):
                series[key]["buckets"].append((float(labels["le"]), value))
            elif sname.endswith("_count"):
                series[key]["count"] = value
        for key, s in series.items():
            bounds = [b for b, _ in s["buckets"]]
            assert bounds == sorted(bounds) and bounds[-1] == math.inf, (name, key, bounds)
            counts = [c for _, c in s["buckets"]]
            assert counts == sorted(counts), (name, key, "buckets not cumulative", counts)
            assert counts[-1] == s["count"], (name, key, "+Inf bucket != _count")
    return families


def value(families, name, **labels):
    """The sample of family name (a _count for histograms) whose labels include labels; 0 if none."""
    fam = families[name]
    want = name + "_count" if fam["type"] == "histogram" else name
    total = 0.0
    for sname, l, v in fam["samples"]:
        if sname == want and all(l.get(k) == str(x) for k, x in labels.items()):
            total += v
    return total


class Metrics(SpacedTestCase):
    @classmethod
    def setUpClass(cls):
        cls.metrics_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--metrics-listen", "127.0.0.1:%d" % cls.metrics_port]}
        super().setUpClass()

    def scrape(self, key="admin"):
        st, body = self.spaced.request("GET", "/metrics", key=key)
        self.assertEqual(st, 200, body)
        self.assertTrue(self.spaced.last_headers["Content-Type"].startswith("text/plain; version=0.0.4"))
        return parse(body.decode() if isinstance(body, bytes) else body)

    def scrape_listener(self, path="/metrics", method="GET"):
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=30)
        try:
            conn.request(method, path)
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def test_counts_what_was_done(self):
        sp = self.spaced
        before = self.scrape()
        sid = self.new_sandbox()
        for _ in range(3):
            sp.api("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]}, expect=200)
        sp.request("GET", "/v1/sandboxes/sb-0000000000000000")  # a 404
        after = self.scrape()
        d = lambda name, **l: value(after, name, **l) - value(before, name, **l)  # noqa: E731
        self.assertEqual(d("space_http_requests_total", door="v1", action="sandbox.exec", status=200), 3)
        self.assertEqual(d("space_http_requests_total", door="v1", action="sandbox.get", status=404), 1)
        self.assertEqual(d("space_http_request_duration_seconds", door="v1", action="sandbox.exec"), 3)
        self.assertEqual(d("space_operation_duration_seconds", kind="sandbox.create", outcome="succeeded"), 1)
        self.assertEqual(d("space_operation_queue_wait_seconds", kind="sandbox.create"), 1)
        self.assertEqual(d("space_sandbox_create_ready_seconds"), 1)
        _, listed = sp.api("GET", "/v1/sandboxes?state=running", expect=200)
        self.assertEqual(value(after, "space_sandboxes", state="running", runtime="namespaces"), len(listed["sandboxes"]))
        self.assertGreaterEqual(value(after, "space_sandboxes", state="running"), 1)
        # a failed operation is counted as failed
        sp.api("POST", "/v1/sandboxes/%s/stop?wait=true&timeout_s=60" % sid, expect=200)
        st, _ = sp.request("POST", "/v1/sandboxes/%s/restore?wait=true&timeout_s=60" % sid,
                           {"snapshot_id": "snap-0000000000000000"})
        self.assertIn(st, (400, 404, 409))
        later = self.scrape()
        self.assertEqual(value(later, "space_operation_duration_seconds", kind="sandbox.stop", outcome="succeeded")
                         - value(after, "space_operation_duration_seconds", kind="sandbox.stop", outcome="succeeded"), 1)
        self.assertEqual(value(later, "space_sandboxes", state="stopped", runtime="namespaces")
                         - value(after, "space_sandboxes", state="stopped", runtime="namespaces"), 1)

    def test_pool_and_build_info(self):
        m = self.scrape()
        _, health = self.spaced.api("GET", "/v1/health", key=None, expect=200)
        pool = health["checks"]["pool"]
        self.assertEqual(value(m, "space_pool_condition", condition=pool["condition"]), 1)
        self.assertEqual(sum(v for _, _, v in m["space_pool_condition"]["samples"]), 1)
        self.assertGreater(value(m, "space_pool_bytes"), 0)
        self.assertGreater(value(m, "space_pool_free_bytes"), 0)
        _, version = self.spaced.api("GET", "/v1/version", expect=200)
        self.assertEqual(value(m, "space_build_info", version=version["version"]), 1)
        for name in ("space_operations_unfinished", "space_streams_active"):
            self.assertIn(name, m)

    def test_an_open_stream_is_counted(self):
        sp = self.spaced
        sid = self.new_sandbox()
        _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=201)
        tok = s["attach_token"]
        _, c = sp.api("POST", "/v1/sandboxes/%s/commands" % sid, {"cmd": ["sleep", "30"]}, key=tok, expect=201)
        before = value(self.scrape(), "space_streams_active", kind="command_events")
        es = sp.events("/v1/sandboxes/%s/commands/%s/events?keepalive_s=1" % (sid, c["command_id"]), key=tok)
        try:
            self.assertEqual(es.status, 200)
            self.assertEqual(value(self.scrape(), "space_streams_active", kind="command_events"), before + 1)
        finally:
            es.close()
        sp.api("POST", "/v1/sandboxes/%s/commands/%s/signal" % (sid, c["command_id"]), {"signal": "KILL"}, key=tok,
               expect=(200, 202, 204))
        for _ in range(100):
            if value(self.scrape(), "space_streams_active", kind="command_events") == before:
                break
            time.sleep(0.1)
        self.assertEqual(value(self.scrape(), "space_streams_active", kind="command_events"), before)

    def test_command_log_bytes(self):
        sp = self.spaced
        sid = self.new_sandbox()
        _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=201)
        tok = s["attach_token"]
        before = value(self.scrape(), "space_command_log_written_bytes_total")
        # 200 KiB of output through a streamed command's log.
        _, c = sp.api("POST", "/v1/sandboxes/%s/commands" % sid, {"cmd": ["sh", "-c", "head -c 204800 /dev/zero"]},
                      key=tok, expect=201)
        for _ in range(200):
            _, cmd = sp.api("GET", "/v1/sandboxes/%s/commands/%s" % (sid, c["command_id"]), key=tok, expect=200)
            if cmd.get("state") != "running":
                break
            time.sleep(0.1)
        grown = value(self.scrape(), "space_command_log_written_bytes_total") - before
        self.assertGreaterEqual(grown, 204800)
        self.assertLess(grown, 204800 * 3)  # base64 in JSON records would be more than that
        self.assertIn("space_command_log_dropped_bytes_total", self.scrape())

    def test_who_may_read_it_on_the_api_listener(self):
        sp = self.spaced
        st, body = sp.request("GET", "/metrics", key=None)
        self.assertEqual((st, body["error"]["code"]), (401, "unauthorized"))
        for role in ("owner", "developer", "viewer"):
            _, k = sp.api("POST", "/v1/keys", {"name": "m-" + role, "role": role}, expect=201)
            st, body = sp.request("GET", "/metrics", key=k["secret"])
            self.assertEqual((st, body["error"]["code"]), (403, "forbidden"), role)
        self.assertEqual(sp.request("POST", "/metrics", {})[0], 405)
        st, body = sp.request("GET", "/metrics?x=1")
        self.assertEqual(st, 400, body)

    def test_metrics_listener_needs_no_key_and_serves_nothing_else(self):
        st, headers, body = self.scrape_listener()
        self.assertEqual(st, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"))
        m = parse(body.decode())
        self.assertIn("space_http_requests_total", m)
        # its own scrapes are counted under their own door
        st, _, body = self.scrape_listener()
        self.assertGreaterEqual(value(parse(body.decode()), "space_http_requests_total", door="metrics",
                                      action="metrics.get", status=200), 1)
        for path in ("/v1/sandboxes", "/v1/health", "/metrics/x", "/"):
            st, _, body = self.scrape_listener(path)
            self.assertEqual(st, 404, path)
            self.assertIn(b'"not_found"', body)
        st, _, _ = self.scrape_listener(method="DELETE")
        self.assertEqual(st, 405)

    def test_label_values_are_bounded_and_escaped(self):
        """Paths no route knows are counted under action "unknown", never under the path."""
        sp = self.spaced
        for i in range(20):
            sp.request("GET", '/v1/nope-%d"\\' % i)
        m = self.scrape()
        actions = {l.get("action") for _, l, _ in m["space_http_requests_total"]["samples"]}
        self.assertIn("unknown", actions)
        self.assertFalse([a for a in actions if a and "nope" in a], actions)


if __name__ == "__main__":
    unittest.main()
