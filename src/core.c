/*
 * core.c — contexts, validation, the registry's lock and the dispatch to channels.
 *
 * Every public call that changes what is live takes the context lock, updates the
 * registry, then calls each live channel's hook in a fixed order. A hook that fails gets
 * its channel reported once and switched off; the JIT's call still succeeds, because the
 * code itself is fine and the other tools still deserve to hear about it.
 *
 * With no channel live, jh_code_add only validates and hands out an id: no lock, no
 * allocation (bench/core.c measures it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const struct jh__channel_ops *const channel_table[JH__NCHAN] = {
    [JH__CH_AUDITLOG] = &jh__auditlog_ops, [JH__CH_UNWIND] = &jh__unwind_ops,
    [JH__CH_PERFMAP] = &jh__perfmap_ops,   [JH__CH_JITDUMP] = &jh__jitdump_ops,
    [JH__CH_GDB] = &jh__gdb_ops,           [JH__CH_ELFMAP] = &jh__elfmap_ops,
};

_Atomic unsigned jh__fork_gen;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static jh_ctx *all_ctx;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

const char *jh_version(void) { return JH_VERSION_STRING; }

/* ---- fork ----------------------------------------------------------------------------
 * Holding every context's lock across fork() means the child never inherits a lock taken
 * by a thread that does not exist there. The child only bumps a counter; its files are
 * reopened lazily on its first call, so fork+exec costs nothing. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&all_lock);
    for (jh_ctx *c = all_ctx; c; c = c->next_ctx)
        pthread_mutex_lock(&c->lock);
}

static void atfork_parent(void)
{
    for (jh_ctx *c = all_ctx; c; c = c->next_ctx)
        pthread_mutex_unlock(&c->lock);
    pthread_mutex_unlock(&all_lock);
}

static void atfork_child(void)
{
    jh__fork_gen++;
    atfork_parent();
}

static void install_atfork(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

/* ---- logging --------------------------------------------------------------------------- */
void jh__log(jh_ctx *ctx, int level, const char *fmt, ...)
{
    if (!ctx->log && !ctx->debug)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ctx->log) {
        ctx->log(ctx->log_arg, level, msg);
    } else {
        static const char *const names[] = { "error", "warning", "info", "debug" };
        fprintf(stderr, "jitherald[%d] %s: %s\n", (int)getpid(),
                names[level < 0 || level > 3 ? 0 : level], msg);
    }
}

/* A channel failed: say so once, close it, carry on without it. Lock held. */
static void channel_failed(jh_ctx *ctx, int i, const char *what, int err)
{
    jh__log(ctx, JH_LOG_ERROR, "%s: %s failed: %s; channel switched off, others carry on",
            ctx->chan[i].ops->name, what, jh_strerror(err));
    atomic_fetch_and(&ctx->live, ~ctx->chan[i].ops->bit);
    if (ctx->chan[i].ops->close)
        ctx->chan[i].ops->close(ctx->chan[i].state);
    ctx->chan[i].state = NULL;
}

static bool chan_live(const jh_ctx *ctx, int i)
{
    return atomic_load_explicit(&ctx->live, memory_order_relaxed) & channel_table[i]->bit;
}

/* In a fork child, before anything else: per-process files start afresh. Lock held. */
static void check_fork(jh_ctx *ctx)
{
    unsigned gen = atomic_load_explicit(&jh__fork_gen, memory_order_relaxed);
    if (ctx->fork_gen == gen)
        return;
    ctx->fork_gen = gen;
    for (int i = 0; i < JH__NCHAN; i++) {
        if (!chan_live(ctx, i) || !ctx->chan[i].ops->forked)
            continue;
        int err = ctx->chan[i].ops->forked(ctx->chan[i].state);
        if (err < 0)
            channel_failed(ctx, i, "restart after fork", err);
    }
}

static void lock(jh_ctx *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    check_fork(ctx);
}

static void unlock(jh_ctx *ctx) { pthread_mutex_unlock(&ctx->lock); }

