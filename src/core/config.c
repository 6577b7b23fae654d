/* config.c — see config.h. */
#include "core/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/chanlist.h"
#include "base/files.h"

#define GDB_DEFAULT_BATCH 1024
#define GDB_MAX_BATCH 16384     /* an image may hold up to 2 * batch functions, each maybe its
                                   own .text section: stay below ELF's 65,280 sections */
#define AUDITLOG_DEFAULT_LIMIT ((uint64_t)256 << 20)


bool jh__tail_is_zero(const void *p, size_t known, size_t sz)
{
    const unsigned char *c = p;
    for (size_t i = known; i < sz; i++)
        if (c[i])
            return false;
    return true;
}

struct parsed {
    const struct jh__diag *diag;
    bool standby;
};

static void unknown_channel(void *arg, const char *name, size_t n)
{
    struct parsed *p = arg;
    if (n == 7 && !strncmp(name, "standby", 7)) {
        p->standby = true;
        return;
    }
    char known[128];
    jh__channel_names(jh__channels_all(), ",", known, sizeof known);
    jh__diag(p->diag, JH_LOG_ERROR, "JITHERALD: unknown channel '%.*s' ignored (known: "
             "%s,all,none,standby)", (int)n, name, known);
}

/* $JITHERALD: the channels, and whether it says standby. */
static unsigned parse_channels(const struct jh__diag *d, const char *s, bool *standby)
{
    struct parsed p = { d, false };
    unsigned bits = jh__channels_parse(s, jh__channels_all(), unknown_channel, &p);
    *standby = p.standby;
    return bits;
}

static const char *env(const struct jh__config *c, const char *name)
{
    if (c->flags & JH_OPT_IGNORE_ENV)
        return NULL;
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A decimal number from the environment, or dflt (said once when malformed). */
static unsigned long long env_num(const struct jh__config *c, const char *name,
                                  unsigned long long dflt, unsigned long long max)
{
    const char *v = env(c, name);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || errno || n > max || *v == '-') {
        jh__diag(&c->diag, JH_LOG_WARN, "%s=%s is not a number from 0 to %llu: ignored",
                 name, v, max);
        return dflt;
    }
    return n;
}

/* jh_open refused its options: -EINVAL, and which field and why, at info (the return
 * value says it failed): to the JIT's callback when the caller's struct reaches it, else
 * to stderr with JITHERALD_DEBUG=1. No context exists yet. */
static int refused(const struct jh_options *opts, const char *fmt, ...)
    __attribute__((format(JH__PRINTF, 2, 3)));
static int refused(const struct jh_options *opts, const char *fmt, ...)
{
    struct jh__diag d = { .stderr_level = jh__diag_stderr_level(getenv("JITHERALD_DEBUG")) };
    if (opts->sz >= offsetof(struct jh_options, log_arg) + sizeof opts->log_arg) {
        d.fn = opts->log;
        d.arg = opts->log_arg;
    }
    char why[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    jh__diag(&d, JH_LOG_INFO, "jh_open: -EINVAL: %s", why);
    return -EINVAL;
}

int jh__config_load(struct jh__config *c, const struct jh_options *opts)
{
    struct jh_options o = { .sz = sizeof o };
    memset(c, 0, sizeof *c);
    if (opts) {
        if (opts->sz < offsetof(struct jh_options, flags))
            return refused(opts, "jh_options.sz is %zu, less than the %zu bytes up to .flags: "
                           "set .sz = sizeof(struct jh_options)", opts->sz,
                           offsetof(struct jh_options, flags));
        if (!jh__tail_is_zero(opts, sizeof o, opts->sz))
            return refused(opts, "jh_options.sz is %zu, more than this library's %zu, and the "
                           "bytes past %zu are not zero: fields of a newer header this library "
                           "does not know", opts->sz, sizeof o, sizeof o);
        memcpy(&o, opts, opts->sz < sizeof o ? opts->sz : sizeof o);
        o.sz = sizeof o;        /* fields past the caller's struct read as zero */
        if (opts->sz < sizeof o)
            memset((char *)&o + opts->sz, 0, sizeof o - opts->sz);
    }
    if (o.channels & ~(unsigned)JH_ALL)
        return refused(opts, "jh_options.channels %#x has bits no channel has (JH_ALL is %#x)",
                       o.channels, (unsigned)JH_ALL);
    const unsigned known = JH_OPT_IGNORE_ENV | JH_OPT_STRICT | JH_OPT_CODE_BTI | JH_OPT_STANDBY |
                           JH_OPT_CODE_RWX;
    if (o.flags & ~known)
        return refused(opts, "jh_options.flags %#x has bits that are not JH_OPT_* flags "
                       "(JH_OPT_IGNORE_ENV | JH_OPT_STRICT | JH_OPT_CODE_BTI | JH_OPT_STANDBY | JH_OPT_CODE_RWX "
                       "is %#x)", o.flags, known);
    c->flags = o.flags;
    c->elfmap.code_bti = o.flags & JH_OPT_CODE_BTI;
    c->elfmap.code_rwx = o.flags & JH_OPT_CODE_RWX;
    c->channels = o.channels;
    c->standby = o.flags & JH_OPT_STANDBY;
    c->attach_mask = o.attach_channels ? o.attach_channels & (unsigned)JH_ALL : (unsigned)JH_ALL;
    /* One rule for every channel (diag.h): without a log callback, what the user must act
     * on reaches stderr, said once per cause; JITHERALD_DEBUG=1 adds the rest. */
    c->diag = (struct jh__diag){ .fn = o.log, .arg = o.log_arg,
                                 .stderr_level = jh__diag_stderr_level(getenv("JITHERALD_DEBUG")) };

    const char *chan = env(c, "JITHERALD");
    if (chan)
        c->channels = parse_channels(&c->diag, chan, &c->standby);
    char defdir[64];
    const char *dir = env(c, "JITHERALD_DIR");
    if (!dir)
        dir = o.dir;
    if (!dir) {
        jh__default_dir(defdir, sizeof defdir);
        dir = defdir;
    }
    c->dir = strdup(dir);
    c->engine = strdup(o.engine && *o.engine ? o.engine : "jit");

    uint32_t batch = o.gdb_batch & ~(uint32_t)JH_GDB_DEFER;
    batch = (uint32_t)env_num(c, "JITHERALD_GDB_BATCH", batch, UINT32_MAX);
    c->gdb.batch = !batch ? GDB_DEFAULT_BATCH : batch > GDB_MAX_BATCH ? GDB_MAX_BATCH : batch;
    c->gdb.defer = env_num(c, "JITHERALD_GDB_DEFER", (o.gdb_batch & JH_GDB_DEFER) != 0, 1);
    c->auditlog.limit = o.auditlog_limit ? o.auditlog_limit : AUDITLOG_DEFAULT_LIMIT;
    c->auditlog.ahead = env_num(c, "JITHERALD_AUDITLOG_HELPER", 1, 1);
    c->auditlog.refs = env_num(c, "JITHERALD_AUDITLOG_REFS", 1, 1);
    c->elfmap.freeze = env_num(c, "JITHERALD_ELFMAP_FREEZE", 0, 1);

    if (!c->dir || !c->engine) {
        jh__config_free(c);
        return -ENOMEM;
    }
    return 0;
}

void jh__config_free(struct jh__config *c)
{
    free(c->dir);
    free(c->engine);
    c->dir = c->engine = NULL;
}
