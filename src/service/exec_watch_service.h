/* exec_watch_service: the decisions on a watched command's execs (data_plane/
 * exec_watch_hooks.h), made with the same policy evaluation as the command itself
 * (policy_gate_command), each denial an audit row command.exec_denied. */
#pragma once

struct exec_watch_hooks;

extern const struct exec_watch_hooks exec_watch_service_hooks;
