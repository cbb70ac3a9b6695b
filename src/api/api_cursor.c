/* The cursor of the list routes: see api_cursor.h for the format. */
#include "api/api_cursor.h"

#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#define CURSOR_MAC_BYTES 8
#define CURSOR_MAX_LEN 512

static int cursor_mac(const char *raw, size_t len, unsigned char ret[CURSOR_MAC_BYTES])
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        if (EVP_Digest(raw, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < CURSOR_MAC_BYTES)
                return -1;
        memcpy(ret, md, CURSOR_MAC_BYTES);
        return 0;
}

int api_cursor_encode(const char *list, int64_t ms, const char *id, char *buf, size_t size)
{
        unsigned char bin[CURSOR_MAC_BYTES + 256];
        char *raw = (char *)bin + CURSOR_MAC_BYTES;
        int len = snprintf(raw, sizeof(bin) - CURSOR_MAC_BYTES, "%s:%" PRId64 ":%s", list, ms, id);
        if (len < 0 || (size_t)len >= sizeof(bin) - CURSOR_MAC_BYTES || cursor_mac(raw, (size_t)len, bin) < 0)
                return -1;
        size_t n = CURSOR_MAC_BYTES + (size_t)len;
        if (size < 4 * ((n + 2) / 3) + 1)
                return -1;
        int out = EVP_EncodeBlock((unsigned char *)buf, bin, (int)n);
        /* base64 -> base64url without padding */
        while (out > 0 && buf[out - 1] == '=')
                out--;
        buf[out] = '\0';
        for (char *c = buf; *c; c++)
                *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
        return 0;
}

int api_cursor_decode(const char *list, const char *token, int64_t *ret_ms, char *ret_id, size_t id_size)
{
        size_t len = strlen(token);
        char b64[CURSOR_MAX_LEN + 4];
        unsigned char bin[CURSOR_MAX_LEN];
        if (len == 0 || len > CURSOR_MAX_LEN || len % 4 == 1)
                return -1;
        for (size_t i = 0; i < len; i++) {
                char c = token[i];
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
                        return -1;
                b64[i] = c == '-' ? '+' : c == '_' ? '/' : c;
        }
        size_t pad = (4 - len % 4) % 4;
        memset(b64 + len, '=', pad);
        b64[len + pad] = '\0';
        int got = EVP_DecodeBlock(bin, (const unsigned char *)b64, (int)(len + pad));
        if (got < 0 || (size_t)got < pad)
                return -1;
        size_t n = (size_t)got - pad;
        if (n <= CURSOR_MAC_BYTES)
                return -1;
        /* The one spelling api_cursor_encode makes (no stray trailing bits). */
        char again[CURSOR_MAX_LEN + 4];
        char raw[CURSOR_MAX_LEN];
        size_t rawlen = n - CURSOR_MAC_BYTES;
        memcpy(raw, bin + CURSOR_MAC_BYTES, rawlen);
        raw[rawlen] = '\0';
        unsigned char mac[CURSOR_MAC_BYTES];
        if (memchr(raw, '\0', rawlen) || cursor_mac(raw, rawlen, mac) < 0 || memcmp(mac, bin, CURSOR_MAC_BYTES) != 0)
                return -1;
        size_t listlen = strlen(list);
        if (rawlen <= listlen + 1 || memcmp(raw, list, listlen) != 0 || raw[listlen] != ':')
                return -1;
        const char *p = raw + listlen + 1;
        int64_t ms = 0;
        int digits = 0;
        for (; *p >= '0' && *p <= '9' && digits < 18; p++, digits++)
                ms = ms * 10 + (*p - '0');
        if (!digits || *p != ':' || !p[1] || strlen(p + 1) >= id_size)
                return -1;
        for (const char *c = p + 1; *c; c++)
                if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
                        return -1;
        if (api_cursor_encode(list, ms, p + 1, again, sizeof(again)) < 0 || strcmp(again, token) != 0)
                return -1;
        *ret_ms = ms;
        snprintf(ret_id, id_size, "%s", p + 1);
        return 0;
}

int api_cursor_parse(const struct api_request *req, const char *list, struct api_page *ret, struct space_error *err)
{
        long long limit = API_PAGE_DEFAULT;
        if (api_request_query_int(req, "limit", 1, API_PAGE_MAX, &limit, err) < 0)
                return -1;
        struct api_page page = { .limit = (int)limit };
        page.store.limit = (int)limit + 1;
        const char *cursor = api_request_query(req, "cursor");
        if (cursor) {
                if (api_cursor_decode(list, cursor, &page.store.after_ms, page.after_id, sizeof(page.after_id)) < 0)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                               "cursor is not one this list gave out: pass next_cursor back unchanged");
        }
        *ret = page;
        /* after_id points into *ret, not into the local copy */
        ret->store.after_id = cursor ? ret->after_id : NULL;
        return 0;
}

size_t api_page_rows(const struct api_page *page, size_t n)
{
        return n > (size_t)page->limit ? (size_t)page->limit : n;
}

json_t *api_cursor_next(const struct api_page *page, const char *list, size_t n, int64_t last_ms, const char *last_id)
{
        char buf[CURSOR_MAX_LEN];
        if (n <= (size_t)page->limit || api_cursor_encode(list, last_ms, last_id, buf, sizeof(buf)) < 0)
                return json_null();
        return json_string(buf);
}
