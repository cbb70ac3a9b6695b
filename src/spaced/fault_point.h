/* fault_point: named places where a test can have spaced killed (SIGKILL, as kill -9 would),
 * to prove that a crash there loses nothing. Off unless the environment variable
 * SPACED_FAULT_KILL names the point: "NAME" or "NAME:DETAIL" (e.g.
 * "operation.after_handler:sandbox.stop"). For tests only; an operator never sets it. */
#pragma once

/* Kills the process if SPACED_FAULT_KILL is "name" or "name:detail". detail may be NULL. */
void fault_point(const char *name, const char *detail);
