#include "egress/egress_cert_new.h"

#include <sys/random.h>
#include <unistd.h>

int egress_cert_new(time_t now, time_t valid_s, gnutls_x509_privkey_t *ret_key, gnutls_x509_crt_t *ret_crt)
{
        unsigned char serial[16], id[64];
        size_t id_size = sizeof(id);
        *ret_key = NULL;
        *ret_crt = NULL;
        int r = getrandom(serial, sizeof(serial), 0) == (ssize_t)sizeof(serial) ? 0 : GNUTLS_E_RANDOM_FAILED;
        serial[0] &= 0x7f;
        if (r == 0)
                r = gnutls_x509_privkey_init(ret_key);
        if (r == 0)
                r = gnutls_x509_privkey_generate(*ret_key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
        if (r == 0)
                r = gnutls_x509_crt_init(ret_crt);
        if (r == 0)
                r = gnutls_x509_crt_set_version(*ret_crt, 3);
        if (r == 0)
                r = gnutls_x509_crt_set_serial(*ret_crt, serial, sizeof(serial));
        if (r == 0)
                r = gnutls_x509_crt_set_activation_time(*ret_crt, now - 3600);
        if (r == 0)
                r = gnutls_x509_crt_set_expiration_time(*ret_crt, now + valid_s);
        if (r == 0)
                r = gnutls_x509_crt_set_key(*ret_crt, *ret_key);
        if (r == 0)
                r = gnutls_x509_crt_get_key_id(*ret_crt, 0, id, &id_size);
        if (r == 0)
                r = gnutls_x509_crt_set_subject_key_id(*ret_crt, id, id_size);
        return r;
}
