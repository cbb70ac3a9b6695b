/* The platform CA (runtime/platform_ca.c) and the leaves space-egress mints with it
 * (egress/egress_leaf.c): made once and loaded again, the key 0600, a half-made CA
 * replaced, leaves that chain to the CA for their name only, the cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "egress/egress_leaf.h"
#include "runtime/platform_ca.h"

static char dir[] = "/tmp/egress_leaf_test.XXXXXX";

static void cleanup_dir(void)
{
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf %s/egress-ca %s/egress-ca.tmp", dir, dir);
        assert_int_equal(system(cmd), 0);
}

static void ca_made_once(void **state)
{
        (void)state;
        cleanup_dir();
        struct platform_ca a, b;
        struct space_error err = { 0 };
        assert_int_equal(platform_ca_ensure(dir, &a, &err), 0);
        struct stat st;
        assert_int_equal(stat(a.key_path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_non_null(strstr(a.cert_pem, "BEGIN CERTIFICATE"));
        assert_null(strstr(a.cert_pem, "PRIVATE KEY"));
        assert_int_equal(platform_ca_ensure(dir, &b, &err), 0);
        assert_string_equal(a.cert_pem, b.cert_pem); /* loaded, not made again */
        platform_ca_release(&a);
        platform_ca_release(&b);
        /* a key others can read is refused */
        char key[4200];
        snprintf(key, sizeof(key), "%s/egress-ca/key.pem", dir);
        assert_int_equal(chmod(key, 0644), 0);
        assert_int_equal(platform_ca_ensure(dir, &a, &err), -1);
        assert_int_equal(chmod(key, 0600), 0);
}

static void half_made_ca_is_replaced(void **state)
{
        (void)state;
        cleanup_dir();
        /* a crash while writing: the tmp directory with part of a key, no CA */
        char path[4200];
        snprintf(path, sizeof(path), "%s/egress-ca.tmp", dir);
        assert_int_equal(mkdir(path, 0700), 0);
        snprintf(path, sizeof(path), "%s/egress-ca.tmp/key.pem", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs("-----BEGIN", f);
        fclose(f);
        struct platform_ca ca;
        struct space_error err = { 0 };
        assert_int_equal(platform_ca_ensure(dir, &ca, &err), 0);
        platform_ca_release(&ca);
        snprintf(path, sizeof(path), "%s/egress-ca.tmp", dir);
        assert_int_equal(access(path, F_OK), -1);
}

static unsigned verify(gnutls_certificate_credentials_t creds, const char *ca_pem, const char *name)
{
        gnutls_datum_t der = { 0 };
        assert_int_equal(gnutls_certificate_get_crt_raw(creds, 0, 0, &der), 0);
        gnutls_x509_crt_t leaf, ca;
        gnutls_x509_trust_list_t tl;
        assert_int_equal(gnutls_x509_crt_init(&leaf), 0);
        assert_int_equal(gnutls_x509_crt_import(leaf, &der, GNUTLS_X509_FMT_DER), 0);
        assert_int_equal(gnutls_x509_crt_init(&ca), 0);
        gnutls_datum_t pem = { (unsigned char *)ca_pem, (unsigned)strlen(ca_pem) };
        assert_int_equal(gnutls_x509_crt_import(ca, &pem, GNUTLS_X509_FMT_PEM), 0);
        assert_int_equal(gnutls_x509_trust_list_init(&tl, 0), 0);
        assert_int_equal(gnutls_x509_trust_list_add_cas(tl, &ca, 1, 0), 1);
        unsigned status = 0;
        assert_int_equal(gnutls_x509_trust_list_verify_crt(tl, &leaf, 1, 0, &status, NULL), 0);
        if (!gnutls_x509_crt_check_hostname(leaf, name))
                status |= GNUTLS_CERT_UNEXPECTED_OWNER;
        gnutls_x509_trust_list_deinit(tl, 1);
        gnutls_x509_crt_deinit(leaf);
        return status;
}

static void leaves_chain_to_the_ca(void **state)
{
        (void)state;
        cleanup_dir();
        struct platform_ca ca;
        struct space_error err = { 0 };
        assert_int_equal(platform_ca_ensure(dir, &ca, &err), 0);
        struct egress_leaf_minter *m = NULL;
        char why[512];
        assert_int_equal(egress_leaf_minter_open(ca.cert_path, ca.key_path, &m, why, sizeof(why)), 0);
        int64_t now = (int64_t)time(NULL);
        struct egress_leaf *a = egress_leaf_get(m, "api.example.com", now);
        assert_non_null(a);
        assert_int_equal(verify(a->creds, ca.cert_pem, "api.example.com"), 0);
        assert_int_not_equal(verify(a->creds, ca.cert_pem, "other.example.com"), 0);
        /* cached, then minted again once half its life is gone */
        struct egress_leaf *again = egress_leaf_get(m, "api.example.com", now + 60);
        assert_ptr_equal(a, again);
        egress_leaf_put(again);
        struct egress_leaf *later = egress_leaf_get(m, "api.example.com", now + EGRESS_LEAF_VALID_S / 2 + 1);
        assert_non_null(later);
        assert_ptr_not_equal(a, later);
        egress_leaf_put(a); /* still valid after the cache let it go: the session held it */
        egress_leaf_put(later);
        /* more names than the cache holds */
        for (int i = 0; i < EGRESS_LEAF_CACHE * 2; i++) {
                char name[64];
                snprintf(name, sizeof(name), "h%d.example.com", i);
                struct egress_leaf *l = egress_leaf_get(m, name, now);
                assert_non_null(l);
                egress_leaf_put(l);
        }
        assert_null(egress_leaf_get(m, "", now));
        /* a name longer than a common name may be (64) still gets a leaf, by its SAN */
        const char *longname = "a-very-long-label-of-a-name-that-goes-on-and-on.and-on-further.example.com";
        struct egress_leaf *lng = egress_leaf_get(m, longname, now);
        assert_non_null(lng);
        assert_int_equal(verify(lng->creds, ca.cert_pem, longname), 0);
        egress_leaf_put(lng);
        egress_leaf_minter_free(m);
        /* a key that is not the certificate's is refused */
        struct platform_ca other;
        char other_dir[] = "/tmp/egress_leaf_other.XXXXXX";
        assert_non_null(mkdtemp(other_dir));
        assert_int_equal(platform_ca_ensure(other_dir, &other, &err), 0);
        assert_int_equal(egress_leaf_minter_open(ca.cert_path, other.key_path, &m, why, sizeof(why)), -EINVAL);
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", other_dir);
        assert_int_equal(system(cmd), 0);
        platform_ca_release(&other);
        platform_ca_release(&ca);
}

int main(void)
{
        if (!mkdtemp(dir))
                return 1;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(ca_made_once),
                cmocka_unit_test(half_made_ca_is_replaced),
                cmocka_unit_test(leaves_chain_to_the_ca),
        };
        int r = cmocka_run_group_tests(tests, NULL, NULL);
        cleanup_dir();
        rmdir(dir);
        return r;
}
