"""Templates built from Spacefiles (layer cache, COPY ownership and modes, failing steps,
hostile build contexts, cancellation), imported from rootfs and OCI archives (whiteouts),
and the python preset. Black box against the real spaced: contexts are tars made here."""

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import time
import unittest

from spaced_harness import FreshSpacedTestCase, SpacedTestCase, wait_for

BUSYBOX = next((p for p in ("/bin/busybox", "/usr/bin/busybox") if os.path.exists(p)), None)


def read_text(path):
    with open(path) as f:
        return f.read()


def tar_of(files, gz=False):
    """files: {name: bytes | (bytes, mode) | ("dir",) | ("symlink", target) | TarInfo-tweaker}."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w", format=tarfile.GNU_FORMAT) as t:
        for name, spec in files.items():
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            data = None
            if isinstance(spec, bytes):
                spec = (spec, 0o644)
            if spec[0] == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif spec[0] == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, spec[1]
            elif spec[0] == "chr":
                info.type, info.devmajor, info.devminor, info.mode = tarfile.CHRTYPE, 1, 3, 0o666
            elif spec[0] == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, spec[1]
            elif spec[0] == "owned":  # a file with numeric owners and a misleading owner name
                data, info.uid, info.gid, info.uname, info.gname = b"o\n", spec[1], spec[2], spec[3], spec[3]
                info.size, info.mode = len(data), 0o640
            else:
                data, info.mode = spec
                info.size = len(data)
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


class Templates(SpacedTestCase):
    spaced_kwargs = {"extra_args": ["--pool-size", "8G", "--max-context", "8M"]}

    # ---- helpers

    def build(self, name, files, expect=200, query=""):
        status, data = self.spaced.request("POST", "/v1/templates?name=%s&wait=true&timeout_s=600%s" % (name, query),
                                           raw=tar_of(files), headers={"Content-Type": "application/x-tar"}, timeout=620)
        if expect is not None:
            self.assertEqual(status, expect, repr(data))
        return status, data

    def log_of(self, op_id):
        status, body = self.spaced.request("GET", "/v1/templates/builds/%s/log" % op_id)
        self.assertEqual(status, 200)
        return body.decode() if isinstance(body, bytes) else json.dumps(body)

    def layers(self):
        return set(os.listdir(os.path.join(self.spaced.state_dir, "pool", "layers")))

    def leftovers(self):
        pool = os.path.join(self.spaced.state_dir, "pool")
        out = [n for n in os.listdir(os.path.join(pool, "sandboxes")) if n.startswith("bld-")]
        out += os.listdir(os.path.join(pool, "staging"))
        out += os.listdir(os.path.join(pool, "builds"))
        return out

    def sandbox_of(self, template):
        return self.new_sandbox(template=template)

    # ---- builds

    def test_build_cache_hit_and_miss(self):
        sp = self.spaced
        spacefile = (b"# a template\nFROM busybox\nENV GREETING=hello OTHER=\"two words\"\nWORKDIR /app\n"
                     b"COPY data.txt ./\nRUN echo \"$GREETING\" > out.txt \\\n && echo second >> out.txt\n")
        files = {"Spacefile": spacefile, "data.txt": b"payload\n"}
        _, d = self.build("cached:v1", files)
        op = d["operation"]
        self.assertEqual(op["state"], "succeeded", repr(op))
        self.assertEqual(d["template"]["name"], "cached:v1")
        env = d["template"]["environment"]
        self.assertTrue(env["digest"].startswith("sha256:"))
        self.assertEqual(env["config"]["env"], {"GREETING": "hello", "OTHER": "two words"})
        self.assertEqual(env["config"]["workdir"], "/app")
        self.assertEqual(env["base"].split("@")[0], "busybox")
        first_log = self.log_of(op["id"])
        self.assertNotIn("CACHED", first_log)
        self.assertIn("[2/4] WORKDIR /app", first_log)
        self.assertIn("BUILD SUCCEEDED", first_log)

        sid = self.sandbox_of("cached:v1")
        r = sp.sh(sid, 'cat out.txt; pwd; echo "$OTHER"')
        self.assertEqual(r["stdout"], "hello\nsecond\n/app\ntwo words\n")

        # The same again: every step from the cache, the same digest.
        layers_before = self.layers()
        _, d2 = self.build("cached:v2", files)
        log2 = self.log_of(d2["operation"]["id"])
        self.assertEqual(log2.count("CACHED"), 2, log2)
        self.assertEqual(d2["template"]["environment"]["digest"], env["digest"])
        self.assertEqual(self.layers(), layers_before)

        # Only the last step changed: only it runs.
        files["Spacefile"] = spacefile.replace(b"echo second", b"echo changed")
        _, d3 = self.build("cached:v3", files)
        log3 = self.log_of(d3["operation"]["id"])
        self.assertEqual(log3.count("CACHED"), 1, log3)
        self.assertIn("#4 DONE", log3)
        self.assertNotEqual(d3["template"]["environment"]["digest"], env["digest"])
        self.assertEqual(len(self.layers() - layers_before), 1)

        # A changed copied file invalidates its step and the ones after it.
        files["data.txt"] = b"other payload\n"
        _, d4 = self.build("cached:v4", files)
        self.assertNotIn("CACHED", self.log_of(d4["operation"]["id"]))

        # The name lists its tags and digests; a tag can be deleted.
        _, listing = sp.api("GET", "/v1/templates/cached", expect=200)
        tags = {t["tag"]: t["digest"] for t in listing["tags"]}
        self.assertEqual(set(tags), {"v1", "v2", "v3", "v4"})
        self.assertEqual(tags["v1"], tags["v2"])
        # A digest pins a version: NAME@DIGEST (or NAME:TAG@DIGEST) names exactly that content.
        pinned = sp.create(template="cached@" + tags["v3"])
        self.assertEqual(sp.get(pinned)["template"], "cached:v3")
        self.assertEqual(sp.sh(pinned, "tail -1 /app/out.txt")["stdout"], "changed\n")
        sp.destroy(pinned)
        self.assertError(sp.request("POST", "/v1/sandboxes", {"template": "cached:v1@" + tags["v3"]}), 404, "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes", {"template": "cached@sha256:" + "0" * 64}), 404, "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes", {"template": "cached@sha256:beef"}), 400, "invalid_request")
        sp.api("DELETE", "/v1/templates/cached:v4", expect=204)
        sp.api("GET", "/v1/templates/cached:v4", expect=404)
        # A template a sandbox was made from is not deleted unless asked to be (force=true),
        # and the sandbox keeps working after it is.
        st, body = sp.request("DELETE", "/v1/templates/cached:v1")
        self.assertEqual((st, body["error"]["code"]), (409, "conflict"), body)
        self.assertIn(sid, body["error"]["message"])
        self.assertIn("force", body["error"]["message"])
        sp.api("GET", "/v1/templates/cached:v1", expect=200)
        self.assertEqual(sp.request("DELETE", "/v1/templates/cached:v1?force=maybe")[0], 400)
        sp.api("DELETE", "/v1/templates/cached:v1?force=true", expect=204)
        self.assertEqual(sp.sh(sid, "cat /app/data.txt")["stdout"], "payload\n")
        # Pruning the layer cache: templates keep working, the next build misses.
        _, pruned = sp.api("POST", "/v1/templates/layers/prune", expect=200)
        self.assertGreaterEqual(pruned["removed"], 4)
        self.assertEqual(self.layers(), set())
        sid3 = self.sandbox_of("cached:v3")
        self.assertEqual(sp.sh(sid3, "cat /app/out.txt")["stdout"], "hello\nchanged\n")
        _, d5 = self.build("cached:v5", files)
        self.assertNotIn("CACHED", self.log_of(d5["operation"]["id"]))
        self.assertEqual(self.leftovers(), [])

    def test_copy_ownership_and_modes(self):
        sp = self.spaced
        spacefile = (b"FROM busybox\n"
                     b"COPY --chown=user:user --chmod=0640 secret.txt /home/user/\n"
                     b"COPY --chown=1234:4321 tree/ /opt/tree/\n"
                     b"COPY [\"with space.txt\", \"plain.sh\", \"/opt/\"]\n"
                     b"COPY plain.sh /usr/local/bin/renamed\n")
        files = {
            "Spacefile": spacefile,
            "secret.txt": (b"s3cret\n", 0o600),
            "tree": ("dir",),
            "tree/run.sh": (b"#!/bin/sh\necho ran\n", 0o755),
            "tree/sub": ("dir",),
            "tree/sub/data": (b"d\n", 0o600),
            "tree/link": ("symlink", "/etc/passwd"),
            "with space.txt": b"spaced\n",
            "plain.sh": (b"#!/bin/sh\necho plain\n", 0o750),
        }
        _, d = self.build("copies:1", files)
        self.assertEqual(d["operation"]["state"], "succeeded", repr(d))
        sid = self.sandbox_of("copies:1")
        st = lambda p: sp.sh(sid, "stat -c '%%u:%%g %%a %%F' '%s'" % p)["stdout"].strip()
        self.assertEqual(st("/home/user/secret.txt"), "1000:1000 640 regular file")
        self.assertEqual(st("/opt/tree"), "1234:4321 755 directory")
        self.assertEqual(st("/opt/tree/run.sh"), "1234:4321 755 regular file")
        self.assertEqual(st("/opt/tree/sub/data"), "1234:4321 600 regular file")
        self.assertEqual(st("/opt/tree/link"), "1234:4321 777 symbolic link")
        self.assertEqual(sp.sh(sid, "readlink /opt/tree/link")["stdout"], "/etc/passwd\n")
        self.assertEqual(st("/opt/with space.txt"), "0:0 644 regular file")
        self.assertEqual(st("/opt/plain.sh"), "0:0 750 regular file")
        self.assertEqual(sp.sh(sid, "/usr/local/bin/renamed")["stdout"], "plain\n")
        self.assertEqual(sp.sh(sid, "/opt/tree/run.sh")["stdout"], "ran\n")

    def test_user_and_workdir_apply_to_run_and_sandboxes(self):
        sp = self.spaced
        files = {"Spacefile": b"FROM busybox\nUSER user\nENV BASE=/home/user SAME_LINE=${BASE}x\nENV PATH=/opt/bin:$PATH\n"
                              b"WORKDIR $BASE/work\nRUN id -u > uid; echo $HOME > home; pwd > pwd\n"}
        _, d = self.build("user:1", files)
        config = d["template"]["environment"]["config"]
        self.assertEqual(config["user"], "user")
        self.assertEqual(config["workdir"], "/home/user/work")
        self.assertEqual(config["env"]["SAME_LINE"], "x")  # as in Docker: the line sees the env before it
        self.assertTrue(config["env"]["PATH"].startswith("/opt/bin:/usr/local/sbin:"), config)
        sid = self.sandbox_of("user:1")
        r = sp.sh(sid, "cat /home/user/work/uid /home/user/work/home /home/user/work/pwd; stat -c %u /home/user/work/uid")
        self.assertEqual(r["stdout"], "1000\n/home/user\n/home/user/work\n1000\n")
        # A streamed command runs as the template's USER in its WORKDIR unless told otherwise.
        _, session = sp.api("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=(200, 201))
        token = session["attach_token"]
        for body, want in (({"shell": "id -u > /tmp/who; pwd >> /tmp/who"}, "1000\n/home/user/work\n"),
                           ({"shell": "id -u > /tmp/who; pwd >> /tmp/who", "user": "root", "cwd": "/"}, "0\n/\n")):
            _, cmd = sp.api("POST", "/v1/sandboxes/%s/commands" % sid, body, key=token, expect=201)
            sp.api("GET", "/v1/sandboxes/%s/commands/%s?wait=true&timeout_s=30" % (sid, cmd["command_id"]), key=token, expect=200)
            self.assertEqual(sp.sh(sid, "cat /tmp/who")["stdout"], want)

    def test_failing_run_reports_the_step_and_leaves_nothing(self):
        sp = self.spaced
        layers_before = self.layers()
        files = {"Spacefile": b"FROM busybox\nRUN echo first-step > /f\nRUN echo boom-output; echo boom-err >&2; exit 3\n"}
        status, d = self.build("broken:1", files, expect=422)
        self.assertEqual(d["error"]["code"], "build_failed")
        msg = d["error"]["message"]
        self.assertIn("step 2/2", msg)
        self.assertIn("line 3", msg)
        self.assertIn("status 3", msg)
        log = self.log_of(d["operation"]["id"])
        self.assertIn("boom-output", log)
        self.assertIn("boom-err", log)
        self.assertIn("#2 ERROR", log)
        self.assertIn("BUILD FAILED", log)
        sp.api("GET", "/v1/templates/broken:1", expect=404)
        # The first step's layer is kept as cache (it succeeded); the failed one made none.
        self.assertEqual(len(self.layers() - layers_before), 1)
        self.assertEqual(self.leftovers(), [])

    def test_bad_requests_change_nothing(self):
        sp = self.spaced
        before = sp.api("GET", "/v1/templates", expect=200)[1]
        cases = [
            ("name=", {"Spacefile": b"FROM busybox\n"}, 400, "invalid_request"),
            ("name=bad/name", {"Spacefile": b"FROM busybox\n"}, 400, "invalid_request"),
            ("name=busybox", {"Spacefile": b"FROM busybox\n"}, 409, "already_exists"),
            ("name=x:1", {"Other": b"FROM busybox\n"}, 400, "invalid_request"),
            ("name=x:1", {"Spacefile": b"FROM busybox\nCMD [\"sh\"]\n"}, 400, "invalid_request"),
            ("name=x:1", {"Spacefile": b"FROM nosuchtemplate\n"}, 404, "not_found"),
            ("name=x:1&spacefile=../Spacefile", {"Spacefile": b"FROM busybox\n"}, 400, "invalid_request"),
        ]
        for query, files, status, code in cases:
            r = sp.request("POST", "/v1/templates?" + query, raw=tar_of(files))
            self.assertError(r, status, code)
        self.assertIn("line 2", sp.request("POST", "/v1/templates?name=x:1", raw=tar_of(cases[4][1]))[1]["error"]["message"])
        self.assertError(sp.request("POST", "/v1/templates?name=x:1", raw=b"this is not a tar archive" * 40), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/templates?name=x:1", raw=tar_of(cases[0][1]), key=None), 401)
        self.assertEqual(sp.api("GET", "/v1/templates", expect=200)[1], before)
        self.assertEqual(self.leftovers(), [])

    def test_hostile_contexts_are_refused_or_neutralised(self):
        sp = self.spaced
        sf = b"FROM busybox\nCOPY . /ctx/\n"
        marker = "/tmp/space-hostile-%d" % os.getpid()
        self.addCleanup(lambda: os.path.exists(marker) and os.unlink(marker))
        refused = {
            "absolute path": {"Spacefile": sf, marker: b"x"},
            "dot-dot": {"Spacefile": sf, "../../../../.." + marker: b"x"},
            "hard link out": {"Spacefile": sf, "h": ("hardlink", "../../../../etc/passwd")},
        }
        for what, files in refused.items():
            r = sp.request("POST", "/v1/templates?name=hostile:1", raw=tar_of(files))
            self.assertEqual(r[0], 400, "%s: %r" % (what, r))
            self.assertFalse(os.path.exists(marker), what)
        # Too big once unpacked (a tiny gzip of 16 MiB of zeros, the limit is 8 MiB).
        big = tar_of({"Spacefile": sf, "zeros": b"\0" * (16 << 20)}, gz=True)
        self.assertLess(len(big), 1 << 20)
        self.assertError(sp.request("POST", "/v1/templates?name=hostile:1", raw=big), 413, "payload_too_large")
        # An upload over the limit.
        self.assertError(sp.request("POST", "/v1/templates?name=hostile:1", raw=os.urandom(9 << 20)), 413, "payload_too_large")
        # Neutralised: a device file is dropped, a link pointing out is copied as a link only.
        files = {"Spacefile": sf, "dev": ("chr",), "up": ("symlink", "../../../../etc"), "f": b"ok\n"}
        _, d = self.build("hostile:2", files)
        sid = self.sandbox_of("hostile:2")
        r = sp.sh(sid, "ls -A /ctx; readlink /ctx/up; cat /ctx/f")
        self.assertEqual(r["stdout"], "Spacefile\nf\nup\n../../../../etc\nok\n")
        # A symlink pointing out and then written through: the link is replaced by a directory
        # inside the context, nothing is written where it pointed.
        files = {"Spacefile": sf, "out": ("symlink", "/tmp"), "out/" + os.path.basename(marker): b"x"}
        self.build("hostile:4", files)
        self.assertFalse(os.path.exists(marker))
        sid = self.sandbox_of("hostile:4")
        self.assertEqual(sp.sh(sid, "stat -c %F /ctx/out; ls /ctx/out")["stdout"],
                         "directory\n%s\n" % os.path.basename(marker))
        # COPY of a source outside the context fails the build.
        _, d = self.build("hostile:3", {"Spacefile": b"FROM busybox\nCOPY ../../etc/passwd /x\n"}, expect=422)
        self.assertIn("outside the build context", d["error"]["message"])
        self.assertEqual(self.leftovers(), [])

    def test_cancel_a_running_build(self):
        sp = self.spaced
        files = {"Spacefile": b"FROM busybox\nRUN echo started; sleep 120\n"}
        status, d = sp.request("POST", "/v1/templates?name=slow:1", raw=tar_of(files))
        self.assertEqual(status, 202, repr(d))
        op = d["operation"]["id"]
        wait_for(lambda: "started" in self.log_of(op) or "#1 [1/1]" in self.log_of(op), timeout=30, what="step start")
        time.sleep(1)
        t0 = time.monotonic()
        sp.api("POST", "/v1/operations/%s/cancel" % op, expect=202)
        final = wait_for(lambda: (lambda o: o if o["state"] in ("succeeded", "failed") else None)(
            sp.api("GET", "/v1/operations/" + op, expect=200)[1]), timeout=30, what="cancelled build")
        self.assertLess(time.monotonic() - t0, 20)
        self.assertEqual(final["state"], "failed")
        self.assertEqual(final["error"]["code"], "cancelled")
        sp.api("GET", "/v1/templates/slow:1", expect=404)
        self.assertError(sp.request("POST", "/v1/operations/%s/cancel" % op), 409, "invalid_state")
        self.assertEqual(self.leftovers(), [])

    def test_cancel_at_any_moment_of_a_step(self):
        """A cancel that comes before the step's sandbox runs (queued, at the step's first log
        line, at its first output) ends the build as promptly as one in the middle of it."""
        sp = self.spaced
        moments = (("queued", lambda op: True), ("step line", lambda op: "#1 [1/1]" in self.log_of(op)),
                   ("first output", lambda op: "started" in self.log_of(op)))
        for i, (moment, ready) in enumerate(moments):
            files = {"Spacefile": b"FROM busybox\nRUN echo started; sleep 120\n"}
            status, d = sp.request("POST", "/v1/templates?name=early:%d" % i, raw=tar_of(files))
            self.assertEqual(status, 202, repr(d))
            op = d["operation"]["id"]
            wait_for(lambda: ready(op), timeout=30, interval=0.005, what=moment)
            t0 = time.monotonic()
            sp.api("POST", "/v1/operations/%s/cancel" % op, expect=202)
            final = wait_for(lambda: (lambda o: o if o["state"] in ("succeeded", "failed") else None)(
                sp.api("GET", "/v1/operations/" + op, expect=200)[1]), timeout=60, what="cancelled build")
            self.assertLess(time.monotonic() - t0, 20, moment)
            self.assertEqual((final["state"], final["error"]["code"]), ("failed", "cancelled"), moment)
            sp.api("GET", "/v1/templates/early:%d" % i, expect=404)
        self.assertEqual(self.leftovers(), [])

    def test_follow_the_log(self):
        sp = self.spaced
        files = {"Spacefile": b"FROM busybox\nRUN echo early-output; sleep 3; echo followed-$((40+2))\n"}
        status, d = sp.request("POST", "/v1/templates?name=follow:1", raw=tar_of(files))
        op = d["operation"]["id"]
        # The step's output reaches the log while the step runs.
        wait_for(lambda: "early-output" in self.log_of(op), timeout=10, what="live output")
        self.assertNotIn("followed-42", self.log_of(op))
        self.assertEqual(sp.api("GET", "/v1/operations/" + op, expect=200)[1]["state"], "running")
        status, body = sp.request("GET", "/v1/templates/builds/%s/log?follow=true" % op, timeout=60)
        self.assertEqual(status, 200)
        text = body.decode()
        self.assertIn("followed-42", text)
        self.assertTrue(text.rstrip().splitlines()[-1].startswith("built in"), text)
        sp.api("GET", "/v1/templates/builds/op-0000000000000000/log", expect=404)
        # The same as Server-Sent Events, one per line, resumable from any event id.
        events = self.sse(op)
        self.assertEqual(events[-1][1], "end")
        self.assertEqual(json.loads(events[-1][2])["state"], "succeeded")
        lines = [json.loads(d)["text"] for _, e, d in events if e == "line"]
        self.assertEqual("\n".join(lines) + "\n", text)
        mid = events[2][0]
        rest = self.sse(op, headers={"Last-Event-ID": mid})
        self.assertEqual([d for _, e, d in rest if e == "line"], [d for _, e, d in events[3:] if e == "line"])
        self.assertEqual(self.sse(op, query="?after=%s" % events[-2][0])[0][1], "end")
        self.assertError(sp.request("GET", "/v1/templates/builds/%s/events?after=x" % op), 400, "invalid_request")

    def sse(self, op, headers=None, query=""):
        status, body = self.spaced.request("GET", "/v1/templates/builds/%s/events%s" % (op, query), headers=headers, timeout=60)
        self.assertEqual(status, 200)
        out = []
        for block in body.decode().split("\n\n"):
            fields = dict(l.split(": ", 1) for l in block.splitlines() if ": " in l and not l.startswith(":"))
            if "event" in fields:
                out.append((fields.get("id"), fields["event"], fields.get("data")))
        return out

    def test_cli_build_follows_the_log(self):
        sp = self.spaced
        import tempfile
        ctx = tempfile.mkdtemp(prefix="space-ctx-")
        self.addCleanup(shutil.rmtree, ctx, True)
        os.makedirs(os.path.join(ctx, "sub"))
        with open(os.path.join(ctx, "sub", "hello.txt"), "w") as f:
            f.write("hello from the context\n")
        os.symlink("/etc/shadow", os.path.join(ctx, "sub", "link"))
        elsewhere = os.path.join(tempfile.mkdtemp(prefix="space-sf-"), "My.Spacefile")
        self.addCleanup(shutil.rmtree, os.path.dirname(elsewhere), True)
        with open(elsewhere, "w") as f:
            f.write("FROM busybox\nCOPY sub /data/\nRUN cat /data/hello.txt\n")
        r = sp.cli("template", "build", "-f", elsewhere, "-t", "clibuilt:1", ctx)
        out = r.stdout.decode()
        self.assertEqual(r.returncode, 0, r.stderr.decode() + out)
        self.assertIn("[1/2] COPY sub /data/", out)
        self.assertIn("hello from the context", out)
        self.assertTrue(out.rstrip().endswith("clibuilt:1"), out)
        r = sp.cli("template", "build", "-f", elsewhere, "-t", "clibuilt:2", ctx)
        self.assertEqual(r.stdout.decode().count("CACHED"), 2, r.stdout.decode())
        sid = self.sandbox_of("clibuilt:2")
        self.assertEqual(sp.sh(sid, "readlink /data/link; cat /data/hello.txt")["stdout"], "/etc/shadow\nhello from the context\n")
        # A Spacefile inside the context, a failing step: exit status 1 and the reason.
        with open(os.path.join(ctx, "Spacefile"), "w") as f:
            f.write("FROM busybox\nRUN echo nope; exit 7\n")
        r = sp.cli("template", "build", "-t", "clibuilt:3", ctx)
        self.assertEqual(r.returncode, 1)
        self.assertIn("nope", r.stdout.decode())
        self.assertIn("status 7", r.stderr.decode())
        r = sp.cli("template", "get", "clibuilt")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = sp.cli("template", "rm", "clibuilt:1")
        self.assertEqual(r.returncode, 0, r.stderr)
        # In use, and stdin is not a terminal: refused, naming what uses it; --force deletes it.
        r = sp.cli("template", "rm", "clibuilt:2")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("in use", r.stderr.decode())
        self.assertIn(sid, r.stderr.decode())
        r = sp.cli("template", "rm", "--force", "clibuilt:2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sp.sh(sid, "cat /data/hello.txt")["stdout"], "hello from the context\n")
        r = sp.cli("template", "prune")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("removed", r.stdout.decode())
        # Import from the CLI.
        if BUSYBOX:
            with open(BUSYBOX, "rb") as f:
                tarball = tar_of({"bin/busybox": (f.read(), 0o755), "bin/sh": ("symlink", "busybox")})
            path = os.path.join(ctx, "rootfs.tar")
            with open(path, "wb") as f:
                f.write(tarball)
            r = sp.cli("template", "import", "-t", "cliimport:1", path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.decode().startswith("cliimport:1 sha256:"), r.stdout)

    def test_build_sandbox_cannot_reach_host_loopback(self):
        sp = self.spaced
        # spaced listens on the host's 127.0.0.1: neither 10.0.2.2 (slirp's host alias) nor
        # 127.0.0.1 (the sandbox's own lo) reach it from a RUN.
        # (busybox's wget crashes in static builds: nc is the probe; the sandbox's own
        # listener proves the probe works.)
        script = ("(nc -l -p 8000 </dev/null >/dev/null &); sleep 0.3; "
                  "for t in 127.0.0.1:8000 10.0.2.2:%d 127.0.0.1:%d; do if nc -w 3 ${t%%:*} ${t#*:} </dev/null; "
                  "then echo \"r\"\"eached-$t\"; else echo \"b\"\"locked-$t\"; fi; done" % (sp.port, sp.port)).encode()
        _, d = self.build("netcheck:1", {"Spacefile": b"FROM busybox\nRUN " + script + b"\n"})
        log = self.log_of(d["operation"]["id"])
        self.assertIn("reached-127.0.0.1:8000", log)
        self.assertIn("blocked-10.0.2.2:%d" % sp.port, log)
        self.assertIn("blocked-127.0.0.1:%d" % sp.port, log)

    def test_build_sandbox_cannot_reach_private_addresses(self):
        """A RUN step with slirp4netns reaches the internet through the host, so without a
        policy it would reach whatever the host reaches: internal services on private
        addresses and cloud metadata at 169.254.169.254. A network namespace made here plays
        the internal host (10.213.77.2 and 169.254.169.254 on a veth); the host itself can
        reach it, the build cannot."""
        import socket
        import subprocess
        ns, host_if, ns_if = "spt-priv-%d" % os.getpid(), "sptp%d" % (os.getpid() % 100000), "sptq%d" % (os.getpid() % 100000)
        run = lambda *a: subprocess.run(a, check=True, capture_output=True)
        run("ip", "netns", "add", ns)
        self.addCleanup(subprocess.run, ["ip", "netns", "del", ns], capture_output=True)
        run("ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        self.addCleanup(subprocess.run, ["ip", "link", "del", host_if], capture_output=True)
        run("ip", "link", "set", ns_if, "netns", ns)
        run("ip", "addr", "add", "10.213.77.1/30", "dev", host_if)
        run("ip", "link", "set", host_if, "up")
        run("ip", "route", "add", "169.254.169.254/32", "dev", host_if)
        for a in (("ip", "addr", "add", "10.213.77.2/30", "dev", ns_if), ("ip", "addr", "add", "169.254.169.254/32", "dev", ns_if),
                  ("ip", "link", "set", ns_if, "up"), ("ip", "link", "set", "lo", "up"),
                  ("ip", "route", "add", "default", "dev", ns_if)):
            run("ip", "netns", "exec", ns, *a)
        server = subprocess.Popen(["ip", "netns", "exec", ns, "python3", "-c",
                                   "import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                                   "s.bind(('0.0.0.0', 8081)); s.listen(16)\nwhile True:\n c, _ = s.accept(); c.sendall(b'internal\\n'); c.close()"])
        self.addCleanup(server.wait)
        self.addCleanup(server.kill)
        # The probe is real: from the host, both addresses answer.
        for addr in ("10.213.77.2", "169.254.169.254"):
            def probe(addr=addr):
                with socket.create_connection((addr, 8081), timeout=2) as c:
                    return c.recv(64)
            got = wait_for(probe, timeout=10, what="the test's internal host at %s" % addr)
            self.assertEqual(got, b"internal\n")
        script = ("for t in 10.213.77.2 169.254.169.254; do if nc -w 3 $t 8081 </dev/null | grep -q internal; "
                  "then echo \"r\"\"eached-$t\"; else echo \"b\"\"locked-$t\"; fi; done").encode()
        _, d = self.build("privcheck:1", {"Spacefile": b"FROM busybox\nRUN " + script + b"\n"})
        log = self.log_of(d["operation"]["id"])
        self.assertIn("blocked-10.213.77.2", log)
        self.assertIn("blocked-169.254.169.254", log)
        self.assertNotIn("reached-", log)

    # ---- imports

    def test_import_rootfs_tarball(self):
        if not BUSYBOX:
            raise unittest.SkipTest("no busybox")
        sp = self.spaced
        with open(BUSYBOX, "rb") as f:
            bb = f.read()
        files = {"bin": ("dir",), "bin/busybox": (bb, 0o755), "bin/sh": ("symlink", "busybox"),
                 "etc": ("dir",), "etc/motd": b"imported\n", "dev/null": ("chr",),
                 "owned": ("owned", 4242, 4343, "root")}
        r = sp.request("POST", "/v1/templates/import?name=rootfs:1&format=rootfs", raw=tar_of(files, gz=True))
        self.assertEqual(r[0], 201, repr(r))
        self.assertEqual(r[1]["state"], "ready")
        sid = self.sandbox_of("rootfs:1")
        self.assertEqual(sp.sh(sid, "cat /etc/motd; stat -c '%u:%g %a' /owned; ls /dev/null && echo dev-ok")["stdout"],
                         "imported\n4242:4343 640\n/dev/null\ndev-ok\n")
        self.assertError(sp.request("POST", "/v1/templates/import?name=rootfs:2&format=rootfs",
                                    raw=tar_of({"/etc/x": b"abs"})), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/templates/import?name=rootfs:2&format=zip", raw=b""), 400, "invalid_request")

    def test_import_oci_layout_with_whiteouts(self):
        if not BUSYBOX:
            raise unittest.SkipTest("no busybox")
        sp = self.spaced
        with open(BUSYBOX, "rb") as f:
            bb = f.read()
        layer1 = tar_of({"bin": ("dir",), "bin/busybox": (bb, 0o755), "bin/sh": ("symlink", "busybox"),
                         "bin/cat": ("symlink", "busybox"), "bin/ls": ("symlink", "busybox"),
                         "etc": ("dir",), "etc/gone": b"old\n", "etc/kept": b"kept\n",
                         "opaque": ("dir",), "opaque/old1": b"1", "opaque/old2": b"2",
                         "tree": ("dir",), "tree/deep": ("dir",), "tree/deep/f": b"f"}, gz=True)
        layer2 = tar_of({"etc/.wh.gone": b"", "opaque/.wh..wh..opq": b"", "opaque/new": b"new\n",
                         ".wh..": b"", "etc/.wh.": b"",  # hostile whiteouts that name nothing
                         ".wh.tree": b"", "etc/added": b"added\n"})
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "config": {"Env": ["FROM_IMAGE=yes", "PATH=/bin"], "WorkingDir": "/etc"},
                             "rootfs": {"type": "layers", "diff_ids": []}}).encode()
        blobs = {}

        def blob(data):
            digest = hashlib.sha256(data).hexdigest()
            blobs["blobs/sha256/" + digest] = data
            return "sha256:" + digest
        manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": blob(config), "size": len(config)},
                               "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": blob(layer1), "size": len(layer1)},
                                          {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": blob(layer2), "size": len(layer2)}]}).encode()
        index = json.dumps({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                                               "digest": blob(manifest), "size": len(manifest)}]}).encode()
        files = {"oci-layout": b'{"imageLayoutVersion": "1.0.0"}', "index.json": index, "blobs": ("dir",), "blobs/sha256": ("dir",)}
        files.update(blobs)
        r = sp.request("POST", "/v1/templates/import?name=oci:1&format=oci", raw=tar_of(files))
        self.assertEqual(r[0], 201, repr(r))
        self.assertEqual(r[1]["environment"]["config"]["env"]["FROM_IMAGE"], "yes")
        sid = self.sandbox_of("oci:1")
        out = sp.sh(sid, "ls /etc; echo --; ls /opaque; echo --; ls / | grep -c tree; pwd; echo $FROM_IMAGE")["stdout"]
        self.assertEqual(out, "added\nkept\n--\nnew\n--\n0\n/etc\nyes\n")
        # The same image as `docker save` writes it: manifest.json naming layer tars by path.
        saved = {"manifest.json": json.dumps([{"Config": "cfg.json", "RepoTags": ["x:1"],
                                               "Layers": ["l1/layer.tar", "l2/layer.tar"]}]).encode(),
                 "cfg.json": config, "l1": ("dir",), "l1/layer.tar": layer1, "l2": ("dir",), "l2/layer.tar": layer2}
        r = sp.request("POST", "/v1/templates/import?name=saved:1&format=oci", raw=tar_of(saved))
        self.assertEqual(r[0], 201, repr(r))
        sid = self.sandbox_of("saved:1")
        self.assertEqual(sp.sh(sid, "ls /etc /opaque; echo $FROM_IMAGE")["stdout"], "/etc:\nadded\nkept\n\n/opaque:\nnew\nyes\n")
        saved["manifest.json"] = json.dumps([{"Layers": ["../../../etc/passwd"]}]).encode()
        self.assertEqual(sp.request("POST", "/v1/templates/import?name=saved:2&format=oci", raw=tar_of(saved))[0], 400)
        # A manifest naming a blob outside the layout is refused.
        bad = dict(files)
        bad["index.json"] = json.dumps({"manifests": [{"digest": "sha256:../../../../etc/passwd"}]}).encode()
        self.assertEqual(sp.request("POST", "/v1/templates/import?name=oci:2&format=oci", raw=tar_of(bad))[0], 400)

    # ---- presets (needs the Debian mirror)

    @unittest.skipIf(os.environ.get("SPACE_SKIP_NETWORK_TESTS"), "network tests disabled")
    def test_python_preset(self):
        sp = self.spaced
        # FROM a preset that is not built yet: debian, then python, are built first.
        self.assertEqual(sp.api("GET", "/v1/templates/python", expect=200)[1]["state"], "not_built")
        files = {"Spacefile": b"FROM python\nRUN python3 -c 'print(2)' > two; id -un >> two\n"}  # as the preset's USER
        _, d = self.build("pyapp:1", files)
        log = self.log_of(d["operation"]["id"])
        self.assertIn("building the python template first", log)
        self.assertIn("python is ready", log)
        # debian, built for it, wrote debootstrap's own output into the same log.
        self.assertIn("debian: debootstrap --variant=minbase bookworm from", log)
        self.assertIn("I: Base system installed successfully.", log)
        self.assertRegex(log, r"debian built in [0-9.]+s")
        # The preset's own build now finds every layer in the cache.
        status, d = sp.request("POST", "/v1/templates/python/build?wait=true&timeout_s=600", timeout=620)
        self.assertEqual(status, 200, repr(d))
        self.assertEqual(d["operation"]["state"], "succeeded", repr(d))
        self.assertIn("#2 CACHED", self.log_of(d["operation"]["id"]))
        sid2 = self.sandbox_of("pyapp:1")
        self.assertEqual(sp.sh(sid2, "cat /home/user/two")["stdout"], "2\nuser\n")
        t = sp.api("GET", "/v1/templates/python", expect=200)[1]
        self.assertEqual(t["state"], "ready")
        self.assertEqual(t["environment"]["config"]["user"], "user")
        sid = self.sandbox_of("python")
        r = sp.exec(sid, cmd=["python3", "-c", "print(1)"])
        self.assertEqual((r["exit_code"], r["stdout"]), (0, "1\n"), repr(r))
        r = sp.sh(sid, "pwd; python3 -m venv /tmp/v && /tmp/v/bin/pip --version >/dev/null && echo venv-ok; id -u user")
        self.assertEqual(r["stdout"], "/home/user\nvenv-ok\n1000\n", repr(r))
        # The layer's own /etc/hosts came back after the build's RUN.
        self.assertNotIn("deb.debian.org", sp.sh(sid, "cat /etc/hosts")["stdout"])


class TemplateBuildCrash(FreshSpacedTestCase):
    """kill -9 of spaced in the middle of a build step: the restart redoes the build, reusing
    the layers it had finished, and leaves no build sandbox behind."""

    def test_kill9_mid_build(self):
        sp = self.spaced
        files = {"Spacefile": b"FROM busybox\nRUN echo one > /one\nRUN sleep 4; echo two > /two\n"}
        status, d = sp.request("POST", "/v1/templates?name=crash:1", raw=tar_of(files))
        self.assertEqual(status, 202, repr(d))
        op = d["operation"]["id"]
        logp = os.path.join(sp.state_dir, "logs", "build-%s.log" % op)
        wait_for(lambda: os.path.exists(logp) and "[2/2]" in read_text(logp), timeout=30, what="second step")
        time.sleep(1)
        sp.kill9()
        sp.start()
        final = wait_for(lambda: (lambda o: o if o["state"] in ("succeeded", "failed") else None)(
            sp.api("GET", "/v1/operations/" + op, expect=200)[1]), timeout=60, what="rerun build")
        self.assertEqual(final["state"], "succeeded", repr(final))
        text = read_text(logp)
        self.assertIn("#1 CACHED", text)  # the first step's layer survived the crash
        sid = sp.create(template="crash:1")
        self.assertEqual(sp.sh(sid, "cat /one /two")["stdout"], "one\ntwo\n")
        pool = os.path.join(sp.state_dir, "pool")
        self.assertEqual([n for n in os.listdir(os.path.join(pool, "sandboxes")) if n.startswith("bld-")], [])
        self.assertEqual(os.listdir(os.path.join(pool, "builds")), [])


if __name__ == "__main__":
    unittest.main()
