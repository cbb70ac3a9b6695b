/* tls_files: the PEM certificate and key of --tls-cert/--tls-key, read once at start into
 * the configuration (libmicrohttpd takes them from memory, src/api/http_listener.c). */
#pragma once

#include <stddef.h>

struct spaced_config;

/* Reads cfg->tls_cert_path and cfg->tls_key_path into cfg->tls_cert_pem and
 * cfg->tls_key_pem; nothing when TLS is off. Each must be a regular file of at most 1 MiB
 * holding a PEM block of its kind. 0, or -errno with reason set. *warning is set (else
 * "") when the key is readable by others than its owner. */
int tls_files_load(struct spaced_config *cfg, char *reason, size_t reason_size, char *warning, size_t warning_size);
void tls_files_release(struct spaced_config *cfg);