/* ---- options and environment ------------------------------------------------------------ */
static int parse_channels(jh_ctx *ctx, const char *s, unsigned *out)
{
    unsigned bits = 0;
    while (*s) {
        size_t n = strcspn(s, ",: ");
        if (n == 3 && !strncmp(s, "all", 3)) {
            bits |= JH_ALL;
        } else if (n == 4 && !strncmp(s, "none", 4)) {
            bits = 0;
        } else if (n) {
            int found = 0;
            for (int i = 0; i < JH__NCHAN; i++) {
                const char *name = channel_table[i]->name;
                if (strlen(name) == n && !strncmp(s, name, n)) {
                    bits |= channel_table[i]->bit;
                    found = 1;
                }
            }
            if (!found)
                jh__log(ctx, JH_LOG_WARN, "JITHERALD: unknown channel '%.*s' ignored "
                        "(known: perfmap,jitdump,gdb,unwind,elfmap,auditlog,all,none)", (int)n, s);
        }
        s += n;
        s += strspn(s, ",: ");
    }
    *out = bits;
    return 0;
}

/* Accept a struct from an older caller (smaller sz) or a newer one whose extra bytes are
 * all zero — the libbpf rule. */
static bool tail_is_zero(const void *p, size_t known, size_t sz)
{
    const unsigned char *c = p;
    for (size_t i = known; i < sz; i++)
        if (c[i])
            return false;
    return true;
}

int jh__ctx_dir(jh_ctx *ctx, const char **dir)
{
    if (!ctx->dir_ready) {
        int err = jh__ensure_dir(ctx->dir);
        if (err < 0) {
            jh__log(ctx, JH_LOG_ERROR, "directory %s: %s", ctx->dir, jh_strerror(err));
            return err;
        }
        ctx->dir_ready = true;
    }
    *dir = ctx->dir;
    return 0;
}

void jh_close(jh_ctx *ctx);

int jh_open(jh_ctx **out, const struct jh_options *opts)
{
    struct jh_options o = { .sz = sizeof o };
    if (!out)
        return -EINVAL;
    *out = NULL;
    if (opts) {
        if (opts->sz < offsetof(struct jh_options, flags) || !tail_is_zero(opts, sizeof o, opts->sz))
            return -EINVAL;
        memcpy(&o, opts, opts->sz < sizeof o ? opts->sz : sizeof o);
    }
    if (o.channels & ~(unsigned)JH_ALL || o.flags & ~(unsigned)(JH_OPT_IGNORE_ENV | JH_OPT_STRICT))
        return -EINVAL;
    pthread_once(&atfork_once, install_atfork);

    jh_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return -ENOMEM;
    pthread_mutex_init(&ctx->lock, NULL);
    ctx->flags = o.flags;
    ctx->log = o.log;
    ctx->log_arg = o.log_arg;
    ctx->gdb_batch = o.gdb_batch;
    ctx->auditlog_limit = o.auditlog_limit ? o.auditlog_limit : 256u << 20;
    ctx->fork_gen = jh__fork_gen;
    atomic_init(&ctx->next_id, 1);
    const char *dbg = getenv("JITHERALD_DEBUG");
    ctx->debug = dbg && *dbg && strcmp(dbg, "0");

    unsigned channels = o.channels;
    const char *dir = o.dir;
    if (!(o.flags & JH_OPT_IGNORE_ENV)) {
        const char *env = getenv("JITHERALD");
        if (env && *env)
            parse_channels(ctx, env, &channels);
        const char *envdir = getenv("JITHERALD_DIR");
        if (envdir && *envdir)
            dir = envdir;
    }
    char defdir[64];
    if (!dir) {
        snprintf(defdir, sizeof defdir, "/tmp/jitherald-%u", (unsigned)geteuid());
        dir = defdir;
    }
    ctx->dir = strdup(dir);
    ctx->engine = strdup(o.engine && *o.engine ? o.engine : "jit");
    if (!ctx->dir || !ctx->engine) {
        jh_close(ctx);
        return -ENOMEM;
    }

    int strict_err = 0;
    for (int i = 0; i < JH__NCHAN; i++) {
        const struct jh__channel_ops *ops = channel_table[i];
        ctx->chan[i].ops = ops;
        if (!(channels & ops->bit))
            continue;
        int err = ops->open(ctx, &ctx->chan[i].state);
        if (err < 0) {
            jh__log(ctx, JH_LOG_ERROR, "%s: cannot start: %s; the other channels carry on",
                    ops->name, jh_strerror(err));
            ctx->chan[i].state = NULL;
            if (!strict_err)
                strict_err = err;
            continue;
        }
        atomic_fetch_or(&ctx->live, ops->bit);
    }
    if (strict_err && (o.flags & JH_OPT_STRICT)) {
        jh_close(ctx);
        return JH_ECHANNEL;
    }

    pthread_mutex_lock(&all_lock);
    ctx->next_ctx = all_ctx;
    all_ctx = ctx;
    pthread_mutex_unlock(&all_lock);
    *out = ctx;
    return 0;
}

