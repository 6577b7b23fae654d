/*
 * cmd_attach.c — `jitherald attach PID [-c CH | --on CH | --off CH]`: switch channels on
 * and off in a running JIT process, or say what is on. The process listens on
 * <dir>/attach-PID.sock (src/core/control.c): dir is the JITHERALD_DIR in its environment,
 * else /tmp/jitherald-UID for the process's user. Only its owner or root gets an answer.
 *
 *     $ jitherald attach 4242 -c gdb,elfmap
 *     context engine=minijit live=gdb,elfmap retained=3012
 *     ok
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/chanlist.h"
#include "cli.h"

#define USAGE "usage: jitherald attach PID [-c CHANNELS | --on CHANNELS | --off CHANNELS]"

static int help(void)
{
    printf(USAGE "\n"
           "  Switches channels on and off in a running JIT process that uses jitherald\n"
           "  in standby (JITHERALD=standby, or standby,gdb..., or the JIT's JH_OPT_STANDBY):\n"
           "  every function compiled so far is announced to a channel switched on, as if\n"
           "  it had been on from the start. With no option, says what is on.\n"
           "  -c, --channels=CHANNELS  exactly these channels (none: back to standby)\n"
           "  --on=CHANNELS            these too\n"
           "  --off=CHANNELS           not these (their pages, images and registrations\n"
           "                           are given back; the process runs on)\n"
           "Only the process's owner or root may switch channels. docs/attach.md.\n"
           "Exit status: 0 done; 1 the process refused or a channel could not start;\n"
           "2 usage error, or the process cannot be reached.\n");
    return 0;
}

/* The socket's directory: JITHERALD_DIR from the process's environment, else the default
 * directory of the process's user. */
static int socket_path(long pid, char *out, size_t n)
{
    char p[64], env[65536];
    snprintf(p, sizeof p, "/proc/%ld/environ", pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t len = fd >= 0 ? read(fd, env, sizeof env - 1) : -1;
    if (fd >= 0)
        close(fd);
    const char *dir = NULL;
    for (ssize_t i = 0; len > 0 && i < len; i += (ssize_t)strlen(env + i) + 1) {
        env[len] = 0;
        if (!strncmp(env + i, "JITHERALD_DIR=", 14) && env[i + 14])
            dir = env + i + 14;
    }
    char d[64];
    if (!dir) {
        snprintf(p, sizeof p, "/proc/%ld/status", pid);
        FILE *f = fopen(p, "r");
        if (!f)
            return -errno;
        char line[256];
        unsigned uid = 0;
        bool found = false;
        while (!found && fgets(line, sizeof line, f))
            found = sscanf(line, "Uid: %*u %u", &uid) == 1;
        fclose(f);
        if (!found)
            return -ESRCH;
        snprintf(d, sizeof d, "/tmp/jitherald-%u", uid);
        dir = d;
    }
    return snprintf(out, n, "%s/attach-%ld.sock", dir, pid) < (int)n ? 0 : -ENAMETOOLONG;
}

static bool channels_ok(const char *s)
{
    bool ok = true;
    for (const char *p = s; *p;) {
        size_t k = strcspn(p, ",: ");
        if (k && !jh__channel_bit(p, k) && !(k == 3 && !strncmp(p, "all", 3)) &&
            !(k == 4 && !strncmp(p, "none", 4))) {
            fprintf(stderr, "jitherald attach: unknown channel '%.*s'\n", (int)k, p);
            ok = false;
        }
        p += k;
        p += strspn(p, ",: ");
    }
    return ok;
}

int jhc_cmd_attach(int argc, char **argv)
{
    const char *verb = "status", *chan = "";
    const char *pid_s = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return help();
        const char *opts[][2] = { { "-c", "set" }, { "--channels", "set" }, { "--on", "on" },
                                  { "--off", "off" } };
        bool matched = false;
        for (size_t k = 0; k < sizeof opts / sizeof *opts && !matched; k++) {
            size_t l = strlen(opts[k][0]);
            if (!strcmp(a, opts[k][0])) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "jitherald attach: %s needs CHANNELS\n", a);
                    return jhc_usage_error("attach", USAGE);
                }
                v = argv[++i];
            } else if (!strncmp(a, opts[k][0], l) && a[l] == '=') {
                v = a + l + 1;
            } else {
                continue;
            }
            matched = true;
            if (strcmp(verb, "status")) {
                fprintf(stderr, "jitherald attach: one of -c, --on, --off at a time\n");
                return jhc_usage_error("attach", USAGE);
            }
            verb = opts[k][1];
            chan = v;
        }
        if (matched)
            continue;
        if (a[0] == '-' || pid_s) {
            fprintf(stderr, "jitherald attach: unexpected argument '%s'\n", a);
            return jhc_usage_error("attach", USAGE);
        }
        pid_s = a;
    }
    char *end;
    long pid = pid_s ? strtol(pid_s, &end, 10) : 0;
    if (!pid_s || *end || pid <= 0) {
        fprintf(stderr, "jitherald attach: PID must be a process id\n");
        return jhc_usage_error("attach", USAGE);
    }
    if (!channels_ok(chan))
        return jhc_usage_error("attach", USAGE);
    if (strcmp(verb, "status") && strcmp(verb, "set") && !*chan) {
        fprintf(stderr, "jitherald attach: --%s needs CHANNELS\n", verb);
        return jhc_usage_error("attach", USAGE);
    }
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int err = socket_path(pid, a.sun_path, sizeof a.sun_path);
    if (err) {
        fprintf(stderr, "jitherald attach: process %ld: %s\n", pid, strerror(-err));
        return 2;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        fprintf(stderr, "jitherald attach: cannot reach process %ld at %s: %s\n(is it using "
                "jitherald in standby, JITHERALD=standby, as your user?)\n",
                pid, a.sun_path, strerror(e));
        if (fd >= 0)
            close(fd);
        return 2;
    }
    char req[1024];
    snprintf(req, sizeof req, "%s%s%s\n", verb, *chan || !strcmp(verb, "set") ? " " : "", chan);
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        fprintf(stderr, "jitherald attach: process %ld: %s\n", pid, strerror(errno));
        close(fd);
        return 2;
    }
    shutdown(fd, SHUT_WR);
    char buf[8192];
    size_t n = 0;
    for (ssize_t k; n < sizeof buf - 1 && (k = read(fd, buf + n, sizeof buf - 1 - n)) > 0;)
        n += (size_t)k;
    close(fd);
    buf[n] = 0;
    fputs(buf, stdout);
    if (!n)
        fprintf(stderr, "jitherald attach: process %ld closed the connection unanswered\n", pid);
    return strstr(buf, "\nok\n") || !strncmp(buf, "ok\n", 3) ? 0 : 1;
}
