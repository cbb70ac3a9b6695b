"""Projects as tenants, against the real spaced: another project's objects are invisible
(the same 404 as an unknown id, for every kind of object), lists show one project, a key
never makes a key with more than it has, an expired key is refused, and E2B keys are
ordinary keys of their project."""

import http.client
import json
import time
import unittest

from spaced_harness import SpacedTestCase, free_port, tar_of



class Tenancy(SpacedTestCase):
    @classmethod
    def setUpClass(cls):
        cls.e2b_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--e2b-listen", "127.0.0.1:%d" % cls.e2b_port]}
        super().setUpClass()
        sp = cls.spaced
        for p in ("ta", "tb"):
            sp.api("POST", "/v1/projects", {"id": p}, expect=201)
        cls.a = cls.key("a-owner", "ta", "owner")
        cls.b = cls.key("b-owner", "tb", "owner")
        cls.a_sb = cls.sandbox(cls.a)
        cls.b_sb = cls.sandbox(cls.b)
        _, d = sp.api("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % cls.a_sb, {}, key=cls.a, expect=200)
        cls.a_snap = d["snapshot"]["id"]
        _, ops = sp.api("GET", "/v1/operations?target=" + cls.a_sb, key=cls.a, expect=200)
        cls.a_op = ops["operations"][0]["id"]
        _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % cls.a_sb, {}, key=cls.a, expect=(200, 201))
        cls.a_session = s["session_id"]
        status, body = sp.request("POST", "/v1/templates/import?name=ta-only:1&format=rootfs",
                                  raw=tar_of({"etc": None, "etc/motd": b"ta\n"}), key=cls.a,
                                  headers={"Content-Type": "application/x-tar"})
        assert status == 201, (status, body)
        _, k = sp.api("POST", "/v1/keys", {"name": "a-viewer", "project": "ta", "role": "viewer"}, expect=201)
        cls.a_viewer, cls.a_viewer_id = k["secret"], k["id"]

    @classmethod
    def key(cls, name, project, role, **extra):
        body = {"name": name, "project": project, "role": role}
        body.update(extra)
        _, k = cls.spaced.api("POST", "/v1/keys", body, expect=201)
        return k["secret"]

    @classmethod
    def sandbox(cls, key):
        _, d = cls.spaced.api("POST", "/v1/sandboxes?wait=true&timeout_s=120", {}, key=key, expect=200)
        cls.spaced.known_ids.add(d["sandbox"]["id"])
        return d["sandbox"]["id"]

    def same_404(self, method, path_of, real_id, unknown_id, key, body=None):
        """The foreign id and an unknown one get the same code and the same message shape."""
        r1 = self.spaced.request(method, path_of(real_id), body, key=key)
        r2 = self.spaced.request(method, path_of(unknown_id), body, key=key)
        self.assertEqual(r1[0], 404, r1)
        self.assertEqual(r2[0], 404, r2)
        self.assertEqual(r1[1]["error"]["code"], r2[1]["error"]["code"])
        self.assertEqual(r1[1]["error"]["message"].replace(real_id, "ID"), r2[1]["error"]["message"].replace(unknown_id, "ID"))

    # ---------------------------------------------------------------- invisible

    def test_foreign_ids_are_404_like_unknown_ones(self):
        b = self.b
        sb = lambda i: "/v1/sandboxes/" + i  # noqa: E731
        self.same_404("GET", sb, self.a_sb, "sb-0000000000000000", b)
        self.same_404("DELETE", sb, self.a_sb, "sb-0000000000000000", b)
        self.same_404("PATCH", sb, self.a_sb, "sb-0000000000000000", b, {"metadata": {"x": "y"}})
        self.same_404("POST", lambda i: sb(i) + "/exec", self.a_sb, "sb-0000000000000000", b, {"argv": ["true"]})
        self.same_404("POST", lambda i: sb(i) + "/stop", self.a_sb, "sb-0000000000000000", b)
        self.same_404("POST", lambda i: sb(i) + "/sessions", self.a_sb, "sb-0000000000000000", b, {})
        self.same_404("GET", lambda i: sb(i) + "/sessions", self.a_sb, "sb-0000000000000000", b)
        self.same_404("DELETE", lambda i: "/v1/sandboxes/%s/sessions/%s" % (i, self.a_session), self.a_sb,
                      "sb-0000000000000000", b)
        self.same_404("GET", lambda i: sb(i) + "/snapshots", self.a_sb, "sb-0000000000000000", b)
        self.same_404("POST", lambda i: sb(i) + "/fork", self.a_sb, "sb-0000000000000000", b, {})
        snap = lambda i: "/v1/snapshots/" + i  # noqa: E731
        self.same_404("GET", snap, self.a_snap, "snap-0000000000000000", b)
        self.same_404("DELETE", snap, self.a_snap, "snap-0000000000000000", b)
        self.same_404("GET", lambda i: snap(i) + "/export", self.a_snap, "snap-0000000000000000", b)
        # a foreign snapshot named in a body: as unknown
        for sid in (self.a_snap, "snap-0000000000000000"):
            st, body = self.spaced.request("POST", "/v1/sandboxes/%s/restore" % self.b_sb, {"snapshot_id": sid}, key=b)
            self.assertEqual((st, body["error"]["message"]), (404, "snapshot %s not found" % sid))
            st, body = self.spaced.request("POST", "/v1/sandboxes/%s/fork" % self.b_sb, {"snapshot_id": sid}, key=b)
            self.assertEqual((st, body["error"]["message"]), (404, "snapshot %s not found" % sid))
        st, body = self.spaced.request("POST", "/v1/sandboxes", {"snapshot_id": self.a_snap}, key=b)
        self.assertEqual((st, body["error"]["message"]), (404, "snapshot %s not found" % self.a_snap))
        op = lambda i: "/v1/operations/" + i  # noqa: E731
        self.same_404("GET", op, self.a_op, "op-0000000000000000", b)
        self.same_404("POST", lambda i: op(i) + "/cancel", self.a_op, "op-0000000000000000", b)
        self.same_404("GET", lambda i: "/v1/templates/builds/%s/log" % i, self.a_op, "op-0000000000000000", b)
        self.same_404("GET", lambda i: "/v1/templates/" + i, "ta-only:1", "nothing-here:1", b)
        self.same_404("DELETE", lambda i: "/v1/templates/" + i, "ta-only:1", "nothing-here:1", b)
        self.same_404("DELETE", lambda i: "/v1/keys/" + i, self.a_viewer_id, "key-0000000000000000", b)
        self.same_404("GET", lambda i: "/v1/projects/" + i, "ta", "nope", b)
        # and the owner itself sees them all
        for path in ("/v1/sandboxes/" + self.a_sb, "/v1/snapshots/" + self.a_snap, "/v1/operations/" + self.a_op,
                     "/v1/templates/ta-only:1", "/v1/projects/ta"):
            self.spaced.api("GET", path, key=self.a, expect=200)

    def test_a_foreign_template_cannot_be_used_or_taken(self):
        b = self.b
        st, body = self.spaced.request("POST", "/v1/sandboxes", {"template": "ta-only:1"}, key=b)
        self.assertEqual(st, 404, body)
        # importing under its name is as if the name were unknown... and does not take it
        st, body = self.spaced.request("POST", "/v1/templates/import?name=ta-only:1&format=rootfs",
                                       raw=tar_of({"etc": None}), key=b, headers={"Content-Type": "application/x-tar"})
        self.assertEqual(st, 404, body)
        _, t = self.spaced.api("GET", "/v1/templates/ta-only:1", key=self.a, expect=200)
        self.assertEqual(t["state"], "ready")
        # a shared template is everyone's to use, an admin's to change
        st, body = self.spaced.request("DELETE", "/v1/templates/busybox", key=self.a)
        self.assertEqual(st, 403, body)
        self.assertIn("shared", body["error"]["message"])

    def test_lists_show_one_project(self):
        sp = self.spaced
        for key, mine, theirs in ((self.a, self.a_sb, self.b_sb), (self.b, self.b_sb, self.a_sb)):
            _, d = sp.api("GET", "/v1/sandboxes", key=key, expect=200)
            ids = {x["id"] for x in d["sandboxes"]}
            self.assertIn(mine, ids)
            self.assertNotIn(theirs, ids)
        _, d = sp.api("GET", "/v1/snapshots", key=self.b, expect=200)
        self.assertNotIn(self.a_snap, {x["id"] for x in d["snapshots"]})
        _, d = sp.api("GET", "/v1/snapshots", key=self.a, expect=200)
        self.assertIn(self.a_snap, {x["id"] for x in d["snapshots"]})
        _, d = sp.api("GET", "/v1/operations", key=self.b, expect=200)
        self.assertTrue(d["operations"])
        self.assertNotIn(self.a_sb, {x["target"] for x in d["operations"]})
        _, d = sp.api("GET", "/v1/templates", key=self.b, expect=200)
        names = {x["name"] for x in d["templates"]}
        self.assertNotIn("ta-only:1", names)
        self.assertIn("busybox", names)  # shared
        _, d = sp.api("GET", "/v1/keys", key=self.b, expect=200)
        self.assertEqual({x["project"] for x in d["keys"]}, {"tb"})
        # the admin sees every project, and may narrow to one
        _, d = sp.api("GET", "/v1/sandboxes", expect=200)
        self.assertTrue({self.a_sb, self.b_sb} <= {x["id"] for x in d["sandboxes"]})
        _, d = sp.api("GET", "/v1/sandboxes?project=tb", expect=200)
        self.assertEqual({x["id"] for x in d["sandboxes"]} & {self.a_sb, self.b_sb}, {self.b_sb})
        _, d = sp.api("GET", "/v1/keys?project=ta", expect=200)
        self.assertEqual({x["project"] for x in d["keys"]}, {"ta"})
        # others may name only their own project
        sp.api("GET", "/v1/sandboxes?project=tb", key=self.b, expect=200)
        st, body = sp.request("GET", "/v1/sandboxes?project=ta", key=self.b)
        self.assertEqual((st, body["error"]["code"]), (404, "not_found"))
        st, body = sp.request("GET", "/v1/projects", key=self.b)
        self.assertEqual((st, body["error"]["code"]), (403, "forbidden"))
        _, d = sp.api("GET", "/v1/projects", expect=200)
        self.assertTrue({"default", "ta", "tb"} <= {p["id"] for p in d["projects"]})
        # paged like every list: one at a time, oldest first, every project once
        seen, cursor = [], None
        while True:
            _, page = sp.api("GET", "/v1/projects?limit=1" + ("&cursor=" + cursor if cursor else ""), expect=200)
            self.assertLessEqual(len(page["projects"]), 1)
            seen += [p["id"] for p in page["projects"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        self.assertEqual(seen, [p["id"] for p in d["projects"]])
        self.assertEqual(sp.request("GET", "/v1/projects?limit=0")[0], 400)
        self.assertEqual(sp.request("GET", "/v1/projects?cursor=garbage")[0], 400)

    def test_children_inherit_the_project(self):
        sp = self.spaced
        _, d = sp.api("POST", "/v1/sandboxes/%s/fork?wait=true&timeout_s=120" % self.a_sb, {}, key=self.a, expect=200)
        child = d["sandboxes"][0]["id"]
        sp.known_ids.add(child)
        sp.api("GET", "/v1/sandboxes/" + child, key=self.a, expect=200)
        self.assertEqual(sp.request("GET", "/v1/sandboxes/" + child, key=self.b)[0], 404)
        _, d = sp.api("GET", "/v1/sandboxes?project=ta", expect=200)
        self.assertIn(child, {x["id"] for x in d["sandboxes"]})

    def test_the_audit_log_shows_one_project(self):
        # Project tb's own calls are in its owner's view; none of ta's are, and ta's rows
        # cannot be asked for. An admin sees both. Rows are written just after the answer.
        sp = self.spaced
        self.sandbox(self.b)
        deadline = time.time() + 20
        while True:
            _, rows = sp.api("GET", "/v1/audit?limit=1000", key=self.b, expect=200)
            if any(r["action"] == "sandbox.create" for r in rows["audit"]) or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertTrue(rows["audit"], rows)
        self.assertEqual({r["project"] for r in rows["audit"]}, {"tb"}, rows)
        self.assertIn("sandbox.create", [r["action"] for r in rows["audit"]])
        r = sp.request("GET", "/v1/audit?project=ta", key=self.b)
        self.assertEqual(r[0], 404, r)
        _, all_rows = sp.api("GET", "/v1/audit?limit=1000", expect=200)
        self.assertTrue({"ta", "tb"} <= {r["project"] for r in all_rows["audit"]}, all_rows)
        _, only_a = sp.api("GET", "/v1/audit?project=ta&limit=1000", expect=200)
        self.assertEqual({r["project"] for r in only_a["audit"]}, {"ta"})
        self.assertEqual(sp.request("GET", "/v1/audit", key=self.a_viewer)[0], 403)

    def test_data_plane_token_reaches_its_sandbox_only(self):
        sp = self.spaced
        _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % self.a_sb, {}, key=self.a, expect=(200, 201))
        tok = s["attach_token"]
        sp.api("GET", "/v1/sandboxes/%s/commands" % self.a_sb, key=tok, expect=200)
        st, body = sp.request("GET", "/v1/sandboxes/%s/commands" % self.b_sb, key=tok)
        self.assertEqual((st, body["error"]["code"]), (403, "forbidden"))
        # a viewer cannot open one; its key is no token either
        st, body = sp.request("POST", "/v1/sandboxes/%s/sessions" % self.a_sb, {}, key=self.a_viewer)
        self.assertEqual((st, body["error"]["code"]), (403, "forbidden"))
        st, _ = sp.request("GET", "/v1/sandboxes/%s/commands" % self.a_sb, key=self.a_viewer)
        self.assertEqual(st, 401)

    # ---------------------------------------------------------------- keys

    def test_key_rows_show_their_scope(self):
        _, k = self.spaced.api("POST", "/v1/keys", {"name": "narrow", "role": "developer",
                                                    "permissions": ["sandbox.read", "sandbox.exec"], "expires_in_s": 3600},
                               key=self.a, expect=201)
        self.assertEqual((k["project"], k["role"]), ("ta", "developer"))
        self.assertEqual(sorted(k["permissions"]), ["sandbox.exec", "sandbox.read"])
        self.assertRegex(k["expires_at"], r"^\d{4}-\d\d-\d\dT")
        _, d = self.spaced.api("GET", "/v1/keys", key=self.a, expect=200)
        row = [x for x in d["keys"] if x["id"] == k["id"]][0]
        self.assertNotIn("secret", row)
        self.assertEqual(row["permissions"], k["permissions"])
        # narrowed: it may read, not create
        self.spaced.api("GET", "/v1/sandboxes", key=k["secret"], expect=200)
        st, body = self.spaced.request("POST", "/v1/sandboxes", {}, key=k["secret"])
        self.assertEqual(st, 403, body)
        self.assertIn("sandbox.write", body["error"]["message"])

    def test_a_key_never_makes_more_than_it_has(self):
        sp = self.spaced
        a = self.a

        def refused(body, key=a, status=403):
            before = len(sp.api("GET", "/v1/keys?project=ta", expect=200)[1]["keys"])
            st, answer = sp.request("POST", "/v1/keys", body, key=key)
            self.assertEqual(st, status, (body, answer))
            after = len(sp.api("GET", "/v1/keys?project=ta", expect=200)[1]["keys"])
            self.assertEqual(before, after, "a refused key was stored")
            return answer["error"]["message"]

        self.assertIn("admin", refused({"name": "up", "role": "admin"}))
        # another project is one it cannot see: as unknown
        self.assertEqual(refused({"name": "out", "project": "tb", "role": "viewer"}, status=404), "project tb not found")
        self.assertIn("platform", refused({"name": "perm", "role": "owner", "permissions": ["platform"]}, status=400))
        self.assertEqual(refused({"name": "nowhere", "project": "no-such"}, status=404), "project no-such not found")
        refused({"name": "badrole", "role": "root"}, status=400)
        refused({"name": "badperm", "permissions": ["sandbox.everything"]}, status=400)
        refused({"name": "both", "expires_at": "2030-01-01T00:00:00Z", "expires_in_s": 5}, status=400)
        refused({"name": "past", "expires_at": "2001-01-01T00:00:00Z"}, status=400)
        refused({"name": "junk", "expires_at": "tomorrow"}, status=400)
        # an owner makes owners and below in its own project
        _, dev = sp.api("POST", "/v1/keys", {"name": "dev", "role": "developer"}, key=a, expect=201)
        self.assertEqual((dev["project"], dev["role"]), ("ta", "developer"))
        # a fresh developer key can neither make nor revoke keys, nor list them
        for method, path, body in (("POST", "/v1/keys", {"name": "x"}), ("DELETE", "/v1/keys/" + self.a_viewer_id, None),
                                   ("GET", "/v1/keys", None)):
            st, answer = sp.request(method, path, body, key=dev["secret"])
            self.assertEqual((st, answer["error"]["code"]), (403, "forbidden"), (method, path))
        # a narrowed key's copy is narrowed alike; more than it has is refused
        _, narrow = sp.api("POST", "/v1/keys", {"name": "kw", "permissions": ["key.write", "sandbox.read"]},
                           key=a, expect=201)
        _, copy = sp.api("POST", "/v1/keys", {"name": "copy"}, key=narrow["secret"], expect=201)
        self.assertEqual(sorted(copy["permissions"]), ["key.write", "sandbox.read"])
        self.assertIn("sandbox.write", refused({"name": "wider", "role": "developer"}, key=narrow["secret"]))
        # an expiring key makes keys that expire no later
        _, soon = sp.api("POST", "/v1/keys", {"name": "soon", "expires_in_s": 600}, key=a, expect=201)
        _, child = sp.api("POST", "/v1/keys", {"name": "child"}, key=soon["secret"], expect=201)
        self.assertEqual(child["expires_at"], soon["expires_at"])
        self.assertIn("expire", refused({"name": "later", "expires_in_s": 7200}, key=soon["secret"]))
        # revoking follows the same rule: an owner cannot revoke the admin key of its project...
        _, owner_default = sp.api("POST", "/v1/keys", {"name": "od", "project": "default", "role": "owner"}, expect=201)
        admin_id = [x["id"] for x in sp.api("GET", "/v1/keys?project=default", expect=200)[1]["keys"]
                    if x["role"] == "admin"][0]
        st, answer = sp.request("DELETE", "/v1/keys/" + admin_id, key=owner_default["secret"])
        self.assertEqual(st, 403, answer)
        sp.api("GET", "/v1/version", expect=200)  # the admin key still works
        # ...and can revoke what it may make
        sp.api("DELETE", "/v1/keys/" + copy["id"], key=a, expect=204)
        self.assertEqual(sp.request("GET", "/v1/sandboxes", key=copy["secret"])[0], 401)

    def test_expired_key_is_401(self):
        sp = self.spaced
        _, k = sp.api("POST", "/v1/keys", {"name": "brief", "expires_in_s": 2}, key=self.a, expect=201)
        sp.api("GET", "/v1/sandboxes", key=k["secret"], expect=200)
        time.sleep(2.5)
        st, body = sp.request("GET", "/v1/sandboxes", key=k["secret"])
        self.assertEqual((st, body["error"]["code"]), (401, "unauthorized"))
        self.assertIn("expired", body["error"]["message"])
        self.assertNotIn(k["secret"], json.dumps(body))

    def test_a_session_never_outlives_its_key(self):
        sp = self.spaced
        _, k = sp.api("POST", "/v1/keys", {"name": "short", "expires_in_s": 60}, key=self.a, expect=201)
        _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % self.a_sb, {"ttl_s": 3600}, key=k["secret"], expect=201)
        self.assertLessEqual(s["expires_at"], k["expires_at"])
        _, r = sp.api("POST", "/v1/sandboxes/%s/sessions/%s/renew" % (self.a_sb, s["session_id"]), {"ttl_s": 7200},
                      key=k["secret"], expect=200)
        self.assertLessEqual(r["expires_at"], k["expires_at"])
        # a key without an expiry gets what it asks
        _, s2 = sp.api("POST", "/v1/sandboxes/%s/sessions" % self.a_sb, {"ttl_s": 3600}, key=self.a, expect=201)
        self.assertGreater(s2["expires_at"], k["expires_at"])

    def test_projects_api(self):
        sp = self.spaced
        st, body = sp.request("POST", "/v1/projects", {"id": "ta"})
        self.assertEqual((st, body["error"]["code"]), (409, "already_exists"))
        for bad in ("", "UPPER", "-lead", "x" * 32, "sp ace", 7):
            st, body = sp.request("POST", "/v1/projects", {"id": bad})
            self.assertEqual(st, 400, (bad, body))
        st, body = sp.request("POST", "/v1/projects", {"id": "tc", "extra": 1})
        self.assertEqual(st, 400, body)
        self.assertEqual(sp.request("GET", "/v1/projects/tc")[0], 404)  # refused input made nothing
        st, body = sp.request("POST", "/v1/projects", {"id": "tx"}, key=self.a)
        self.assertEqual((st, body["error"]["code"]), (403, "forbidden"))
        _, p = sp.api("GET", "/v1/projects/ta", key=self.a, expect=200)
        self.assertEqual(p["id"], "ta")

    # ---------------------------------------------------------------- CLI

    def test_cli_projects_and_scoped_keys(self):
        sp = self.spaced
        r = sp.cli("project", "create", "tcli")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode().strip(), "tcli")
        r = sp.cli("project", "ls")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tcli", r.stdout.decode())
        r = sp.cli("--json", "key", "create", "--project", "tcli", "--role", "viewer", "--expires", "2h", "cli-viewer")
        self.assertEqual(r.returncode, 0, r.stderr)
        k = json.loads(r.stdout)
        self.assertEqual((k["project"], k["role"]), ("tcli", "viewer"))
        left = time.mktime(time.strptime(k["expires_at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.mktime(time.gmtime())
        self.assertTrue(7000 < left <= 7200, (k["expires_at"], left))
        # the viewer lists, cannot create, cannot make keys or projects
        r = sp.cli("sandbox", "ls", key=k["secret"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for args in (("key", "create", "more"), ("project", "create", "tcli2"), ("project", "ls")):
            r = sp.cli(*args, key=k["secret"])
            self.assertEqual(r.returncode, 1, (args, r.stdout))
            self.assertIn(b"forbidden", r.stderr.lower() + r.stdout.lower(), args)
        r = sp.cli("key", "ls", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        row = [x for x in json.loads(r.stdout)["keys"] if x["id"] == k["id"]][0]
        self.assertEqual(row["role"], "viewer")
        r = sp.cli("key", "create", "--expires", "soon", "bad")
        self.assertEqual(r.returncode, 2, r.stderr)
        r = sp.cli("--json", "key", "create", "--permission", "sandbox.read", "--role", "developer", "narrow")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["permissions"], ["sandbox.read"])

    # ---------------------------------------------------------------- E2B

    def e2b(self, method, path, key, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.e2b_port, timeout=120)
        try:
            h = {"X-API-KEY": key}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                h["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            raw = resp.read()
            return resp.status, (json.loads(raw) if raw else None)
        finally:
            conn.close()

    def test_e2b_keys_are_project_keys(self):
        e2b_form = "e2b_" + self.b[len("space_"):]
        st, made = self.e2b("POST", "/sandboxes", e2b_form, {"templateID": "base"})
        self.assertEqual(st, 201, made)
        sid = made["sandboxID"]
        self.spaced.known_ids.add(sid)
        # it is project tb's
        self.spaced.api("GET", "/v1/sandboxes/" + sid, key=self.b, expect=200)
        self.assertEqual(self.spaced.request("GET", "/v1/sandboxes/" + sid, key=self.a)[0], 404)
        # E2B lists are the key's project's
        st, listed = self.e2b("GET", "/v2/sandboxes?state=running", e2b_form)
        self.assertEqual(st, 200, listed)
        ids = {x["sandboxID"] for x in listed}
        self.assertIn(sid, ids)
        self.assertNotIn(self.a_sb, ids)
        st, answer = self.e2b("GET", "/sandboxes/" + self.a_sb, e2b_form)
        self.assertEqual((st, answer["message"]), (404, "sandbox %s not found" % self.a_sb))
        st, answer = self.e2b("DELETE", "/sandboxes/" + self.a_sb, e2b_form)
        self.assertEqual(st, 404, answer)
        self.spaced.api("GET", "/v1/sandboxes/" + self.a_sb, key=self.a, expect=200)  # still there
        # a viewer's E2B key reads, never creates
        st, answer = self.e2b("POST", "/sandboxes", self.a_viewer, {"templateID": "base"})
        self.assertEqual(st, 403, answer)
        st, _ = self.e2b("GET", "/v2/sandboxes", self.a_viewer)
        self.assertEqual(st, 200)
        self.e2b("DELETE", "/sandboxes/" + sid, e2b_form)


if __name__ == "__main__":
    unittest.main()
