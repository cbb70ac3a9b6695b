#include "auth/node_credential.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAC_HEX 64

/* The HMAC over every field, each ended by a NUL (so no two field lists give one text). */
static int mac_hex(const unsigned char *key, size_t key_len, const char *node_id, int64_t ms, const char *method,
                   const char *target, const char *principal, char hex[MAC_HEX + 1])
{
        char stamp[24];
        snprintf(stamp, sizeof(stamp), "%" PRId64, ms);
        const char *fields[] = { "space-node-v1", node_id, stamp, method, target, principal ? principal : "" };
        EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        EVP_MAC_CTX *mc = mac ? EVP_MAC_CTX_new(mac) : NULL;
        OSSL_PARAM params[] = { OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0), OSSL_PARAM_construct_end() };
        unsigned char md[EVP_MAX_MD_SIZE];
        size_t md_len = 0;
        int ok = mc && EVP_MAC_init(mc, key, key_len, params) == 1;
        for (size_t i = 0; ok && i < sizeof(fields) / sizeof(fields[0]); i++)
                ok = EVP_MAC_update(mc, (const unsigned char *)fields[i], strlen(fields[i]) + 1) == 1;
        ok = ok && EVP_MAC_final(mc, md, &md_len, sizeof(md)) == 1 && md_len == MAC_HEX / 2;
        EVP_MAC_CTX_free(mc);
        EVP_MAC_free(mac);
        for (size_t i = 0; ok && i < md_len; i++)
                snprintf(hex + 2 * i, 3, "%02x", md[i]);
        OPENSSL_cleanse(md, sizeof(md));
        return ok ? 0 : -EINVAL;
}

static int id_ok(const char *id)
{
        size_t n = strlen(id);
        return n > 0 && n < 32 && strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

int node_credential_sign(const unsigned char *key, size_t key_len, const char *node_id, int64_t now_ms, const char *method,
                         const char *target, const char *principal, char *buf, size_t size)
{
        char hex[MAC_HEX + 1];
        if (!key || !key_len || !id_ok(node_id) || mac_hex(key, key_len, node_id, now_ms, method, target, principal, hex) < 0)
                return -EINVAL;
        int n = snprintf(buf, size, "v1 %s %" PRId64 " %s", node_id, now_ms, hex);
        return n < 0 || (size_t)n >= size ? -EINVAL : 0;
}

int node_credential_verify(const unsigned char *key, size_t key_len, const char *header, const char *method, const char *target,
                           const char *principal, int64_t now_ms, char ret_node[32])
{
        char node[32], stamp[24], given[MAC_HEX + 2], want[MAC_HEX + 1];
        if (!key || !key_len || !header || strlen(header) >= NODE_CREDENTIAL_SIZE ||
            sscanf(header, "v1 %31s %23s %65s", node, stamp, given) != 3 || !id_ok(node) || strlen(given) != MAC_HEX ||
            strspn(stamp, "0123456789") != strlen(stamp))
                return -EINVAL;
        char *end = NULL;
        errno = 0;
        long long ms = strtoll(stamp, &end, 10);
        if (errno || *end)
                return -EINVAL;
        if (mac_hex(key, key_len, node, ms, method, target, principal, want) < 0)
                return -EINVAL;
        if (CRYPTO_memcmp(want, given, MAC_HEX) != 0)
                return -EPERM;
        if (ms < now_ms - NODE_CREDENTIAL_SKEW_MS || ms > now_ms + NODE_CREDENTIAL_SKEW_MS)
                return -ETIME;
        snprintf(ret_node, 32, "%s", node);
        return 0;
}