unsigned jh_channels(const jh_ctx *ctx)
{
    return ctx ? atomic_load(&ctx->live) : 0;
}

/* ---- validation and copying ------------------------------------------------------------- */
static int validate(const struct jh_code *c)
{
    if (!c || c->sz < offsetof(struct jh_code, files) || !tail_is_zero(c, sizeof *c, c->sz))
        return -EINVAL;
    /* Fields a smaller (older) struct does not have read as zero. */
    if (!c->name || !c->name[0] || !c->start || c->size == 0 ||
        (uintptr_t)c->start + c->size - 1 < (uintptr_t)c->start)
        return -EINVAL;
    if (c->sz < sizeof *c)
        return 0;
    if (c->nfiles && !c->files)
        return -EINVAL;
    for (uint32_t i = 0; i < c->nfiles; i++)
        if (!c->files[i])
            return -EINVAL;
    if (c->nlines && !c->lines)
        return -EINVAL;
    for (uint32_t i = 0; i < c->nlines; i++) {
        const struct jh_line *l = &c->lines[i];
        if (l->offset >= c->size || l->file >= c->nfiles)
            return -EINVAL;
        if (i && l->offset < c->lines[i - 1].offset)
            return -EINVAL;
    }
    switch (c->unwind) {
    case JH_UNWIND_NONE:
        break;
    case JH_UNWIND_FRAME_POINTER:
        if (c->fp_push_end == 0 || c->fp_push_end > c->fp_set_end || c->fp_set_end > c->size)
            return -EINVAL;
        break;
    case JH_UNWIND_CFI:
        if (!c->cfi || c->cfi_len == 0 || c->cfi_len > (1u << 20))
            return -EINVAL;
        break;
    default:
        return -EINVAL;
    }
    return 0;
}

static void entry_free(struct jh__entry *e)
{
    if (!e)
        return;
    free(e->name);
    free(e->files);
    free(e->lines);
    free(e->cfi);
    free(e);
}

static struct jh__entry *entry_copy(jh_ctx *ctx, const struct jh_code *c)
{
    struct jh__entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->start = (uintptr_t)c->start;
    e->size = c->size;
    e->name = strdup(c->name);
    if (!e->name)
        goto fail;
    if (c->sz < sizeof *c)
        return e;
    e->unwind = c->unwind;
    e->fp_push_end = c->fp_push_end;
    e->fp_set_end = c->fp_set_end;
    if (c->nfiles) {
        e->files = malloc(c->nfiles * sizeof *e->files);
        if (!e->files)
            goto fail;
        for (uint32_t i = 0; i < c->nfiles; i++)
            if (!(e->files[i] = jh__intern(ctx, c->files[i])))
                goto fail;
        e->nfiles = c->nfiles;
    }
    if (c->nlines) {
        e->lines = malloc(c->nlines * sizeof *e->lines);
        if (!e->lines)
            goto fail;
        memcpy(e->lines, c->lines, c->nlines * sizeof *e->lines);
        e->nlines = c->nlines;
    }
    if (c->unwind == JH_UNWIND_CFI) {
        e->cfi = malloc(c->cfi_len);
        if (!e->cfi)
            goto fail;
        memcpy(e->cfi, c->cfi, c->cfi_len);
        e->cfi_len = c->cfi_len;
    }
    return e;
fail:
    entry_free(e);
    return NULL;
}

/* File names repeat across thousands of functions: keep one copy each. Lock held. */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
    return h;
}

const char *jh__intern(jh_ctx *ctx, const char *s)
{
    if (ctx->nstrings * 2 >= ctx->strings_cap) {
        size_t cap = ctx->strings_cap ? ctx->strings_cap * 2 : 64;
        char **t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < ctx->strings_cap; i++) {
            if (!ctx->strings[i])
                continue;
            size_t j = hash_str(ctx->strings[i]) & (cap - 1);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = ctx->strings[i];
        }
        free(ctx->strings);
        ctx->strings = t;
        ctx->strings_cap = cap;
    }
    size_t j = hash_str(s) & (ctx->strings_cap - 1);
    while (ctx->strings[j]) {
        if (!strcmp(ctx->strings[j], s))
            return ctx->strings[j];
        j = (j + 1) & (ctx->strings_cap - 1);
    }
    if (!(ctx->strings[j] = strdup(s)))
        return NULL;
    ctx->nstrings++;
    return ctx->strings[j];
}

