"""The permission matrix, generated from the route tables: every route x every role gets
exactly the documented answer, against the real spaced.

The routes are read from the C source of the two route tables (src/api/api_router.c,
src/e2b/e2b_router.c): that is what the router is compiled from, and reading it needs no
test-only surface in the daemon. The expected answers come from the permission table of
docs/tenancy.md (the same table tests/unit/auth/principal_test.c holds the role table to).
A route whose permission is missing from that table, a control route without a permission,
or a route whose path this file cannot fill fails the test: routes added later without an
entry fail here.

Roles: admin (default project), and owner, developer, viewer of project "pa", plus the
owner of another project "pb" ("foreign"). The objects in the paths belong to "pa".

v1 answers. A request is sent with a bare query parameter (?permprobe): the server's query
check refuses it with 400 invalid_request, and that check runs only once the caller has
been let through by the route's guard (authentication, permission, ownership). So a 400
says "allowed", 403 forbidden says "lacks the permission", 404 not_found says "not yours",
and no route is actually performed five times (a DELETE stays a probe). Read routes are
also called for real, expecting 2xx, for every role that may call them.

E2B control routes are called for real (or with a body the handler refuses after the
guard, or on an object in a state that refuses them), each allowed answer named below.
"""

import http.client
import json
import os
import re
import unittest

from spaced_harness import REPO, SpacedTestCase, free_port, tar_of

ROLES = ("admin", "owner", "developer", "viewer", "foreign")
PROBE = "permprobe"


def read(path):
    with open(os.path.join(REPO, path)) as f:
        return f.read()


def perm_names(expr):
    """'PERM_SANDBOX_WRITE | PERM_SANDBOX_EXEC' -> ['sandbox.write', 'sandbox.exec']; '0' -> []."""
    expr = expr.strip()
    if expr == "0":
        return []
    names = []
    for part in expr.split("|"):
        part = part.strip()
        assert part.startswith("PERM_"), "not a permission: %r" % part
        names.append(part[5:].lower().replace("_", ".", 1))
    return names


def v1_routes():
    """[(method, [segments], auth, [permissions])] of the buffered and the streamed tables."""
    src = read("src/api/api_router.c")
    out = []
    for m in re.finditer(r'\{ "(GET|POST|PUT|DELETE|PATCH)", \{ ([^}]*) \}, (&?\w+), (API_AUTH_\w+), '
                         r'(?:API_BODY_\w+, )?([^,}]+)(?:, "[a-z_.]+")?(?:, q_\w+)? \},', src):
        segs = re.findall(r'"([^"]*)"', m.group(2))
        out.append((m.group(1), segs, m.group(4), perm_names(m.group(5))))
    assert len(out) >= 60, "route table not parsed: %d routes" % len(out)
    # every row of both tables was parsed: count the rows another way
    rows = len(re.findall(r'^\s+\{ "(?:GET|POST|PUT|DELETE|PATCH)", \{', src, re.M))
    assert rows == len(out), "parsed %d of %d route rows (a row of another shape?)" % (len(out), rows)
    return out


def e2b_routes():
    src = read("src/e2b/e2b_router.c")
    out = []
    for m in re.finditer(r'\{ "(GET|POST|PUT|DELETE|PATCH)", \{ ([^}]*) \}, (\w+), (CONTROL|ENVD|ENVD_OPEN), '
                         r'([^,}]+), (OBJECT_\w+)(?:, "[a-z_.]+", (?:true|false))? \},', src):
        out.append((m.group(1), re.findall(r'"([^"]*)"', m.group(2)), m.group(4), perm_names(m.group(5)), m.group(6)))
    rows = len(re.findall(r'^\s+\{ "(?:GET|POST|PUT|DELETE|PATCH)", \{', src, re.M))
    assert rows == len(out) and rows > 20, "parsed %d of %d E2B route rows" % (len(out), rows)
    return out


def documented_table():
    """permission -> set of roles that have it, from docs/tenancy.md."""
    text = read("docs/tenancy.md")
    start = text.index("<!-- permission-table")
    table = {}
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("|"):
            if table:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("permission", "---") or cells[0].startswith("-"):
            continue
        name = cells[0].strip("`")
        table[name] = {r for r, c in zip(("admin", "owner", "developer", "viewer"), cells[1:5]) if c == "yes"}
    assert len(table) >= 10, table
    return table


