/* strerror.c — jh_strerror: the API's errors in words. Diagnostics about files use
 * jh__file_error (base/files.h), worded about files. */
#include <errno.h>
#include <string.h>

#include "base/os.h"
#include "jitherald.h"

const char *jh_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case JH_EOVERLAP: return "code range overlaps code that is still registered";
    case JH_ECHANNEL: return "a requested channel could not start";
    case JH_EFORMAT: return "malformed file";
    case -EINVAL: return "invalid argument";
    case -ENOENT: return "no such code registered";
    case -ENOMEM: return "out of memory";
    case -ENOSYS: return "not implemented";
    case -EPERM: return "refused: not a regular file of ours (other owner, or several links)";
    case -ELOOP: return "refused: the path is a symbolic link";
    case -ENOSPC: return "no space left on device";
    case -EACCES: return "permission denied";
    case -ENOTDIR: return "not a directory";
    case -EBUSY: return "busy";
    case -EIO: return "input/output error";
    case -EEXIST: return "already exists";
    case -EROFS: return "read-only file system";
    default:
        if (err < 0 && err > -4096) {
            const char *d = jh__errno_desc(-err);
            if (d)
                return d;
        }
        return "unknown error";
    }
}
