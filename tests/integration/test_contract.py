"""The HTTP contract: api/openapi.yaml lints clean, lists exactly the routes of
src/api/api_router.c with the query parameters each takes, knows every error code of
src/spaced/space_error.c with the status api_error.c gives it, and the checker the
harness runs on every response refuses what it must. Then, against the real spaced:
unknown query parameters are 400 and change nothing, and every list pages with a cursor.
"""

import os
import re
import unittest

import openapi_contract
from openapi_contract import Contract, ContractViolation
from spaced_harness import REPO, SpacedTestCase, tar_of

JSON = {"Content-Type": "application/json"}
PROXIED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def read(rel):
    with open(os.path.join(REPO, rel)) as f:
        return f.read()


def router_routes():
    """{(METHOD, "/v1/a/*/b"): [query names]} from both tables of api_router.c."""
    src = read("src/api/api_router.c")
    arrays = {}
    for name, body in re.findall(r"static const char \*const (q_\w+)\[\] = \{([^}]*)\};", src):
        arrays[name] = re.findall(r'"([^"]*)"', body)
    routes = {}
    for method, pattern, rest in re.findall(r'\{ "([A-Z]+|\*)", \{ ([^}]*) \}, ([^\n]*) \},\n', src):
        # "**" (the rest of the path) is the spec's last path parameter; "*" every method
        path = "/" + "/".join("*" if s == "**" else s for s in re.findall(r'"([^"]*)"', pattern))
        q = re.findall(r"\b(q_\w+)\b", rest)
        assert len(q) == 1, "route %s %s names no query list: %s" % (method, path, rest)
        for m in PROXIED_METHODS if method == "*" else [method]:
            key = (m, path)
            assert key not in routes, "route %s %s twice" % key
            # ["*"]: any query, passed on (the spec declares none)
            routes[key] = [] if arrays[q[0]] == ["*"] else sorted(arrays[q[0]])
    return routes


def spec_routes(c):
    """The same shape from the spec: path parameters as "*", families by x-space-prefix."""
    out = {}
    for method, _, _, template, op in c.routes:
        item = c.spec["paths"][template]
        params = [c.resolve(p) for p in item.get("parameters", []) + op.get("parameters", [])]
        names = sorted(p.get("x-space-prefix", p["name"]) for p in params if p.get("in") == "query")
        out[(method, re.sub(r"\{[^}]+\}", "*", template))] = names
    return out


class Spec(unittest.TestCase):
    """The spec itself and its agreement with the C sources (no spaced needed)."""

    @classmethod
    def setUpClass(cls):
        cls.c = Contract()

    def test_lints_clean(self):
        self.assertEqual(self.c.lint(), [])

    def test_lint_finds_what_it_must(self):
        c = Contract()
        c.spec = dict(c.spec)
        c.spec["components"] = dict(c.spec["components"], schemas=dict(c.spec["components"]["schemas"]))
        c.spec["components"]["schemas"]["Broken"] = {"nullable": True, "allOf": [{"$ref": "#/components/schemas/Nope"}]}
        problems = "\n".join(c.lint())
        self.assertIn("Broken: nullable without a type", problems)
        self.assertIn("$ref #/components/schemas/Nope does not resolve", problems)

    def test_route_tables_and_spec_list_the_same_operations(self):
        router, spec = router_routes(), spec_routes(self.c)
        self.assertGreater(len(router), 50)
        self.assertEqual(sorted(set(router) - set(spec)), [], "routes in api_router.c missing from api/openapi.yaml")
        self.assertEqual(sorted(set(spec) - set(router)), [], "operations in api/openapi.yaml without a route")

    def test_route_tables_and_spec_take_the_same_query_parameters(self):
        router, spec = router_routes(), spec_routes(self.c)
        diff = {k: (router[k], spec[k]) for k in router if k in spec and router[k] != spec[k]}
        self.assertEqual(diff, {}, "(route table, spec) query parameters differ")

    def test_error_codes_match_the_server(self):
        names = re.findall(r'\[SPACE_E_\w+\] = "(\w+)"', read("src/spaced/space_error.c"))
        self.assertGreater(len(names), 15)
        self.assertEqual(sorted(self.c.spec["components"]["schemas"]["ErrorCode"]["enum"]), sorted(names))
        # The table in the description gives each code the status api_error.c gives it.
        src = read("src/api/api_error.c")
        status = {}
        for cases, st in re.findall(r"((?:case SPACE_E_\w+:\s*)+)return (\d+);", src):
            for code in re.findall(r"SPACE_E_(\w+)", cases):
                status[code.lower()] = st
        table = {}
        for codes, st in re.findall(r"^\s*\| ([a-z_, ]+) \| (\d+) \|$", self.c.spec["info"]["description"], re.M):
            for code in codes.split(","):
                table[code.strip()] = st
        self.assertEqual(table, {n: status[n] for n in names})