def documented_routes():
    """"METHOD /path" (E2B routes: "E2B METHOD /path") -> [permissions] from docs/tenancy.md;
    [] for a route that takes no key (health) or a token (the data plane)."""
    text = read("docs/tenancy.md")
    block = text[text.index("<!-- route-permissions"):text.index("<!-- /route-permissions -->")]
    out = {}
    for m in re.finditer(r"^- (E2B )?`(\w+) ([^`]+)` → (.*)$", block, re.M):
        key = "%s%s %s" % (m.group(1) or "", m.group(2), m.group(3))
        assert key not in out, "documented twice: " + key
        out[key] = re.findall(r"`([a-z.]+)`", m.group(4))
    return out


def route_key(method, segs, e2b=False):
    return "%s%s /%s" % ("E2B " if e2b else "", method, "/".join("{id}" if s == "*" else s for s in segs))



class Permissions(SpacedTestCase):
    @classmethod
    def setUpClass(cls):
        cls.e2b_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--e2b-listen", "127.0.0.1:%d" % cls.e2b_port]}
        super().setUpClass()
        sp = cls.spaced
        cls.table = documented_table()
        for p in ("pa", "pb"):
            sp.api("POST", "/v1/projects", {"id": p}, expect=201)
        cls.keys = {"admin": sp.key}
        cls.key_ids = {}
        for role, project in (("owner", "pa"), ("developer", "pa"), ("viewer", "pa"), ("foreign", "pb")):
            _, k = sp.api("POST", "/v1/keys", {"name": "m-" + role, "project": project,
                                               "role": "owner" if role == "foreign" else role}, expect=201)
            cls.keys[role], cls.key_ids[role] = k["secret"], k["id"]
        # pa's objects, made by pa's owner
        cls.sb = cls.make_sandbox("owner")
        cls.stopped = cls.make_sandbox("owner")
        sp.api("POST", "/v1/sandboxes/%s/stop?wait=true&timeout_s=120" % cls.stopped, key=cls.keys["owner"], expect=200)
        cls.foreign_sb = cls.make_sandbox("foreign")
        cls.snap = cls.make_snapshot(cls.sb)
        _, ses = sp.api("POST", "/v1/sandboxes/%s/sessions" % cls.sb, {}, key=cls.keys["owner"], expect=(200, 201))
        cls.session = ses["session_id"]
        _, ops = sp.api("GET", "/v1/operations?target=" + cls.sb, key=cls.keys["owner"], expect=200)
        cls.op = ops["operations"][0]["id"]
        _, pol = sp.api("POST", "/v1/policies", {"name": "perm-probe", "default": "allow"}, key=cls.keys["owner"],
                        expect=201)
        cls.policy = pol["id"]
        sp.api("POST", "/v1/policies", {"name": "perm-hold", "rules": [
            {"id": "held", "effect": "require_approval", "actions": ["command"],
             "match": {"argv": {"exact": ["true", "perm-probe-held"]}}}]}, key=cls.keys["owner"], expect=201)
        _, held = sp.api("POST", "/v1/sandboxes/%s/exec" % cls.sb, {"cmd": ["true", "perm-probe-held"]},
                         key=cls.keys["owner"], expect=202)
        cls.approval = held["approval_id"]
        sp.api("POST", "/v1/secrets", {"name": "PERM_PROBE", "value": "probe-value"}, key=cls.keys["owner"], expect=201)
        _, bnd = sp.api("POST", "/v1/credential-bindings", {"secret": "PERM_PROBE", "destination": "probe.test"},
                        key=cls.keys["owner"], expect=201)
        cls.binding = bnd["id"]
        _, grant = sp.api("POST", "/v1/sandboxes/%s/grants" % cls.sb, {"binding": cls.binding, "ttl_s": 3600},
                          key=cls.keys["owner"], expect=201)
        cls.grant = grant["id"]
        tpl = tar_of({"etc": None, "etc/motd": b"pa\n"})
        status, body = sp.request("POST", "/v1/templates/import?name=pa-tpl:1&format=rootfs", raw=tpl,
                                  key=cls.keys["owner"], headers={"Content-Type": "application/x-tar"})
        assert status == 201, (status, body)
        cls.template = "pa-tpl:1"
        cls.tokens = {}
        for role in ("admin", "owner", "developer"):
            _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % cls.sb, {}, key=cls.keys[role], expect=(200, 201))
            cls.tokens[role] = s["attach_token"]
        _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % cls.foreign_sb, {}, key=cls.keys["foreign"], expect=(200, 201))
        cls.tokens["foreign"] = s["attach_token"]

    @classmethod
    def make_sandbox(cls, role):
        _, d = cls.spaced.api("POST", "/v1/sandboxes?wait=true&timeout_s=120", {}, key=cls.keys[role], expect=200)
        cls.spaced.known_ids.add(d["sandbox"]["id"])
        return d["sandbox"]["id"]

    @classmethod
    def make_snapshot(cls, sid):
        _, d = cls.spaced.api("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % sid, {},
                              key=cls.keys["owner"], expect=200)
        return d["snapshot"]["id"]

    # ---------------------------------------------------------------- expectations

    def roles_with(self, perms):
        have = set(ROLES)
        for p in perms:
            self.assertIn(p, self.table, "permission %s is not in the table of docs/tenancy.md" % p)
            roles = set(self.table[p])
            if "owner" in roles:
                roles.add("foreign")  # an owner of another project has the same permissions
            have &= roles
        return have

    def fill(self, segs):
        """The path of a v1 pattern with pa's objects, and whether its first wildcard names one."""
        ids = {"sandboxes": self.sb, "snapshots": self.snap, "templates": self.template, "builds": self.op,
               "operations": self.op, "keys": self.key_ids["viewer"], "projects": "pa", "sessions": self.session,
               "policies": self.policy,
               "approvals": self.approval,
               "secrets": "PERM_PROBE", "credential-bindings": self.binding, "grants": self.grant,
               "commands": "cmd-0000000000000000"}
        out = []
        for i, s in enumerate(segs):
            if s == "*":
                self.assertIn(segs[i - 1], ids, "no object for %s: add one to fill()" % "/".join(segs))
                out.append(ids[segs[i - 1]])
            else:
                out.append(s)
        return "/" + "/".join(out), "*" in segs

    # ---------------------------------------------------------------- the tables

    def test_route_tables_are_documented(self):
        """Each route of both tables has exactly the permission docs/tenancy.md lists for it,
        and the list names no route that is gone."""
        doc = documented_routes()
        got = {route_key(m, segs): perms for m, segs, _, perms in v1_routes()}
        got.update({route_key(m, segs, True): perms for m, segs, half, perms, _ in e2b_routes() if half == "CONTROL"})
        for key, perms in got.items():
            self.assertIn(key, doc, "route %s is not in docs/tenancy.md's route list" % key)
            self.assertEqual(sorted(perms), sorted(doc[key]), "route %s: the table and docs/tenancy.md differ" % key)
        self.assertEqual(set(doc) - set(got), set(), "documented routes that are not in the tables")

    # ---------------------------------------------------------------- v1

    def test_v1_matrix(self):
        sp = self.spaced
        checked = 0
        for method, segs, auth, perms in v1_routes():
            path, names_object = self.fill(segs)
            url = path + "?" + PROBE
            route = "%s /%s" % (method, "/".join(segs))
            if auth == "API_AUTH_CONTROL":
                self.assertTrue(perms, "%s: a control route without a permission" % route)
            for role in ROLES:
                with self.subTest(route=route, role=role):
                    if auth == "API_AUTH_NONE":
                        want = 400
                        status, body = sp.request(method, url, key=self.keys[role])
                    elif auth == "API_AUTH_DATA":
                        # the data plane: an attach token, which only sandbox.exec of the
                        # sandbox's project opens; a viewer gets none (403 at POST sessions)
                        if role == "viewer":
                            st, _ = sp.request("POST", "/v1/sandboxes/%s/sessions" % self.sb, {}, key=self.keys[role])
                            self.assertEqual(st, 403)
                            continue
                        want = 403 if role == "foreign" else 400  # its token is for its own sandbox
                        status, body = sp.request(method, url, key=self.tokens[role])
                    else:
                        allowed = role in self.roles_with(perms)
                        want = 400 if allowed else 403
                        if allowed and role == "foreign" and names_object:
                            want = 404
                        status, body = sp.request(method, url, key=self.keys[role])
                    self.assertEqual(status, want, "%s as %s: %r" % (route, role, body))
                    code = {400: "invalid_request", 403: "forbidden", 404: "not_found"}[want]
                    self.assertEqual(body["error"]["code"], code, body)
                    if want == 400:
                        self.assertIn(PROBE, body["error"]["message"])
                    if want == 403 and auth == "API_AUTH_CONTROL":
                        missing = [p for p in perms if role not in self.roles_with([p])]
                        self.assertTrue(any(p in body["error"]["message"] for p in missing), body)
                    checked += 1
        self.assertGreater(checked, 250)

    def test_v1_reads_for_real(self):
        """Every GET control route answers 2xx to every role that may call it (export, memory,
        streams and build logs aside: they need content this file does not make)."""
        sp = self.spaced
        skip = {"export", "memory", "events", "log", "watch"}
        for method, segs, auth, perms in v1_routes():
            if method != "GET" or auth != "API_AUTH_CONTROL" or skip & set(segs):
                continue
            path, names_object = self.fill(segs)
            for role in self.roles_with(perms):
                if role == "foreign" and names_object:
                    continue
                with self.subTest(path=path, role=role):
                    # a secret's name is its project's: the platform says which project
                    query = "?project=pa" if role == "admin" and segs[1:2] == ["secrets"] and "*" in segs else ""
                    status, body = sp.request("GET", path + query, key=self.keys[role])
                    self.assertEqual(status, 200, "%s as %s: %r" % (path, role, body))

    # ---------------------------------------------------------------- E2B

    def e2b(self, method, path, key, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.e2b_port, timeout=120)
        try:
            h = {"X-API-KEY": key}
            data = None
            if body is not None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                h["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            raw = resp.read()
            return resp.status, (json.loads(raw) if raw else None)
        finally:
            conn.close()

    def test_e2b_matrix(self):
        # (method, pattern) -> (target kind, body, allowed answer)
        how = {
            ("POST", "sandboxes"): (None, b"[]", 400),
            ("POST", "v2/sandboxes"): (None, b"[]", 400),
            ("GET", "sandboxes"): (None, None, 200),
            ("GET", "v2/sandboxes"): (None, None, 200),
            ("GET", "sandboxes/*"): ("sandbox", None, 200),
            ("DELETE", "sandboxes/*"): ("fresh-sandbox", None, 204),
            ("POST", "sandboxes/*/timeout"): ("sandbox", b"[]", 400),
            ("POST", "sandboxes/*/pause"): ("stopped", None, 409),
            ("POST", "sandboxes/*/connect"): ("sandbox", b"[]", 400),
            ("POST", "v2/sandboxes/*/connect"): ("sandbox", b"[]", 400),
            ("POST", "sandboxes/*/resume"): ("sandbox", b"[]", 400),
            ("POST", "sandboxes/*/snapshots"): ("sandbox", b"[]", 400),
            ("GET", "snapshots"): (None, None, 200),
            ("DELETE", "templates/*"): ("fresh-snapshot", None, 204),
            ("POST", "sandboxes/*/fork"): ("sandbox", b"[]", 400),
            ("GET", "sandboxes/*/metrics"): ("sandbox", None, 200),
            ("PUT", "sandboxes/*/network"): ("sandbox", b"[]", 400),
        }
        seen = set()
        for method, segs, half, perms, obj in e2b_routes():
            if half != "CONTROL":
                self.assertEqual(perms, [], "envd routes take the sandbox's token, not a permission")
                continue
            pattern = "/".join(segs)
            self.assertTrue(perms, "E2B %s /%s: a control route without a permission" % (method, pattern))
            self.assertIn((method, pattern), how, "E2B route %s /%s has no entry in test_e2b_matrix" % (method, pattern))
            seen.add((method, pattern))
            target, body, allowed_answer = how[(method, pattern)]
            for role in ROLES:
                with self.subTest(route="%s /%s" % (method, pattern), role=role):
                    allowed = role in self.roles_with(perms)
                    if target == "fresh-sandbox":
                        oid = self.make_sandbox("owner") if allowed and role != "foreign" else self.sb
                    elif target == "fresh-snapshot":
                        oid = self.make_snapshot(self.sb) if allowed and role != "foreign" else self.snap
                    else:
                        oid = {"sandbox": self.sb, "stopped": self.stopped, None: None}[target]
                    path = "/" + pattern.replace("*", oid) if oid else "/" + pattern
                    want = allowed_answer if allowed else 403
                    if allowed and role == "foreign" and oid:
                        want = 404
                    status, answer = self.e2b(method, path, self.keys[role], body)
                    self.assertEqual(status, want, "%s %s as %s: %r" % (method, path, role, answer))
                    if want == 404:  # the same answer as an unknown id
                        kind = "snapshot" if obj == "OBJECT_SNAPSHOT" else "sandbox"
                        self.assertEqual(answer["message"], "%s %s not found" % (kind, oid))
                        unknown = "snap-0000000000000000" if kind == "snapshot" else "sb-0000000000000000"
                        st2, a2 = self.e2b(method, "/" + pattern.replace("*", unknown), self.keys[role], body)
                        self.assertEqual((st2, a2["message"]), (404, "%s %s not found" % (kind, unknown)))
        self.assertEqual(seen, set(how), "entries for routes that are gone")


if __name__ == "__main__":
    unittest.main()
