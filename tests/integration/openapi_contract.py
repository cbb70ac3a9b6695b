"""The HTTP contract: api/openapi.yaml, read once, as a checker of responses and a lint.

check(method, target, status, headers, body) finds the operation a request was for, and
refuses a response whose status that operation does not declare, whose Content-Type is
not one it declares for that status, or whose JSON body does not match the declared
schema (errors included: {"error": {"code", "message"}} with a code from ErrorCode).
Streams (text/event-stream) and binary bodies are held to their status and Content-Type
only. The harness routes every response of the v1 API through check().

OpenAPI 3.0 schemas are turned into JSON Schema (draft 7) here: `$ref`s to
components/schemas become `#/definitions/...`, `nullable: true` adds "null" to the type
(and to an enum), OpenAPI-only keywords (example, x-*) are dropped.

lint() is the structural lint of the spec (every operation has an operationId and
declares its errors, every $ref resolves, every `nullable` sits beside a `type`, every
schema is valid JSON Schema once converted).

Needs python3-jsonschema and python3-yaml (Debian; scripts/install-deps installs them).
"""

import json
import os
import re
import threading

try:
    import jsonschema
    import yaml
except ImportError as e:  # pragma: no cover - a missing dependency must fail loudly
    raise ImportError("the contract check needs python3-jsonschema and python3-yaml (scripts/install-deps): %s" % e)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC_PATH = os.path.join(REPO, "api", "openapi.yaml")
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
# OpenAPI keywords with no JSON Schema meaning, dropped on conversion.
_DROPPED = {"nullable", "example", "examples", "discriminator", "xml", "externalDocs", "deprecated"}


class ContractViolation(AssertionError):
    """A response the spec does not allow."""