/* ---- the calls ------------------------------------------------------------------------- */
int jh_code_add(jh_ctx *ctx, const struct jh_code *code, uint64_t *id)
{
    if (!ctx)
        return -EINVAL;
    int err = validate(code);
    if (err)
        return err;
    if (!atomic_load_explicit(&ctx->live, memory_order_relaxed)) {
        uint64_t n = atomic_fetch_add_explicit(&ctx->next_id, 1, memory_order_relaxed);
        if (id)
            *id = n;
        return 0;
    }
    lock(ctx);
    struct jh__entry *e = entry_copy(ctx, code);
    if (!e) {
        unlock(ctx);
        return -ENOMEM;
    }
    e->id = atomic_fetch_add_explicit(&ctx->next_id, 1, memory_order_relaxed);
    err = jh__reg_insert(&ctx->reg, e);
    if (!err)
        atomic_store_explicit(&ctx->stored, true, memory_order_release);
    if (err) {
        unlock(ctx);
        entry_free(e);
        return err;
    }
    for (int i = 0; i < JH__NCHAN; i++) {
        if (!chan_live(ctx, i) || !ctx->chan[i].ops->add)
            continue;
        int cerr = ctx->chan[i].ops->add(ctx->chan[i].state, e);
        if (cerr < 0)
            channel_failed(ctx, i, "announcing code", cerr);
    }
    if (id)
        *id = e->id;
    unlock(ctx);
    return 0;
}

/* Ids handed out while no channel was live were never stored: accept them silently. */
static int unknown_id(jh_ctx *ctx, uint64_t id)
{
    return id && id < atomic_load(&ctx->next_id) && !atomic_load(&ctx->stored) ? 0 : -ENOENT;
}

int jh_code_remove(jh_ctx *ctx, uint64_t id)
{
    if (!ctx)
        return -EINVAL;
    if (!atomic_load_explicit(&ctx->stored, memory_order_acquire))
        return id && id < atomic_load(&ctx->next_id) ? 0 : -ENOENT;
    lock(ctx);
    struct jh__entry *e = jh__reg_by_id(&ctx->reg, id);
    if (!e) {
        int err = unknown_id(ctx, id);
        unlock(ctx);
        return err;
    }
    for (int i = JH__NCHAN - 1; i >= 0; i--) {
        if (!chan_live(ctx, i) || !ctx->chan[i].ops->remove)
            continue;
        int cerr = ctx->chan[i].ops->remove(ctx->chan[i].state, e);
        if (cerr < 0)
            channel_failed(ctx, i, "removing code", cerr);
    }
    jh__reg_erase(&ctx->reg, e);
    unlock(ctx);
    entry_free(e);
    return 0;
}

int jh_code_move(jh_ctx *ctx, uint64_t id, const void *new_start)
{
    if (!ctx || !new_start)
        return -EINVAL;
    lock(ctx);
    struct jh__entry *e = jh__reg_by_id(&ctx->reg, id);
    if (!e) {
        int err = unknown_id(ctx, id);
        unlock(ctx);
        return err;
    }
    uintptr_t to = (uintptr_t)new_start, from = e->start;
    if (to + e->size - 1 < to) {
        unlock(ctx);
        return -EINVAL;
    }
    if (jh__reg_overlaps(&ctx->reg, to, e->size, e)) {
        unlock(ctx);
        return JH_EOVERLAP;
    }
    if (to != from) {
        jh__reg_rekey(&ctx->reg, e, to);
        for (int i = 0; i < JH__NCHAN; i++) {
            if (!chan_live(ctx, i) || !ctx->chan[i].ops->move)
                continue;
            int cerr = ctx->chan[i].ops->move(ctx->chan[i].state, e, from);
            if (cerr < 0)
                channel_failed(ctx, i, "moving code", cerr);
        }
    }
    unlock(ctx);
    return 0;
}

