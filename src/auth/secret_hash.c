#include "auth/secret_hash.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

int secret_hash(const char *secret, char *buf, size_t size)
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        if (size < SECRET_HASH_SIZE || EVP_Digest(secret, strlen(secret), md, &len, EVP_sha256(), NULL) != 1)
                return -EINVAL;
        for (unsigned i = 0; i < len; i++)
                snprintf(buf + 2 * i, 3, "%02x", md[i]);
        explicit_bzero(md, sizeof(md));
        return 0;
}
