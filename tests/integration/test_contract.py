"""The HTTP contract: api/openapi.yaml lints clean, lists exactly the routes of
src/api/api_router.c with the query parameters each takes, knows every error code of
src/spaced/space_error.c with the status api_error.c gives it, and the checker the
harness runs on every response refuses what it must. Then, against the real spaced:
unknown query parameters are 400 and change nothing, and every list pages with a cursor.
"""

import base64
import os
import re
import unittest

import openapi_contract
from openapi_contract import Contract, ContractViolation
from spaced_harness import REPO, SpacedTestCase

JSON = {"Content-Type": "application/json"}


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
    for method, pattern, rest in re.findall(r'\{ "([A-Z]+)", \{ ([^}]*) \}, ([^\n]*) \},\n', src):
        key = (method, "/" + "/".join(re.findall(r'"([^"]*)"', pattern)))
        q = re.findall(r"\b(q_\w+)\b", rest)
        assert len(q) == 1, "route %s %s names no query list: %s" % (key + (rest,))
        assert key not in routes, "route %s %s twice" % key
        routes[key] = sorted(arrays[q[0]])
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


if __name__ == "__main__":
    unittest.main()
