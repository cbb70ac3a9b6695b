/* e2b_file_meta: X-Metadata- headers into metadata pairs, and pairs into JSON. */
#include "e2b/e2b_file_meta.h"

#include <string.h>
#include <strings.h>

#include "api/output_encoding.h"

static int printable(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
                        return 0;
        return 1;
}

static int has_key(const struct e2b_file_meta *m, const char *key, size_t klen)
{
        for (size_t at = 0; at < m->len;) {
                const char *k = (const char *)m->pairs + at;
                size_t n = strlen(k);
                if (n == klen && memcmp(k, key, klen) == 0)
                        return 1;
                at += n + 1;
                at += strlen((const char *)m->pairs + at) + 1;
        }
        return 0;
}

int e2b_file_meta_add_header(struct e2b_file_meta *m, const char *name, const char *value, struct space_error *err)
{
        size_t plen = strlen(E2B_FILE_META_HEADER);
        if (!name || strncasecmp(name, E2B_FILE_META_HEADER, plen) != 0)
                return 0;
        const char *key = name + plen;
        size_t klen = strlen(key), vlen = value ? strlen(value) : 0;
        if (klen == 0 || !printable(key, klen))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "metadata keys must be non-empty printable US-ASCII");
        if (klen > E2B_FILE_META_KEY_MAX)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "a metadata key is longer than %d bytes",
                                       E2B_FILE_META_KEY_MAX);
        if (!printable(value ? value : "", vlen))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "metadata values must be printable US-ASCII");
        char lower[E2B_FILE_META_KEY_MAX + 1];
        for (size_t i = 0; i < klen; i++)
                lower[i] = (char)(key[i] >= 'A' && key[i] <= 'Z' ? key[i] - 'A' + 'a' : key[i]);
        lower[klen] = '\0';
        if (has_key(m, lower, klen))
                return 0;
        m->total += strlen("user.e2b.") + klen + vlen;
        if (m->total > E2B_FILE_META_TOTAL || m->len + klen + vlen + 2 > sizeof(m->pairs))
                return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                       "a file's metadata is limited to %d bytes (keys, values and 9 per key)",
                                       E2B_FILE_META_TOTAL);
        memcpy(m->pairs + m->len, lower, klen + 1);
        m->len += klen + 1;
        memcpy(m->pairs + m->len, value ? value : "", vlen + 1);
        m->len += vlen + 1;
        return 0;
}

json_t *e2b_file_meta_render_new(const uint8_t *pairs, size_t len)
{
        if (!pairs || len == 0)
                return NULL;
        json_t *o = json_object();
        for (size_t at = 0; o && at < len;) {
                const char *k = (const char *)pairs + at;
                size_t klen = strnlen(k, len - at);
                if (at + klen + 1 >= len)
                        break;
                const char *v = k + klen + 1;
                size_t vlen = strnlen(v, len - at - klen - 1);
                json_t *key = output_encoding_utf8((const uint8_t *)k, klen);
                if (json_is_string(key))
                        json_object_set_new(o, json_string_value(key), output_encoding_utf8((const uint8_t *)v, vlen));
                json_decref(key);
                at += klen + 1 + vlen + 1;
        }
        return o;
}
