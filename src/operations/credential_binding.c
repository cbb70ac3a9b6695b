#include "operations/credential_binding.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "auth/secret_keyring.h"
#include "cleanup.h"
#include "egress/egress_rule.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

static bool token_valid(const char *s, size_t max)
{
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)s[i]) && !strchr("!#$%&'*+-.^_`|~", s[i]))
                        return false;
        return true;
}

static json_t *invalid(struct space_error *err, const char *what)
{
        space_error_set(err, SPACE_E_INVALID_REQUEST, "%s", what);
        return NULL;
}

json_t *credential_binding_spec_new(const json_t *body, struct space_error *err)
{
        static const char *const known[] = { "secret",   "destination", "port",       "header",     "format",
                                             "template", "methods",     "sandbox_id", "grant_only", NULL };
        if (!json_is_object(body))
                return invalid(err, "the body is a binding object");
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)body, key, v)
        {
                bool ok = false;
                for (int i = 0; known[i] && !ok; i++)
                        ok = strcmp(key, known[i]) == 0;
                if (!ok) {
                        space_error_set(err, SPACE_E_INVALID_REQUEST, "unknown field %s", key);
                        return NULL;
                }
        }
        const char *dest = json_string_value(json_object_get(body, "destination"));
        struct egress_rule rule;
        char why[200];
        if (!dest || strchr(dest, ':') || egress_rule_parse(dest, EGRESS_ALLOW, &rule, why, sizeof(why)) < 0 ||
            rule.kind == EGRESS_RULE_CIDR)
                return invalid(err, "destination: a host name, exact or *.domain (the port goes in port)");
        const json_t *port = json_object_get(body, "port");
        if (port && (!json_is_integer(port) || json_integer_value(port) < 1 || json_integer_value(port) > 65535))
                return invalid(err, "port: 1 to 65535");
        const json_t *hv = json_object_get(body, "header");
        const char *header = hv ? json_string_value(hv) : "Authorization";
        if (!token_valid(header, 64))
                return invalid(err, "header: a header name (letters, digits and -, up to 64)");
        const json_t *fv = json_object_get(body, "format");
        const char *format = fv ? json_string_value(fv) : "bearer";
        if (!format || (strcmp(format, "bearer") != 0 && strcmp(format, "basic") != 0 && strcmp(format, "custom") != 0))
                return invalid(err, "format: bearer, basic or custom");
        const json_t *tv = json_object_get(body, "template");
        const char *template = json_string_value(tv);
        if (strcmp(format, "custom") == 0) {
                const char *at = template ? strstr(template, "{secret}") : NULL;
                if (!at || strstr(at + 1, "{secret}") || strlen(template) > 512 || strpbrk(template, "\r\n"))
                        return invalid(err, "template: up to 512 characters with {secret} once, no CR or LF");
        } else if (tv) {
                return invalid(err, "template: only with format custom");
        }
        const json_t *methods = json_object_get(body, "methods");
        if (methods && (!json_is_array(methods) || json_array_size(methods) == 0 || json_array_size(methods) > 16))
                return invalid(err, "methods: a list of 1 to 16 HTTP methods");
        size_t i;
        json_array_foreach(methods, i, v)
        {
                const char *m = json_string_value(v);
                bool upper = m != NULL;
                for (size_t k = 0; m && m[k]; k++)
                        upper = upper && isupper((unsigned char)m[k]);
                if (!upper || !token_valid(m, 16))
                        return invalid(err, "methods: upper-case HTTP method names (GET, POST, …)");
        }
        json_t *spec = json_pack("{s:s, s:s, s:s}", "destination", dest, "header", header, "format", format);
        if (spec && port)
                json_object_set(spec, "port", (json_t *)port);
        if (spec && template)
                json_object_set_new(spec, "template", json_string(template));
        if (spec && methods)
                json_object_set(spec, "methods", (json_t *)methods);
        const json_t *grant_only = json_object_get(body, "grant_only");
        if (grant_only && !json_is_boolean(grant_only)) {
                json_decref(spec);
                return invalid(err, "grant_only: true or false");
        }
        if (spec && json_is_true(grant_only))
                json_object_set_new(spec, "grant_only", json_true());
        if (!spec)
                space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        return spec;
}

char *credential_binding_header_value(const json_t *spec, const char *v)
{
        const char *format = json_string_value(json_object_get(spec, "format"));
        size_t len = strlen(v);
        if (format && strcmp(format, "basic") == 0) {
                size_t b64 = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
                char *out = malloc(6 + b64);
                if (!out)
                        return NULL;
                memcpy(out, "Basic ", 6);
                sodium_bin2base64(out + 6, b64, (const unsigned char *)v, len, sodium_base64_VARIANT_ORIGINAL);
                return out;
        }
        if (format && strcmp(format, "custom") == 0) {
                const char *t = json_string_value(json_object_get(spec, "template"));
                const char *at = t ? strstr(t, "{secret}") : NULL;
                if (!at)
                        return NULL;
                size_t pre = (size_t)(at - t), post = strlen(at + 8);
                char *out = malloc(pre + len + post + 1);
                if (!out)
                        return NULL;
                memcpy(out, t, pre);
                memcpy(out + pre, v, len);
                memcpy(out + pre + len, at + 8, post + 1);
                return out;
        }
        char *out = malloc(7 + len + 1);
        if (!out)
                return NULL;
        memcpy(out, "Bearer ", 7);
        memcpy(out + 7, v, len + 1);
        return out;
}

