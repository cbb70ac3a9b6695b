/* The fleet's routes (docs/fleet.md): GET /v1/nodes. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_render.h"
#include "api/api_routes.h"
#include "service/node_service.h"
#include "spaced/spaced_context.h"

static json_t *render_node(const struct node_record *n, const char *self)
{
        json_t *labels = json_loads(n->labels, 0, NULL);
        if (!json_is_object(labels)) {
                json_decref(labels);
                labels = json_object();
        }
        return json_pack("{s:s, s:s, s:I, s:o, s:s, s:o, s:o, s:b}", "id", n->id, "address", n->address, "capacity",
                         (json_int_t)n->capacity, "labels", labels, "state", n->state, "started_at",
                         api_render_time(n->started_at_ms), "heartbeat_at", api_render_time(n->heartbeat_at_ms), "this",
                         strcmp(n->id, self) == 0);
}

void route_node_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct node_record *all = NULL;
        size_t n = 0;
        if (node_service_list(req->ctx, &req->principal, &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(arr, render_node(&all[i], req->ctx->node_id));
        free(all);
        api_response_json(resp, 200, json_pack("{s:o}", "nodes", arr));
}
