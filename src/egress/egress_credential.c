#include "egress/egress_credential.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spaced/wallclock.h"

static void copy(char *dst, size_t size, const char *src)
{
        snprintf(dst, size, "%s", src ? src : "");
}

int egress_credentials_from_json(const json_t *list, struct egress_credentials *ret, char *why, size_t why_size)
{
        struct egress_credentials c = { 0 };
        if (!list || json_is_null(list)) {
                *ret = c;
                return 0;
        }
        if (!json_is_array(list) || json_array_size(list) > EGRESS_CREDENTIALS_MAX) {
                snprintf(why, why_size, "credentials: a list of at most %d", EGRESS_CREDENTIALS_MAX);
                return -EINVAL;
        }
        c.items = calloc(json_array_size(list) + 1, sizeof(*c.items));
        if (!c.items)
                return -ENOMEM;
        size_t i, total = 0;
        const json_t *e;
        json_array_foreach(list, i, e)
        {
                struct egress_credential *cr = &c.items[c.n];
                const char *match = json_string_value(json_object_get(e, "match"));
                const char *header = json_string_value(json_object_get(e, "header"));
                const json_t *value = json_object_get(e, "value");
                const json_t *methods = json_object_get(e, "methods");
                if (!match || egress_rule_parse(match, EGRESS_ALLOW, &cr->match, why, why_size) < 0 ||
                    cr->match.kind == EGRESS_RULE_CIDR || !header || !header[0] || strlen(header) >= sizeof(cr->header) ||
                    strpbrk(header, ": \r\n") || !json_is_string(value) || strpbrk(json_string_value(value), "\r\n") ||
                    (methods && (!json_is_array(methods) || json_array_size(methods) > 16))) {
                        snprintf(why, why_size, "credentials[%zu]: match, header and value are needed", i);
                        egress_credentials_release(&c);
                        return -EINVAL;
                }
                copy(cr->binding, sizeof(cr->binding), json_string_value(json_object_get(e, "binding")));
                copy(cr->secret, sizeof(cr->secret), json_string_value(json_object_get(e, "secret")));
                copy(cr->header, sizeof(cr->header), header);
                cr->expires_at_ms = (int64_t)json_integer_value(json_object_get(e, "expires_at_ms"));
                cr->value_len = json_string_length(value);
                cr->value = malloc(cr->value_len + 1);
                if (!cr->value) {
                        egress_credentials_release(&c);
                        return -ENOMEM;
                }
                memcpy(cr->value, json_string_value(value), cr->value_len + 1);
                size_t k;
                const json_t *m;
                json_array_foreach(methods, k, m)
                        copy(cr->methods[cr->n_methods++], sizeof(cr->methods[0]), json_string_value(m));
                total += cr->value_len + strlen(cr->header) + 4;
                c.n++;
        }
        if (total > EGRESS_CREDENTIALS_BYTES_MAX) { /* a head and them always fit one buffer of a connection */
                snprintf(why, why_size, "credentials: more than %d bytes of headers", EGRESS_CREDENTIALS_BYTES_MAX);
                egress_credentials_release(&c);
                return -EINVAL;
        }
        *ret = c;
        return 0;
}

void egress_credentials_release(struct egress_credentials *c)
{
        for (size_t i = 0; c && i < c->n; i++) {
                if (c->items[i].value)
                        explicit_bzero(c->items[i].value, c->items[i].value_len);
                free(c->items[i].value);
        }
        if (c) {
                free(c->items);
                c->items = NULL;
                c->n = 0;
        }
}

bool egress_credentials_any_for(const struct egress_credentials *c, const char *name, uint16_t port)
{
        for (size_t i = 0; name && i < c->n; i++)
                if (egress_rule_matches_name(&c->items[i].match, name, port))
                        return true;
        return false;
}

bool egress_credential_for_method(const struct egress_credential *cr, const char *method)
{
        if (cr->expires_at_ms && wallclock_now_ms() >= cr->expires_at_ms)
                return false;
        if (!cr->n_methods)
                return true;
        for (size_t i = 0; i < cr->n_methods; i++)
                if (strcmp(cr->methods[i], method) == 0)
                        return true;
        return false;
}