/* One gateway entry for b, or NULL (logged) when its secret is gone or does not open. */
static json_t *gateway_entry(struct spaced_context *ctx, const struct sandbox *sb, const struct binding_record *b,
                             const char *data_key)
{
        struct secret_record s = { 0 };
        int r = STORE(ctx, secret_get, b->project_id, b->secret_name, &s);
        _cleanup_erase_ char *plain = NULL, *value = NULL;
        size_t len = 0;
        if (r == 0 && (!data_key || !s.sealed))
                r = -ENOENT;
        if (r == 0)
                r = secret_keyring_unseal(ctx->keyring, data_key, b->project_id, b->secret_name, s.sealed, &plain, &len);
        secret_record_release(&s);
        if (r == 0 && !(value = credential_binding_header_value(b->spec, plain)))
                r = -ENOMEM;
        if (r < 0) {
                log_warn("secret.binding_skipped", "sandbox=%s binding=%s secret=%s error=\"%s\"", sb->id, b->id, b->secret_name,
                         r == -ENOENT ? "no such secret" : strerror(-r));
                return NULL;
        }
        char match[300];
        const json_t *port = json_object_get(b->spec, "port");
        if (port)
                snprintf(match, sizeof(match), "%s:%lld", json_string_value(json_object_get(b->spec, "destination")),
                         (long long)json_integer_value(port));
        else
                snprintf(match, sizeof(match), "%s", json_string_value(json_object_get(b->spec, "destination")));
        json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s}", "binding", b->id, "secret", b->secret_name, "match", match, "header",
                              json_string_value(json_object_get(b->spec, "header")) ?: "Authorization", "value", value);
        if (e && json_object_get(b->spec, "methods"))
                json_object_set(e, "methods", json_object_get(b->spec, "methods"));
        const json_t *grant = json_object_get(b->spec, "grant");
        if (e && grant) /* the gateway ends it at its deadline itself */
                json_object_set(e, "expires_at_ms", json_object_get(grant, "expires_at_ms"));
        return e;
}

json_t *credential_binding_gateway_new(struct spaced_context *ctx, const struct sandbox *sb)
{
        struct binding_record *all = NULL;
        size_t n = 0;
        if (STORE(ctx, binding_list, sb->project_id, sb->id, &all, &n) < 0)
                return NULL;
        json_t *arr = json_array();
        /* The project's data key; a real candidate, so that a project without one yet (then
         * also without secrets) gets one as a secret create would make it. */
        _cleanup_free_ char *candidate = NULL, *data_key = NULL;
        if (n && ctx->keyring && secret_keyring_new_data_key(ctx->keyring, sb->project_id, &candidate) == 0)
                (void)STORE(ctx, secret_data_key, sb->project_id, candidate, &data_key);
        int64_t now = wallclock_now_ms();
        for (size_t i = 0; arr && i < n && ctx->keyring; i++) {
                /* a grant-only binding acts through its grants; an expired grant not at all */
                const json_t *grant = json_object_get(all[i].spec, "grant");
                if (json_is_true(json_object_get(all[i].spec, "grant_only")) ||
                    (grant && json_integer_value(json_object_get(grant, "expires_at_ms")) <= now))
                        continue;
                json_t *e = gateway_entry(ctx, sb, &all[i], data_key);
                if (e)
                        json_array_append_new(arr, e);
        }
        binding_record_array_free(all, n);
        return arr;
}

void credential_binding_placeholders(struct spaced_context *ctx, const char *project_id, const char *sandbox_id, json_t *env)
{
        struct binding_record *all = NULL;
        size_t n = 0;
        if (!json_is_object(env) || STORE(ctx, binding_list, project_id, sandbox_id[0] ? sandbox_id : NULL, &all, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                if (!sandbox_id[0] && all[i].sandbox_id[0])
                        continue;
                char name[96], value[96];
                snprintf(name, sizeof(name), "SPACE_SECRET_%s", all[i].secret_name);
                snprintf(value, sizeof(value), "space-placeholder-%s", all[i].secret_name);
                for (char *c = value + 18; *c; c++)
                        *c = (char)tolower((unsigned char)*c);
                if (!json_object_get(env, name))
                        json_object_set_new(env, name, json_string(value));
        }
        binding_record_array_free(all, n);
}
