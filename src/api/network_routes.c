/* A sandbox's egress after its create (GET and PUT /v1/sandboxes/{id}/network) and the
 * server's egress profiles (GET /v1/egress-profiles): docs/network.md. */
#include "api/api_render.h"
#include "api/api_routes.h"
#include "cleanup.h"
#include "service/sandbox_network_service.h"

void route_sandbox_network_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        if (api_load_sandbox(req, &sb, &err) < 0) {
                api_response_error(resp, &err);
                return;
        }
        api_response_json(resp, 200, api_render_network(&sb));
        sandbox_release(&sb);
}

void route_sandbox_network_put(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        _cleanup_json_ json_t *body = NULL;
        struct sandbox sb;
        if (api_request_json(req, &body, &err) < 0 ||
            sandbox_network_service_replace(req->ctx, &req->principal, req->segments[2], body, &sb, &err) < 0) {
                api_response_error(resp, &err);
                return;
        }
        api_response_json(resp, 200, api_render_network(&sb));
        sandbox_release(&sb);
}

void route_egress_profile_list(struct api_request *req, struct api_response *resp)
{
        const char *server_default;
        json_t *list = egress_profile_service_list_new(req->ctx, &server_default);
        if (!list) {
                struct space_error err = { 0 };
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                api_response_error(resp, &err);
                return;
        }
        api_response_json(resp, 200, json_pack("{s:o, s:s}", "profiles", list, "default", server_default));
}
