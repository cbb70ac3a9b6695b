/* ns_trust_store: the platform CA put in a sandbox rootfs's trust store — Debian's bundle,
 * Alpine's cert.pem (a file, or a link to Debian's), none at all; twice changes nothing; a
 * link pointing out of the rootfs stays inside it; a stray tmp file of a crash is replaced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/namespaces/ns_trust_store.h"

#define CA "-----BEGIN CERTIFICATE-----\nMIIBplatformca\n-----END CERTIFICATE-----\n"
#define OTHER "-----BEGIN CERTIFICATE-----\nMIIBsomeroot\n-----END CERTIFICATE-----"

static char root[64];

#define SH(...)                                            \
        do {                                               \
                char cmd_[512];                            \
                snprintf(cmd_, sizeof(cmd_), __VA_ARGS__); \
                assert_int_equal(system(cmd_), 0);         \
        } while (0)

static char *slurp(const char *rel)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        FILE *f = fopen(path, "r");
        if (!f)
                return NULL;
        static char buf[4096];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static int count(const char *hay, const char *needle)
{
        int n = 0;
        for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

static int setup(void **state)
{
        (void)state;
        snprintf(root, sizeof(root), "/tmp/ns_trust_store_test.XXXXXX");
        assert_non_null(mkdtemp(root));
        SH("mkdir -p %s/etc", root);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        SH("rm -rf %s", root);
        return 0;
}

static void debian_bundle(void **state)
{
        (void)state;
        SH("mkdir -p %s/etc/ssl/certs && printf '%%s' '" OTHER "' > %s/etc/ssl/certs/ca-certificates.crt", root, root);
        assert_int_equal(ns_trust_store_add(root, CA), 0);
        assert_int_equal(ns_trust_store_add(root, CA), 0);
        char *b = slurp("etc/ssl/certs/ca-certificates.crt");
        assert_int_equal(count(b, "MIIBsomeroot"), 1);
        assert_int_equal(count(b, "MIIBplatformca"), 1);
        assert_non_null(strstr(b, "-----END CERTIFICATE-----\n-----BEGIN")); /* a newline between */
        assert_string_equal(slurp("etc/ssl/certs/space-platform-ca.pem"), CA);
        assert_null(slurp("etc/ssl/cert.pem"));
}

static void alpine_link_and_file(void **state)
{
        (void)state;
        /* Alpine: cert.pem a link to the Debian path */
        SH("mkdir -p %s/etc/ssl/certs && printf '%%s\\n' '" OTHER
           "\\n' > %s/etc/ssl/certs/ca-certificates.crt && "
           "ln -s certs/ca-certificates.crt %s/etc/ssl/cert.pem",
           root, root, root);
        assert_int_equal(ns_trust_store_add(root, CA), 0);
        assert_int_equal(count(slurp("etc/ssl/cert.pem"), "MIIBplatformca"), 1);
        assert_int_equal(count(slurp("etc/ssl/certs/ca-certificates.crt"), "MIIBplatformca"), 1);
        /* busybox-like: cert.pem alone; the Debian path is made from it */
        SH("rm -rf %s/etc/ssl && mkdir -p %s/etc/ssl && printf '%%s\\n' '" OTHER "' > %s/etc/ssl/cert.pem", root, root, root);
        assert_int_equal(ns_trust_store_add(root, CA), 0);
        assert_int_equal(ns_trust_store_add(root, CA), 0);
        char *b = slurp("etc/ssl/certs/ca-certificates.crt");
        assert_int_equal(count(b, "MIIBsomeroot"), 1);
        assert_int_equal(count(b, "MIIBplatformca"), 1);
        assert_int_equal(count(slurp("etc/ssl/cert.pem"), "MIIBplatformca"), 1);
}

static void no_bundle_and_hostile_links(void **state)
{
        (void)state;
        /* made where missing, owned as /etc is (the sandbox's root through its uid map) */
        SH("rm -rf %s/etc/ssl && chown 100000:100000 %s/etc", root, root);
        assert_int_equal(ns_trust_store_add(root, CA), 0);
        assert_string_equal(slurp("etc/ssl/certs/ca-certificates.crt"), CA);
        const char *made[] = { "etc/ssl", "etc/ssl/certs", "etc/ssl/certs/ca-certificates.crt",
                               "etc/ssl/certs/space-platform-ca.pem" };
        for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
                char path[256];
                struct stat st;
                snprintf(path, sizeof(path), "%s/%s", root, made[i]);
                assert_int_equal(stat(path, &st), 0);
                assert_int_equal(st.st_uid, 100000);
        }
        /* a link to the host's own file resolves inside the rootfs: the host's is untouched */
        char outside[128];
        snprintf(outside, sizeof(outside), "%s.outside", root);
        SH("rm -rf %s/etc/ssl && mkdir -p %s/etc/ssl/certs && printf keep > %s.outside", root, root, root);
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "ln -s %s %s/etc/ssl/certs/ca-certificates.crt && touch %s/etc/ssl/certs/.space-ca.tmp",
                 outside, root, root);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(ns_trust_store_add(root, CA), 0);
        FILE *f = fopen(outside, "r");
        char buf[16] = "";
        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof(buf), f));
        fclose(f);
        unlink(outside);
        assert_string_equal(buf, "keep");
        assert_string_equal(slurp("etc/ssl/certs/ca-certificates.crt"), CA);
        assert_null(slurp("etc/ssl/certs/.space-ca.tmp"));
        /* a FIFO for a bundle is not read (the start would hang): refused, nothing written */
        SH("rm -rf %s/etc/ssl && mkdir -p %s/etc/ssl/certs && mkfifo %s/etc/ssl/certs/ca-certificates.crt", root, root, root);
        assert_int_equal(ns_trust_store_add(root, CA), -EINVAL);
        /* no CA: nothing to do */
        assert_int_equal(ns_trust_store_add(root, NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(debian_bundle, setup, teardown),
                cmocka_unit_test_setup_teardown(alpine_link_and_file, setup, teardown),
                cmocka_unit_test_setup_teardown(no_bundle_and_hostile_links, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
