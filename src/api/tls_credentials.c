#include "api/tls_credentials.h"

#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many certificates in a chain (leaf and intermediates). */
#define TLS_CHAIN_MAX 16

struct tls_pair {
        gnutls_pcert_st certs[TLS_CHAIN_MAX];
        unsigned ncerts;
        gnutls_privkey_t key;
        struct tls_pair *retired; /* the pair this one replaced */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct tls_pair *current; /* under lock; older pairs hang off its retired chain */

static void pair_free(struct tls_pair *p)
{
        for (unsigned i = 0; i < p->ncerts; i++)
                gnutls_pcert_deinit(&p->certs[i]);
        if (p->key)
                gnutls_privkey_deinit(p->key);
        free(p);
}

/* The DER public key of a public key object, or of a private key's public half. */
static int export_pubkey(gnutls_pubkey_t pub, gnutls_datum_t *out)
{
        return gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, out);
}

static int key_matches_leaf(struct tls_pair *p, char *reason, size_t reason_size)
{
        gnutls_pubkey_t of_key = NULL;
        gnutls_datum_t a = { 0 }, b = { 0 };
        int r = gnutls_pubkey_init(&of_key);
        if (r == 0)
                r = gnutls_pubkey_import_privkey(of_key, p->key, 0, 0);
        if (r == 0)
                r = export_pubkey(of_key, &a);
        if (r == 0)
                r = export_pubkey(p->certs[0].pubkey, &b);
        int ok = r == 0 && a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
        if (r < 0)
                snprintf(reason, reason_size, "the key's public half cannot be read: %s", gnutls_strerror(r));
        else if (!ok)
                snprintf(reason, reason_size, "the private key is not the key of the first certificate");
        gnutls_free(a.data);
        gnutls_free(b.data);
        if (of_key)
                gnutls_pubkey_deinit(of_key);
        return ok ? 0 : -EINVAL;
}

int tls_credentials_set(const char *cert_pem, const char *key_pem, char *reason, size_t reason_size)
{
        struct tls_pair *p = calloc(1, sizeof(*p));
        if (!p) {
                snprintf(reason, reason_size, "out of memory");
                return -ENOMEM;
        }
        gnutls_datum_t cert = { (unsigned char *)cert_pem, (unsigned)strlen(cert_pem) };
        gnutls_datum_t key = { (unsigned char *)key_pem, (unsigned)strlen(key_pem) };
        p->ncerts = TLS_CHAIN_MAX;
        int r = gnutls_pcert_list_import_x509_raw(p->certs, &p->ncerts, &cert, GNUTLS_X509_FMT_PEM, GNUTLS_X509_CRT_LIST_SORT);
        if (r < 0) {
                p->ncerts = 0;
                snprintf(reason, reason_size, "the certificate chain cannot be read: %s", gnutls_strerror(r));
                pair_free(p);
                return -EINVAL;
        }
        if ((r = gnutls_privkey_init(&p->key)) == 0)
                r = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
        if (r < 0) {
                snprintf(reason, reason_size, "the private key cannot be read: %s", gnutls_strerror(r));
                pair_free(p);
                return -EINVAL;
        }
        if (key_matches_leaf(p, reason, reason_size) < 0) {
                pair_free(p);
                return -EINVAL;
        }
        pthread_mutex_lock(&lock);
        p->retired = current;
        current = p;
        pthread_mutex_unlock(&lock);
        return 0;
}

bool tls_credentials_ready(void)
{
        pthread_mutex_lock(&lock);
        bool ready = current != NULL;
        pthread_mutex_unlock(&lock);
        return ready;
}

/* GnuTLS asks at each handshake (server side: no CA names, no algorithm list). The pair
 * stays valid after the lock is dropped: pairs are never freed while the process runs. */
static int retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs, const gnutls_pk_algorithm_t *pk_algos,
                    int pk_algos_length, gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
        (void)session, (void)req_ca_rdn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
        pthread_mutex_lock(&lock);
        struct tls_pair *p = current;
        pthread_mutex_unlock(&lock);
        if (!p)
                return -1;
        *pcert = p->certs;
        *pcert_length = p->ncerts;
        *pkey = p->key;
        return 0;
}

void *tls_credentials_callback(void)
{
        gnutls_certificate_retrieve_function2 *cb = retrieve;
        return (void *)cb;
}
