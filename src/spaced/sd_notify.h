/* sd_notify: tells a service manager how spaced is doing, over the datagram socket it
 * names in $NOTIFY_SOCKET (systemd's Type=notify protocol; a name starting with '@' is
 * in the abstract namespace). Without $NOTIFY_SOCKET it does nothing. */
#pragma once

/* Sends state ("READY=1", "STOPPING=1", "RELOADING=1\nMONOTONIC_USEC=…", "STATUS=…").
 * 0, 0 without a socket, or -errno. */
int sd_notify_send(const char *state);