def to_json_schema(schema):
    """One OpenAPI 3.0 schema object -> a JSON Schema (draft 7) object."""
    if isinstance(schema, list):
        return [to_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:  # siblings of a $ref are ignored in OpenAPI 3.0
        ref = schema["$ref"]
        prefix = "#/components/schemas/"
        if not ref.startswith(prefix):
            raise ValueError("unsupported $ref %s" % ref)
        return {"$ref": "#/definitions/" + ref[len(prefix):]}
    out = {}
    for k, v in schema.items():
        if k in _DROPPED or k.startswith("x-"):
            continue
        if k == "properties":
            out[k] = {name: to_json_schema(s) for name, s in v.items()}
        elif k in ("items", "not") or (k == "additionalProperties" and isinstance(v, dict)):
            out[k] = to_json_schema(v)
        elif k in ("allOf", "oneOf", "anyOf"):
            out[k] = [to_json_schema(s) for s in v]
        else:
            out[k] = v
    if schema.get("nullable") is True:
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = list(out["enum"]) + [None]
        else:  # lint() refuses this; convert it the only sensible way anyway
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _media_type(value):
    return (value or "").split(";", 1)[0].strip().lower()


class Contract:
    def __init__(self, path=SPEC_PATH):
        with open(path) as f:
            self.spec = yaml.safe_load(f)
        comps = self.spec.get("components", {})
        self.definitions = {name: to_json_schema(s) for name, s in comps.get("schemas", {}).items()}
        # Statuses any request may get whatever its operation (see info.description).
        self.any_request = {str(s) for s in self.spec.get("x-space-any-request-statuses", [])}
        self.routes = []  # (method, regex, literal segment count, path template, operation)
        for template, item in self.spec.get("paths", {}).items():
            segs = template.strip("/").split("/")
            # A proxied path's last parameter is the rest of the path (any segments, none too).
            tail = item.get("x-space-proxied") is True
            body = segs[:-1] if tail else segs
            rx = "^/" + "/".join("[^/]+" if s.startswith("{") else re.escape(s) for s in body) + ("(/.*)?$" if tail else "$")
            literal = sum(1 for s in segs if not s.startswith("{"))
            for m in METHODS:
                if m in item:
                    self.routes.append((m.upper(), re.compile(rx), literal, template, item[m]))
        self._validators = {}
        self._lock = threading.Lock()

    # ---- lookups

    def resolve(self, obj):
        seen = 0
        while isinstance(obj, dict) and "$ref" in obj:
            ref = obj["$ref"]
            if not ref.startswith("#/"):
                raise ValueError("external $ref %s" % ref)
            node = self.spec
            for part in ref[2:].split("/"):
                node = node[part]
            obj = node
            seen += 1
            if seen > 20:
                raise ValueError("$ref loop at %s" % ref)
        return obj

    def operation(self, method, path):
        """(template, operation) for a request path without its query, or (None, None);
        the candidate with the most literal segments wins (/v1/snapshots/import over
        /v1/snapshots/{id})."""
        best = None
        for m, rx, literal, template, op in self.routes:
            if m == method and rx.match(path) and (best is None or literal > best[0]):
                best = (literal, template, op)
        return (best[1], best[2]) if best else (None, None)

    def validator(self, schema):
        key = json.dumps(schema, sort_keys=True)
        with self._lock:
            v = self._validators.get(key)
            if v is None:
                full = dict(to_json_schema(schema))
                full["definitions"] = self.definitions
                v = jsonschema.Draft7Validator(full)
                self._validators[key] = v
            return v

    def error_schema(self):
        return {"$ref": "#/components/schemas/Error"}

    # ---- the check

    def check(self, method, target, status, headers, body, streamed=False):
        """Raises ContractViolation when the response is not what the spec allows.
        headers: a mapping (any case). body: bytes (ignored when streamed: the body is
        read elsewhere, only status and Content-Type are held then)."""
        path = target.split("?", 1)[0]
        if not path.startswith("/v1/") and path != "/v1":
            return
        method = method.upper()
        status = str(status)
        ctype = _media_type(next((v for k, v in headers.items() if k.lower() == "content-type"), None))
        template, op = self.operation(method, path)
        if template and self.spec["paths"][template].get("x-space-proxied") is True:
            return  # the sandbox's server answers what it likes
        where = "%s %s" % (method, template or path)
        if op is None:
            # No such operation: the router answers 404 or 405 with an error body.
            if status not in ("404", "405", "413"):
                raise ContractViolation("%s -> %s: no operation in api/openapi.yaml for it, and the answer is not 404/405"
                                        % (where, status))
            response = {"content": {"application/json": {"schema": self.error_schema()}}}
        else:
            responses = op.get("responses", {})
            if status in responses:
                response = self.resolve(responses[status])
            elif status in self.any_request and not (status == "503" and method == "GET"):
                response = {"content": {"application/json": {"schema": self.error_schema()}}}
            elif "default" in responses and int(status) >= 400:
                response = self.resolve(responses["default"])
            else:
                raise ContractViolation("%s -> %s: status not declared for %s (declared: %s)"
                                        % (where, status, op.get("operationId"), ", ".join(sorted(responses))))
        content = response.get("content") or {}
        if not content:
            if body and not streamed:
                raise ContractViolation("%s -> %s: the spec declares no body, got %d bytes: %r"
                                        % (where, status, len(body), body[:200]))
            return
        if method == "HEAD":
            return
        if ctype not in {_media_type(k) for k in content}:
            if not (ctype == "" and not body and not streamed):
                raise ContractViolation("%s -> %s: Content-Type %r, declared: %s"
                                        % (where, status, ctype, ", ".join(sorted(content))))
        media = content.get(ctype) or next((v for k, v in content.items() if _media_type(k) == ctype), None) or {}
        if streamed or ctype != "application/json" or "schema" not in media:
            return
        if not body:
            raise ContractViolation("%s -> %s: empty body, declared %s" % (where, status, ctype))
        try:
            doc = json.loads(body)
        except ValueError as e:
            raise ContractViolation("%s -> %s: body is not JSON (%s): %r" % (where, status, e, body[:200]))
        errors = sorted(self.validator(media["schema"]).iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            e = errors[0]
            at = "/".join(str(p) for p in e.absolute_path) or "(top)"
            raise ContractViolation("%s -> %s (%s): body does not match the schema at %s: %s%s"
                                    % (where, status, op.get("operationId") if op else "no operation", at,
                                       e.message[:400], " (and %d more)" % (len(errors) - 1) if len(errors) > 1 else ""))

    # ---- lint

    def lint(self):
        """Problems of the spec itself, as a list of strings (empty when clean)."""
        problems = []

        def walk(node, where):
            if isinstance(node, dict):
                if "$ref" in node:
                    try:
                        self.resolve(node)
                    except (KeyError, ValueError, TypeError) as e:
                        problems.append("%s: $ref %s does not resolve (%s)" % (where, node["$ref"], e))
                if node.get("nullable") is True and "type" not in node:
                    problems.append("%s: nullable without a type" % where)
                for k, v in node.items():
                    walk(v, where + "/" + str(k))
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, "%s/%d" % (where, i))

        walk(self.spec, "#")
        if not str(self.spec.get("openapi", "")).startswith("3.0"):
            problems.append("openapi: expected 3.0.x, got %r" % self.spec.get("openapi"))
        ids = {}
        for m, _, _, template, op in self.routes:
            where = "%s %s" % (m, template)
            oid = op.get("operationId")
            if not oid:
                problems.append("%s: no operationId" % where)
            elif oid in ids:
                problems.append("%s: operationId %s also used by %s" % (where, oid, ids[oid]))
            else:
                ids[oid] = where
            responses = op.get("responses") or {}
            if not any(s[0] == "2" for s in responses):
                problems.append("%s: no 2xx response" % where)
            if not any(s[0] in "45" for s in responses):
                problems.append("%s: no error response" % where)
            for status, r in responses.items():
                r = self.resolve(r)
                if "description" not in r:
                    problems.append("%s %s: response without a description" % (where, status))
                if status[0] == "4" and "application/json" in (r.get("content") or {}):
                    schema = r["content"]["application/json"].get("schema", {})
                    if schema != self.error_schema():
                        problems.append("%s %s: an error response whose body is not the Error schema" % (where, status))
            names = set()
            params = [self.resolve(p) for p in self.spec["paths"][template].get("parameters", [])]
            params += [self.resolve(p) for p in op.get("parameters", [])]
            for p in params:
                if (p.get("in"), p.get("name")) in names:
                    problems.append("%s: parameter %s twice" % (where, p.get("name")))
                names.add((p.get("in"), p.get("name")))
            for seg in re.findall(r"\{([^}]+)\}", template):
                if ("path", seg) not in names:
                    problems.append("%s: path parameter {%s} not declared" % (where, seg))
        for name, s in self.definitions.items():
            try:
                jsonschema.Draft7Validator.check_schema(dict(s, definitions=self.definitions))
            except jsonschema.SchemaError as e:
                problems.append("components/schemas/%s: not valid JSON Schema once converted: %s" % (name, e.message))
        return problems

    def query_parameters(self, method, template):
        """The query parameter names one operation declares."""
        item = self.spec["paths"][template]
        params = [self.resolve(p) for p in item.get("parameters", []) + item[method.lower()].get("parameters", [])]
        return sorted(p["name"] for p in params if p.get("in") == "query")


_contract = None
_contract_lock = threading.Lock()


def contract():
    """The spec of the repository the harness is in, loaded once."""
    global _contract
    with _contract_lock:
        if _contract is None:
            _contract = Contract()
        return _contract


# Every violation any response of this process met, in order (the harness fails the test
# that received one even when the request was made on a thread that swallowed it).
violations = []


def check(method, target, status, headers, body, streamed=False):
    # Benchmarks that compare builds of other versions (bench/compare_builds.py) cannot be
    # held to this version's spec, and must not pay for validating it; tests never set this.
    if os.environ.get("SPACE_CONTRACT") == "off":
        return
    try:
        contract().check(method, target, status, headers, body, streamed=streamed)
    except ContractViolation as e:
        violations.append(str(e))
        raise
