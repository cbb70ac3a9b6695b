/* tls_credentials: the certificate chain and private key that every TLS listener hands out,
 * one pair for the whole process, replaceable while spaced runs (SIGHUP re-reads
 * --tls-cert/--tls-key). libmicrohttpd asks for the pair at each handshake through GnuTLS's
 * certificate callback (tls_credentials_callback), so a handshake gets the pair in force
 * when it starts and connections already open keep theirs. A pair that is replaced is
 * kept until the process exits (a session made with it may still point at it); a reload
 * costs the few KiB of the old pair. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Parses a PEM chain (in any order: it is sorted leaf first) and its PEM private key and
 * checks that the key is the leaf's; then the pair becomes the one handed out. 0, or -EINVAL (-ENOMEM) with reason
 * set and the pair in force unchanged. */
int tls_credentials_set(const char *cert_pem, const char *key_pem, char *reason, size_t reason_size);
/* Whether a pair has been set. */
bool tls_credentials_ready(void);
/* The callback for MHD_OPTION_HTTPS_CERT_CALLBACK (a gnutls_certificate_retrieve_function2). */
void *tls_credentials_callback(void);
