#include "egress/egress_map.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void egress_map_release(struct egress_map *m)
{
        for (size_t i = 0; m && i < m->n; i++) {
                egress_policy_release(&m->entries[i].policy);
                egress_credentials_release(&m->entries[i].credentials);
        }
        if (m) {
                free(m->entries);
                memset(m, 0, sizeof(*m));
        }
}

static struct egress_map_entry *find(const struct egress_map *m, uint32_t addr)
{
        for (size_t i = 0; i < m->n; i++)
                if (m->entries[i].addr == addr)
                        return &m->entries[i];
        return NULL;
}

const struct egress_map_entry *egress_map_find(const struct egress_map *m, uint32_t addr)
{
        return find(m, addr);
}

static void del(struct egress_map *m, uint32_t addr)
{
        struct egress_map_entry *e = find(m, addr);
        if (!e)
                return;
        egress_policy_release(&e->policy);
        egress_credentials_release(&e->credentials);
        *e = m->entries[--m->n];
}

int egress_map_apply(struct egress_map *m, const char *line, char *why, size_t why_size)
{
        json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
        const char *op = json_string_value(json_object_get(j, "op"));
        const char *addr_text = json_string_value(json_object_get(j, "addr"));
        struct in_addr in;
        int r = -EINVAL;
        if (!op) {
                snprintf(why, why_size, "not a control message");
                goto out;
        }
        if (strcmp(op, "clear") == 0) {
                egress_map_release(m);
                r = 0;
                goto out;
        }
        if (!addr_text || inet_pton(AF_INET, addr_text, &in) != 1) {
                snprintf(why, why_size, "op %s without a valid addr", op);
                goto out;
        }
        uint32_t addr = ntohl(in.s_addr);
        if (strcmp(op, "del") == 0) {
                del(m, addr);
                r = 0;
                goto out;
        }
        const char *sandbox = json_string_value(json_object_get(j, "sandbox"));
        struct egress_policy p;
        if (strcmp(op, "set") != 0 || !sandbox || strlen(sandbox) >= sizeof(m->entries[0].sandbox)) {
                snprintf(why, why_size, "unknown op or no sandbox");
                goto out;
        }
        struct egress_credentials creds;
        if ((r = egress_policy_from_json(json_object_get(j, "policy"), &p, why, why_size)) < 0)
                goto out;
        if ((r = egress_credentials_from_json(json_object_get(json_object_get(j, "policy"), "credentials"), &creds, why,
                                              why_size)) < 0) {
                egress_policy_release(&p);
                goto out;
        }
        struct egress_map_entry *e = find(m, addr);
        if (!e) {
                if (m->n == m->cap) {
                        size_t cap = m->cap ? m->cap * 2 : 16;
                        struct egress_map_entry *grown = realloc(m->entries, cap * sizeof(*grown));
                        if (!grown) {
                                egress_policy_release(&p);
                                egress_credentials_release(&creds);
                                r = -ENOMEM;
                                goto out;
                        }
                        m->entries = grown;
                        m->cap = cap;
                }
                e = &m->entries[m->n++];
        } else {
                egress_policy_release(&e->policy);
                egress_credentials_release(&e->credentials);
        }
        e->addr = addr;
        snprintf(e->sandbox, sizeof(e->sandbox), "%s", sandbox);
        e->policy = p;
        e->credentials = creds;
        r = 0;
out:
        json_decref(j);
        return r;
}
