#include "runtime/namespaces/ns_agent_image.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U /* Linux 6.3: executable even where vm.memfd_noexec asks otherwise */
#endif

static int memfd_for_exec(void)
{
        int fd = memfd_create("space-agent", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
        if (fd < 0 && errno == EINVAL) /* kernels before 6.3 do not know MFD_EXEC */
                fd = memfd_create("space-agent", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        return fd < 0 ? -errno : fd;
}

int ns_agent_image_open(const char *path)
{
        _cleanup_close_ int src = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (src < 0)
                return -errno;
        struct stat st;
        if (fstat(src, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_size <= 0)
                return -ENOEXEC;
        _cleanup_close_ int fd = memfd_for_exec();
        if (fd < 0)
                return fd;
        off_t off = 0;
        while (off < st.st_size) {
                ssize_t n = sendfile(fd, src, &off, (size_t)(st.st_size - off));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO; /* the file shrank under us */
        }
        if (fchmod(fd, 0555) < 0)
                return -errno;
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
                return -errno;
        return TAKE_FD(fd);
}