class Checker(unittest.TestCase):
    """The checker the harness runs on every response refuses violations (shown failing)."""

    @classmethod
    def setUpClass(cls):
        cls.c = Contract()

    def bad(self, *args, **kw):
        with self.assertRaises(ContractViolation) as cm:
            self.c.check(*args, **kw)
        return str(cm.exception)

    def test_accepts_conforming_answers(self):
        self.c.check("GET", "/v1/sandboxes/sb-0123456789abcdef", 404, JSON,
                     b'{"error":{"code":"not_found","message":"sandbox sb-0123456789abcdef not found"}}')
        self.c.check("GET", "/v1/no/such/route", 404, JSON, b'{"error":{"code":"not_found","message":"no route"}}')
        self.c.check("POST", "/v1/keys", 415, JSON, b'{"error":{"code":"unsupported_media_type","message":"x"}}')
        self.c.check("DELETE", "/v1/keys/k-1", 204, {}, b"")
        self.c.check("GET", "/v1/sandboxes/sb-1/commands/cmd-1/events", 200,
                     {"Content-Type": "text/event-stream"}, b"", streamed=True)
        self.c.check("GET", "/not-v1", 200, {}, b"anything")  # not the v1 API: not held

    def test_refuses_a_body_off_the_schema(self):
        msg = self.bad("GET", "/v1/health", 200, JSON, b'{"status":"ok"}')
        self.assertIn("getHealth", msg)
        self.assertIn("'checks' is a required property", msg)
        msg = self.bad("GET", "/v1/keys", 200, JSON, b'{"keys":[{"id":"k","surprise":1}]}')
        self.assertIn("listKeys", msg)

    def test_refuses_an_error_off_the_shape(self):
        self.assertIn("is not one of", self.bad("GET", "/v1/sandboxes/sb-1", 404, JSON,
                                                 b'{"error":{"code":"no_such_code","message":"x"}}'))
        self.assertIn("'message' is a required property",
                      self.bad("GET", "/v1/sandboxes/sb-1", 404, JSON, b'{"error":{"code":"not_found"}}'))
        self.assertIn("not JSON", self.bad("GET", "/v1/sandboxes/sb-1", 404, JSON, b"<html>"))

    def test_refuses_an_undeclared_status_or_type(self):
        self.assertIn("status not declared", self.bad("GET", "/v1/sandboxes/sb-1", 418, JSON, b"{}"))
        self.assertIn("Content-Type", self.bad("GET", "/v1/sandboxes/sb-1", 200, {"Content-Type": "text/html"}, b"<p>"))
        self.assertIn("declares no body", self.bad("DELETE", "/v1/keys/k-1", 204, JSON, b"{}"))
        # 503 may answer any request but a GET
        self.bad("GET", "/v1/keys", 503, JSON, b'{"error":{"code":"unavailable","message":"x"}}')
        self.c.check("POST", "/v1/keys", 503, JSON, b'{"error":{"code":"unavailable","message":"x"}}')

    def test_nullable_and_refs_are_converted(self):
        s = openapi_contract.to_json_schema({"type": "string", "nullable": True, "enum": ["a"]})
        self.assertEqual(s, {"type": ["string", "null"], "enum": ["a", None]})
        self.assertEqual(openapi_contract.to_json_schema({"$ref": "#/components/schemas/Sandbox", "description": "x"}),
                         {"$ref": "#/definitions/Sandbox"})