int jh_code_patched(jh_ctx *ctx, const void *addr, size_t len)
{
    if (!ctx || !addr || !len || (uintptr_t)addr + len - 1 < (uintptr_t)addr)
        return -EINVAL;
    if (!atomic_load_explicit(&ctx->live, memory_order_relaxed))
        return 0;
    lock(ctx);
    struct jh__entry *e = jh__reg_find(&ctx->reg, (uintptr_t)addr);
    if (!e || (uintptr_t)addr - e->start + len > e->size) {
        unlock(ctx);
        return -ENOENT;
    }
    for (int i = 0; i < JH__NCHAN; i++) {
        if (!chan_live(ctx, i) || !ctx->chan[i].ops->patched)
            continue;
        int cerr = ctx->chan[i].ops->patched(ctx->chan[i].state, e, (uintptr_t)addr, len);
        if (cerr < 0)
            channel_failed(ctx, i, "refreshing patched code", cerr);
    }
    unlock(ctx);
    return 0;
}

int jh_flush(jh_ctx *ctx)
{
    if (!ctx)
        return -EINVAL;
    if (!atomic_load_explicit(&ctx->live, memory_order_relaxed))
        return 0;
    lock(ctx);
    for (int i = 0; i < JH__NCHAN; i++) {
        if (!chan_live(ctx, i) || !ctx->chan[i].ops->flush)
            continue;
        int cerr = ctx->chan[i].ops->flush(ctx->chan[i].state);
        if (cerr < 0)
            channel_failed(ctx, i, "flushing", cerr);
    }
    unlock(ctx);
    return 0;
}

int jh_lookup(jh_ctx *ctx, const void *addr, uint64_t *id, const void **start, size_t *size,
              char *name, size_t name_len)
{
    if (!ctx || (name && !name_len))
        return -EINVAL;
    if (!atomic_load_explicit(&ctx->live, memory_order_relaxed))
        return -ENOENT;
    lock(ctx);
    struct jh__entry *e = jh__reg_find(&ctx->reg, (uintptr_t)addr);
    if (e) {
        if (id)
            *id = e->id;
        if (start)
            *start = (const void *)e->start;
        if (size)
            *size = e->size;
        if (name)
            snprintf(name, name_len, "%s", e->name);
    }
    unlock(ctx);
    return e ? 0 : -ENOENT;
}

int jh_log_memory(jh_ctx *ctx, const void *addr, size_t size, const char *type_hint)
{
    if (!ctx || (!addr && size))
        return -EINVAL;
    if (!chan_live(ctx, JH__CH_AUDITLOG))
        return 0;
    return jh__auditlog_memory(ctx->chan[JH__CH_AUDITLOG].state, addr, size, type_hint);
}

int jh_log_event(jh_ctx *ctx, const char *name, const struct jh_attr *attrs, size_t nattrs)
{
    if (!ctx || !name || (nattrs && !attrs))
        return -EINVAL;
    if (!chan_live(ctx, JH__CH_AUDITLOG))
        return 0;
    return jh__auditlog_event(ctx->chan[JH__CH_AUDITLOG].state, name, attrs, nattrs);
}

void jh_close(jh_ctx *ctx)
{
    if (!ctx)
        return;
    pthread_mutex_lock(&all_lock);
    for (jh_ctx **p = &all_ctx; *p; p = &(*p)->next_ctx) {
        if (*p == ctx) {
            *p = ctx->next_ctx;
            break;
        }
    }
    pthread_mutex_unlock(&all_lock);

    lock(ctx);
    /* Channels drop their registrations for everything still live, then close. */
    for (int i = JH__NCHAN - 1; i >= 0; i--) {
        if (!chan_live(ctx, i))
            continue;
        if (ctx->chan[i].ops->close)
            ctx->chan[i].ops->close(ctx->chan[i].state);
        ctx->chan[i].state = NULL;
    }
    atomic_store(&ctx->live, 0);
    while (ctx->reg.root) {
        struct jh__entry *e = ctx->reg.root;
        jh__reg_erase(&ctx->reg, e);
        entry_free(e);
    }
    jh__reg_fini(&ctx->reg);
    unlock(ctx);
    for (size_t i = 0; i < ctx->strings_cap; i++)
        free(ctx->strings ? ctx->strings[i] : NULL);
    free(ctx->strings);
    free(ctx->dir);
    free(ctx->engine);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

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
            const char *d = strerrordesc_np(-err);   /* static strings: thread-safe */
            if (d)
                return d;
        }
        return "unknown error";
    }
}
