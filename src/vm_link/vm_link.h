/* space-vmlink: the two ends of a microvm's agent channel (docs/runtimes.md). */
#pragma once

/* The guest's PID 1 on the virtio-serial port at port_path; returns only on failure. */
int vm_link_guest_main(const char *port_path);
/* The host supervisor of one VM (vm_link_host.c); returns only on failure. */
int vm_link_host_main(const char *run_dir, char **vmm_argv);