class QueryParameters(SpacedTestCase):
    """Each route takes the query parameters it declares and refuses others, changing nothing."""

    def test_unknown_parameter_is_400_and_names_it(self):
        sp = self.spaced
        for method, path in (("GET", "/v1/sandboxes?limt=5"), ("GET", "/v1/keys?x=1"),
                             ("GET", "/v1/templates?name=busybox"), ("GET", "/v1/operations?targte=sb-1"),
                             ("GET", "/v1/health?verbose=1"), ("GET", "/v1/snapshots?sandbox=sb-1")):
            r = sp.request(method, path, key=None if "health" in path else "admin")
            self.assertError(r, 400, "invalid_request")
            name = path.split("?")[1].split("=")[0]
            self.assertIn("unknown query parameter " + name, r[1]["error"]["message"])

    def test_misspelt_wait_changes_nothing(self):
        sp = self.spaced
        before = sp.list_ids()
        _, ops_before = sp.api("GET", "/v1/operations", expect=200)
        r = sp.request("POST", "/v1/sandboxes?wiat=true", {"template": "busybox"})
        self.assertError(r, 400, "invalid_request")
        self.assertIn("wiat", r[1]["error"]["message"])
        self.assertIn("wait, timeout_s", r[1]["error"]["message"])
        self.assertEqual(sp.list_ids(), before)
        _, ops = sp.api("GET", "/v1/operations", expect=200)
        self.assertEqual(ops["operations"], ops_before["operations"])

    def test_declared_parameters_and_families_still_work(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"team": "ml"})
        self.assertEqual(set(sp.list_ids()), {sid})
        _, data = sp.api("GET", "/v1/sandboxes?metadata.team=ml&state=running", expect=200)
        self.assertEqual([s["id"] for s in data["sandboxes"]], [sid])
        _, data = sp.api("GET", "/v1/sandboxes?metadata.team=other", expect=200)
        self.assertEqual(data["sandboxes"], [])
        self.assertError(sp.request("GET", "/v1/sandboxes?metadata.=x"), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/stop?wait=true&timeuot_s=5" % sid), 400, "invalid_request")
        self.assertEqual(sp.state(sid), "running")
        # A data-plane route: an unknown parameter is refused before anything runs.
        _, ses = sp.api("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=(200, 201))
        r = sp.request("POST", "/v1/sandboxes/%s/commands?detach=1" % sid, {"cmd": ["true"]}, key=ses["attach_token"])
        self.assertError(r, 400, "invalid_request")
        _, cmds = sp.api("GET", "/v1/sandboxes/%s/commands" % sid, key=ses["attach_token"], expect=200)
        self.assertEqual(cmds["commands"], [])
        # An upload route (the body is streamed): refused, nothing written.
        r = sp.request("PUT", "/v1/sandboxes/%s/files?path=/tmp/q&mdoe=0600" % sid, raw=b"x",
                       key=ses["attach_token"], headers={"Content-Type": "application/octet-stream"})
        self.assertError(r, 400, "invalid_request")
        r = sp.request("GET", "/v1/sandboxes/%s/files/stat?path=/tmp/q" % sid, key=ses["attach_token"])
        self.assertError(r, 404)


def tiny_rootfs():
    return tar_of({"bin": None, "etc": None, "etc/motd": b"hi\n"})


def tampered(cursor):
    """Ways a client can spoil a cursor: each must be refused."""
    flip = "A" if cursor[5] != "A" else "B"
    return [cursor[:5] + flip + cursor[6:], cursor[:-1], cursor + "A", cursor[:-2], cursor + "==",
            cursor.replace("-", "+").replace("_", "/") + "+", "x", "!!!!", " " + cursor]


class Pagination(SpacedTestCase):
    """Every list pages with ?limit= and ?cursor=, in SQL, with a stable order."""

    def walk(self, path, member, limit, key="admin"):
        """Every item of a list, page by page; checks each page's size and the end."""
        sep = "&" if "?" in path else "?"
        items, cursor, pages = [], None, 0
        while True:
            q = "%s%slimit=%d" % (path, sep, limit) + ("&cursor=" + cursor if cursor else "")
            _, page = self.spaced.api("GET", q, key=key, expect=200)
            self.assertLessEqual(len(page[member]), limit, page)
            items += page[member]
            pages += 1
            self.assertLess(pages, 1000)
            cursor = page["next_cursor"]
            if cursor is None:
                return items, pages
            self.assertRegex(cursor, r"^[A-Za-z0-9_-]+$")

    def check_list(self, path, member, ident, limit, expect_at_least, key="admin", order=None):
        """Walks with a small limit: the same items as one big page, none twice, none lost."""
        _, whole = self.spaced.api("GET", path + ("&" if "?" in path else "?") + "limit=1000", key=key, expect=200)
        self.assertIsNone(whole["next_cursor"])
        self.assertGreater(len(whole[member]), limit, "%s: make more than a page" % path)
        self.assertGreaterEqual(len(whole[member]), expect_at_least)
        items, pages = self.walk(path, member, limit, key=key)
        ids = [ident(i) for i in items]
        self.assertEqual(len(ids), len(set(ids)), "%s: an item on two pages" % path)
        self.assertEqual(ids, [ident(i) for i in whole[member]], "%s: pages differ from the whole list" % path)
        self.assertEqual(pages, (len(ids) + limit - 1) // limit, "%s: a full last page says it is the last" % path)
        if order:
            self.assertEqual(ids, [ident(i) for i in sorted(whole[member], key=order)], "%s: order" % path)
        # A tampered cursor, or one of another list, is 400 and answers nothing.
        _, first = self.spaced.api("GET", path + ("&" if "?" in path else "?") + "limit=%d" % limit, key=key, expect=200)
        cursor = first["next_cursor"]
        self.assertIsNotNone(cursor)
        for bad in tampered(cursor):
            r = self.spaced.request("GET", path + ("&" if "?" in path else "?") + "cursor=" + urlquote(bad), key=key)
            self.assertError(r, 400, "invalid_request")
        # Default 100, limits 1..1000
        for bad in ("0", "-1", "1001", "abc", "1.5", ""):
            r = self.spaced.request("GET", path + ("&" if "?" in path else "?") + "limit=" + bad, key=key)
            self.assertError(r, 400, "invalid_request")
        _, one = self.spaced.api("GET", path + ("&" if "?" in path else "?") + "limit=1", key=key, expect=200)
        self.assertEqual(len(one[member]), 1)
        return cursor

    def test_keys_templates_and_other_lists_refuse_each_others_cursors(self):
        sp = self.spaced
        for i in range(5):
            sp.api("POST", "/v1/keys", {"name": "page-%d" % i}, expect=201)
        key_cursor = self.check_list("/v1/keys", "keys", lambda k: k["id"], 2, 6,
                                     order=lambda k: (k["created_at"], k["id"]))
        for i in range(3):
            r = sp.request("POST", "/v1/templates/import?name=page%d:1&format=rootfs" % i, raw=tiny_rootfs())
            self.assertEqual(r[0], 201, r)
        tpl_cursor = self.check_list("/v1/templates", "templates", lambda t: t["name"], 2, 3, order=lambda t: t["name"])
        self.assertError(sp.request("GET", "/v1/templates?cursor=" + key_cursor), 400, "invalid_request")
        self.assertError(sp.request("GET", "/v1/keys?cursor=" + tpl_cursor), 400, "invalid_request")
        self.assertError(sp.request("GET", "/v1/sandboxes?cursor=" + key_cursor), 400, "invalid_request")
        # The CLI follows the cursors: more keys than one default page (100), all listed.
        for i in range(100):
            sp.api("POST", "/v1/keys", {"name": "many-%d" % i}, expect=201)
        _, whole = sp.api("GET", "/v1/keys?limit=1000", expect=200)
        self.assertGreater(len(whole["keys"]), 100)
        _, default = sp.api("GET", "/v1/keys", expect=200)
        self.assertEqual(len(default["keys"]), 100)
        self.assertIsNotNone(default["next_cursor"])
        out = sp.cli("key", "ls")
        self.assertEqual(out.returncode, 0, out.stderr)
        listed = out.stdout.decode()
        for k in whole["keys"]:
            self.assertIn(k["id"], listed)
        out = sp.cli("--json", "key", "ls")
        self.assertEqual(out.returncode, 0, out.stderr)
        import json
        self.assertEqual([k["id"] for k in json.loads(out.stdout)["keys"]], [k["id"] for k in whole["keys"]])

    def test_sandbox_lists_page(self):
        sp = self.spaced
        sids = [self.new_sandbox(metadata={"page": "yes" if i % 2 else "no"}) for i in range(5)]
        self.check_list("/v1/sandboxes", "sandboxes", lambda s: s["id"], 2, 5,
                        order=lambda s: (s["created_at"], s["id"]))
        # With a state filter the walk pages that set; metadata filters apply per page.
        items, _ = self.walk("/v1/sandboxes?state=running", "sandboxes", 2)
        self.assertEqual({s["id"] for s in items} & set(sids), set(sids))
        items, _ = self.walk("/v1/sandboxes?metadata.page=yes", "sandboxes", 2)
        self.assertEqual([s["id"] for s in items], [sids[1], sids[3]])
        out = sp.cli("sandbox", "ls")
        self.assertEqual(out.returncode, 0, out.stderr)
        for sid in sids:
            self.assertIn(sid, out.stdout.decode())

        # Snapshots: of one sandbox and all of them.
        sid = sids[0]
        for i in range(3):
            sp.api("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % sid, {"label": "p%d" % i}, expect=200)
        self.check_list("/v1/sandboxes/%s/snapshots" % sid, "snapshots", lambda x: x["id"], 2, 3,
                        order=lambda x: (x["created_at"], x["id"]))
        self.check_list("/v1/snapshots", "snapshots", lambda x: x["id"], 2, 3)
        self.check_list("/v1/snapshots?sandbox_id=" + sid, "snapshots", lambda x: x["id"], 2, 3)

        # Operations: newest first, of one target or all.
        self.check_list("/v1/operations?target=" + sid, "operations", lambda o: o["id"], 2, 4)
        items, _ = self.walk("/v1/operations?target=" + sid, "operations", 2)
        self.assertEqual([o["id"] for o in items],
                         [o["id"] for o in sorted(items, key=lambda o: (o["created_at"], o["id"]), reverse=True)])
        self.check_list("/v1/operations", "operations", lambda o: o["id"], 3, 8)

        # Sessions and commands (the data plane).
        tokens = [sp.api("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=(200, 201))[1]["attach_token"]
                  for _ in range(4)]
        self.check_list("/v1/sandboxes/%s/sessions" % sid, "sessions", lambda x: x["session_id"], 3, 4,
                        order=lambda x: (x["created_at"], x["session_id"]))
        for i in range(5):
            sp.api("POST", "/v1/sandboxes/%s/commands" % sid, {"cmd": ["true"], "tag": "c%d" % i},
                   key=tokens[0], expect=(200, 201, 202))
        self.check_list("/v1/sandboxes/%s/commands" % sid, "commands", lambda x: x["command_id"], 2, 5,
                        key=tokens[0], order=lambda x: (x["created_at"], x["command_id"]))

    def test_a_walk_sees_rows_that_existed_once_even_when_rows_come_and_go(self):
        sp = self.spaced
        for i in range(6):
            sp.api("POST", "/v1/keys", {"name": "walk-%d" % i}, expect=201)
        _, before = sp.api("GET", "/v1/keys?limit=1000", expect=200)
        seen, cursor, made = [], None, 0
        while True:
            _, page = sp.api("GET", "/v1/keys?limit=2" + ("&cursor=" + cursor if cursor else ""), expect=200)
            seen += [k["id"] for k in page["keys"]]
            sp.api("POST", "/v1/keys", {"name": "during-%d" % made}, expect=201)  # lands after the walk's end
            made += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        self.assertEqual(len(seen), len(set(seen)))
        self.assertEqual(seen[:len(before["keys"])], [k["id"] for k in before["keys"]])


def urlquote(s):
    import urllib.parse
    return urllib.parse.quote(s, safe="")


if __name__ == "__main__":
    unittest.main()
