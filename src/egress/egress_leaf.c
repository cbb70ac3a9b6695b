#include "egress/egress_leaf.h"

#include <errno.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

struct egress_leaf_minter {
        gnutls_x509_crt_t ca;
        gnutls_x509_privkey_t ca_key;
        unsigned char ca_key_id[64];
        size_t ca_key_id_size;
        struct egress_leaf *cache[EGRESS_LEAF_CACHE];
};

int egress_leaf_minter_open(const char *cert_file, const char *key_file, struct egress_leaf_minter **ret, char *why,
                            size_t why_size)
{
        struct egress_leaf_minter *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        gnutls_datum_t cert = { 0 }, key = { 0 };
        int r = gnutls_load_file(cert_file, &cert);
        if (r == 0)
                r = gnutls_load_file(key_file, &key);
        if (r == 0)
                r = gnutls_x509_crt_init(&m->ca);
        if (r == 0)
                r = gnutls_x509_crt_import(m->ca, &cert, GNUTLS_X509_FMT_PEM);
        if (r == 0)
                r = gnutls_x509_privkey_init(&m->ca_key);
        if (r == 0)
                r = gnutls_x509_privkey_import(m->ca_key, &key, GNUTLS_X509_FMT_PEM);
        m->ca_key_id_size = sizeof(m->ca_key_id);
        if (r == 0)
                r = gnutls_x509_crt_get_subject_key_id(m->ca, m->ca_key_id, &m->ca_key_id_size, NULL);
        /* The key must be the certificate's. */
        unsigned char a[64], b[64];
        size_t as = sizeof(a), bs = sizeof(b);
        if (r == 0 &&
            (gnutls_x509_crt_get_key_id(m->ca, 0, a, &as) < 0 || gnutls_x509_privkey_get_key_id(m->ca_key, 0, b, &bs) < 0 ||
             as != bs || memcmp(a, b, as) != 0))
                r = GNUTLS_E_CERTIFICATE_KEY_MISMATCH;
        gnutls_free(cert.data);
        if (key.data) {
                explicit_bzero(key.data, key.size);
                gnutls_free(key.data);
        }
        if (r < 0) {
                snprintf(why, why_size, "the egress CA (%s, %s): %s", cert_file, key_file, gnutls_strerror(r));
                egress_leaf_minter_free(m);
                return -EINVAL;
        }
        *ret = m;
        return 0;
}

void egress_leaf_put(struct egress_leaf *leaf)
{
        if (!leaf || --leaf->refs)
                return;
        gnutls_certificate_free_credentials(leaf->creds);
        free(leaf);
}

void egress_leaf_minter_free(struct egress_leaf_minter *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < EGRESS_LEAF_CACHE; i++)
                egress_leaf_put(m->cache[i]);
        if (m->ca)
                gnutls_x509_crt_deinit(m->ca);
        if (m->ca_key)
                gnutls_x509_privkey_deinit(m->ca_key);
        free(m);
}

static struct egress_leaf *mint(struct egress_leaf_minter *m, const char *name, int64_t now_s)
{
        size_t len = strlen(name);
        if (len == 0 || len >= sizeof(((struct egress_leaf *)0)->name))
                return NULL;
        struct egress_leaf *leaf = calloc(1, sizeof(*leaf));
        if (!leaf)
                return NULL;
        gnutls_x509_privkey_t key = NULL;
        gnutls_x509_crt_t crt = NULL;
        unsigned char serial[16], id[64];
        size_t id_size = sizeof(id);
        int r = getrandom(serial, sizeof(serial), 0) == (ssize_t)sizeof(serial) ? 0 : GNUTLS_E_RANDOM_FAILED;
        serial[0] &= 0x7f;
        if (r == 0)
                r = gnutls_x509_privkey_init(&key);
        if (r == 0)
                r = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
        if (r == 0)
                r = gnutls_x509_crt_init(&crt);
        if (r == 0)
                r = gnutls_x509_crt_set_version(crt, 3);
        if (r == 0)
                r = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
        if (r == 0)
                r = gnutls_x509_crt_set_activation_time(crt, (time_t)(now_s - 3600));
        if (r == 0)
                r = gnutls_x509_crt_set_expiration_time(crt, (time_t)(now_s + EGRESS_LEAF_VALID_S));
        if (r == 0 && len <= 64) /* a common name holds at most 64 characters; the SAN is what clients check */
                r = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, name, (unsigned)len);
        if (r == 0)
                r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, name, (unsigned)len, GNUTLS_FSAN_SET);
        if (r == 0)
                r = gnutls_x509_crt_set_key(crt, key);
        if (r == 0)
                r = gnutls_x509_crt_set_basic_constraints(crt, 0, -1);
        if (r == 0)
                r = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
        if (r == 0)
                r = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
        if (r == 0)
                r = gnutls_x509_crt_get_key_id(crt, 0, id, &id_size);
        if (r == 0)
                r = gnutls_x509_crt_set_subject_key_id(crt, id, id_size);
        if (r == 0)
                r = gnutls_x509_crt_set_authority_key_id(crt, m->ca_key_id, m->ca_key_id_size);
        if (r == 0)
                r = gnutls_x509_crt_sign2(crt, m->ca, m->ca_key, GNUTLS_DIG_SHA256, 0);
        if (r == 0)
                r = gnutls_certificate_allocate_credentials(&leaf->creds);
        gnutls_x509_crt_t chain[2] = { crt, m->ca };
        if (r == 0)
                r = gnutls_certificate_set_x509_key(leaf->creds, chain, 2, key);
        if (crt)
                gnutls_x509_crt_deinit(crt);
        if (key)
                gnutls_x509_privkey_deinit(key);
        if (r < 0) {
                if (leaf->creds)
                        gnutls_certificate_free_credentials(leaf->creds);
                free(leaf);
                return NULL;
        }
        memcpy(leaf->name, name, len + 1);
        leaf->minted_s = now_s;
        leaf->refs = 1; /* the cache's */
        return leaf;
}

struct egress_leaf *egress_leaf_get(struct egress_leaf_minter *m, const char *name, int64_t now_s)
{
        size_t slot = 0;
        for (size_t i = 0; i < EGRESS_LEAF_CACHE; i++) {
                struct egress_leaf *c = m->cache[i];
                if (c && strcmp(c->name, name) == 0 && now_s - c->minted_s < EGRESS_LEAF_VALID_S / 2 && now_s >= c->minted_s) {
                        c->refs++;
                        return c;
                }
                /* else the slot to reuse: a free one, then the same name's stale one, then the oldest */
                if (!m->cache[slot])
                        continue;
                if (!c || strcmp(c->name, name) == 0 || c->minted_s < m->cache[slot]->minted_s)
                        slot = i;
        }
        struct egress_leaf *leaf = mint(m, name, now_s);
        if (!leaf)
                return NULL;
        egress_leaf_put(m->cache[slot]);
        m->cache[slot] = leaf;
        leaf->refs++;
        return leaf;
}
