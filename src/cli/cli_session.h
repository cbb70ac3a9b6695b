/* cli_session: an attach session of one sandbox (POST /v1/sandboxes/{id}/sessions), opened
 * with the API key for the data-plane routes (commands, files) and revoked when done. Its
 * attach token stands in for the key in `data`: requests through it use the token. */
#pragma once

#include "cli/cli.h"

struct cli_session {
        struct cli *control; /* the API-key side, borrowed: opens and revokes the session */
        char sandbox_id[64];
        char *session_id;
        struct cli data; /* the control's settings, key_flag = the attach token */
};

/* Prints why on stderr when it fails. ttl_s: how long the token lasts. */
int cli_session_open(struct cli *control, const char *sandbox_id, long ttl_s, struct cli_session *ret);
/* Revokes the session (best effort: it expires on its own) and wipes the token. */
void cli_session_close(struct cli_session *s);
/* Settings for another thread: the token, its own client (made on first use). Release with
 * cli_session_done. */
void cli_session_clone(const struct cli_session *s, struct cli *ret);
void cli_session_done(struct cli *c);
