/*
 * test_auditlog_ref.c — code that lies, byte for byte, in a loaded object's file (V8's
 * builtins in node's text; here functions of this test's own executable) is recorded by
 * reference (code_file, code_build_id, code_offset) and the reader gets its bytes back
 * from the file; code patched in place after it was added gets its patch over them; code
 * modified before it was added, and JIT code in anonymous memory, are copied; a file whose
 * build-id is not the log's is said, with both ids, and never read; JITHERALD_AUDITLOG_REFS=0
 * copies everything. With JH_CORPUS=DIR the log is saved there as a fuzz corpus input
 * (fuzz/corpus/auditlog/code-ref.jhlog).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"
#include "lib/auditlog_read.h"

/* Never called: their bytes are what the log records. */
#define BODY __asm__ volatile(".rept 96\n\tnop\n\t.endr" ::: "memory")
__attribute__((noinline, used, aligned(64))) void ref_plain(void) { BODY; }
__attribute__((noinline, used, aligned(64))) void ref_patched_later(void) { BODY; }
__attribute__((noinline, used, aligned(64))) void ref_modified(void) { BODY; }

static const uint8_t jit_bytes[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };

/* Store one byte into our own text (a private copy of its page, as a JIT patching in place).
 * Not instrumented by TSan, which maps the shadow of the program's read-only segments to a
 * read-only page (MapRodata): its check of this store would fault. */
__attribute__((no_sanitize_thread)) static void poke(void (*fn)(void), size_t off, uint8_t v)
{
    uintptr_t a = (uintptr_t)fn + off, pg = a & ~(uintptr_t)4095;
    CHECK_EQ(mprotect((void *)pg, 8192, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
    *(volatile uint8_t *)a = v;
    CHECK_EQ(mprotect((void *)pg, 8192, PROT_READ | PROT_EXEC), 0);
}

static const struct jhr_al_fn *named(const struct jhr_al *lf, const char *name)
{
    const struct jhr_al_fn *f = jhr_al_fn_named(lf, name);
    CHECK(f != NULL);
    if (!f)
        fprintf(stderr, "no function %s in the log\n", name);
    return f;
}

/* The three functions of our text and one of JIT code. */
static void codes(struct jh_code c[4], uint8_t *jit)
{
    static const char *names[] = { "plain", "patched_later", "modified", "jit" };
    void (*fns[])(void) = { ref_plain, ref_patched_later, ref_modified };
    for (int i = 0; i < 4; i++)
        c[i] = (struct jh_code){ .sz = sizeof c[i], .name = names[i],
                                 .start = i < 3 ? (const void *)fns[i] : jit,
                                 .size = i < 3 ? 64 : sizeof jit_bytes };
}

static jh_ctx *open_ctx(const char *dir, const char *engine, bool ignore_env)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG, .dir = dir, .engine = engine,
                            .flags = (ignore_env ? JH_OPT_IGNORE_ENV : 0) | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&jh, &o), 0);
    return jh;
}

int main(void)
{
    char dir[] = "/tmp/jh-test-al-ref.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    uint8_t *jit = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(jit != MAP_FAILED);
    memcpy(jit, jit_bytes, sizeof jit_bytes);

    /* modified before it is added: its page is no longer the file's */
    poke(ref_modified, 10, 0xcc);
    jh_ctx *jh = open_ctx(dir, "ref", true);
    struct jh_code c[4];
    codes(c, jit);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(jh_code_add(jh, &c[i], NULL), 0);
    /* patched in place after it was recorded by reference (the bytes around the patch are
     * the architecture's nops: saved to compare) */
    uint8_t orig[64];
    memcpy(orig, (const void *)ref_patched_later, sizeof orig);
    poke(ref_patched_later, 20, 0xcc);
    CHECK_EQ(jh_code_patched(jh, (const uint8_t *)ref_patched_later + 20, 1), 0);
    jh_close(jh);

    char path[512], err[256], exe[512];
    snprintf(path, sizeof path, "%s/ref-%d.jhlog", dir, (int)getpid());
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CHECK(el > 0);
    exe[el > 0 ? el : 0] = 0;
    struct jhr_al lf;
    CHECK_EQ(jhr_al_open(&lf, path, err, sizeof err), 0);
    CHECK_EQ(lf.bad, 0);
    CHECK_EQ(lf.nfns, 4);
    const struct jhr_al_fn *p = named(&lf, "plain"), *pl = named(&lf, "patched_later"),
                           *m = named(&lf, "modified"), *j = named(&lf, "jit");
    if (p && pl && m && j) {
        /* by reference, read back from this executable, its bytes not in the log */
        CHECK(p->code_file && !strcmp(p->code_file, exe));
        CHECK(p->code_idlen >= 8);
        CHECK(p->code && !memcmp(p->code, (const void *)ref_plain, 64));
        CHECK((const uint8_t *)p->code < lf.data || (const uint8_t *)p->code >= lf.data + lf.size);
        struct jhr_mp v;
        CHECK(jhr_mp_get(&lf.recs[p->rec].map, JH__AL_K_CODE, &v) < 0);
        CHECK_EQ(lf.ncfiles, 1);
        if (lf.ncfiles == 1) {
            CHECK_EQ(lf.cfiles[0].nfns, 2);
            CHECK_EQ(lf.cfiles[0].nread, 2);
            CHECK_STR(lf.cfiles[0].read, exe);
        }
        /* the file's bytes with the patch over them */
        CHECK(pl->code_file != NULL);
        CHECK_EQ(pl->npatches, 1);
        const uint8_t *plc = jhr_al_fn_code(pl);
        CHECK(plc && plc[20] == 0xcc && plc[19] == orig[19] && plc[21] == orig[21] &&
              pl->code[20] == orig[20] && orig[20] != 0xcc);
        /* modified before it was added, and JIT code: copied into the log */
        CHECK(m->code_file == NULL);
        CHECK(m->code && m->code[10] == 0xcc && m->code >= lf.data && m->code < lf.data + lf.size);
        CHECK(j->code_file == NULL);
        CHECK(j->code && !memcmp(j->code, jit_bytes, sizeof jit_bytes));
    }

    /* the same log naming another build-id: said with both ids, nothing read */
    if (p && p->code_id) {
        size_t at = (size_t)(p->code_id - lf.data), idlen = p->code_idlen;
        uint8_t *copy = malloc(lf.size);
        memcpy(copy, lf.data, lf.size);
        /* every record holds the same id: change them all */
        for (size_t i = 0; i + idlen <= lf.size; i++)
            if (!memcmp(copy + i, lf.data + at, idlen))
                copy[i + idlen - 1] ^= 0xff;
        char bad[600], want[140];
        snprintf(bad, sizeof bad, "%s/other-id.jhlog", dir);
        FILE *f = fopen(bad, "wb");
        CHECK(f && fwrite(copy, 1, lf.size, f) == lf.size);
        if (f)
            fclose(f);
        for (size_t i = 0; i < idlen; i++)
            snprintf(want + 2 * i, 3, "%02x", copy[at + i]);
        struct jhr_al lb;
        CHECK_EQ(jhr_al_open(&lb, bad, err, sizeof err), 0);
        const struct jhr_al_fn *bp = named(&lb, "plain");
        CHECK(bp && bp->code == NULL && jhr_al_fn_code(bp) == NULL);
        CHECK_EQ(lb.ncfiles, 1);
        if (lb.ncfiles == 1) {
            CHECK_EQ(lb.cfiles[0].nread, 0);
            CHECK(lb.cfiles[0].read == NULL);
            CHECK(lb.cfiles[0].why && strstr(lb.cfiles[0].why, want) &&
                  strstr(lb.cfiles[0].why, "build-id") && strstr(lb.cfiles[0].why, exe));
        }
        const struct jhr_al_fn *bm = named(&lb, "modified");
        CHECK(bm && bm->code && bm->code[10] == 0xcc);         /* copied code still reads */
        jhr_al_free(&lb);
        unlink(bad);
        free(copy);
    }
    const char *corpus = getenv("JH_CORPUS");
    if (corpus) {
        char out[600];
        snprintf(out, sizeof out, "%s/code-ref.jhlog", corpus);
        FILE *fo = fopen(out, "wb");
        CHECK(fo && fwrite(lf.data, 1, lf.size, fo) == lf.size);
        if (fo)
            fclose(fo);
    }
    jhr_al_free(&lf);
    unlink(path);

    /* JITHERALD_AUDITLOG_REFS=0: everything copied */
    setenv("JITHERALD_AUDITLOG_REFS", "0", 1);
    setenv("JITHERALD", "auditlog", 1);
    jh = open_ctx(dir, "copy", false);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(jh_code_add(jh, &c[i], NULL), 0);
    jh_close(jh);
    snprintf(path, sizeof path, "%s/copy-%d.jhlog", dir, (int)getpid());
    CHECK_EQ(jhr_al_open(&lf, path, err, sizeof err), 0);
    const struct jhr_al_fn *cp = named(&lf, "plain");
    CHECK(cp && cp->code_file == NULL && cp->code && !memcmp(cp->code, (const void *)ref_plain, 64));
    CHECK(cp && cp->code >= lf.data && cp->code < lf.data + lf.size);
    CHECK_EQ(lf.ncfiles, 0);
    jhr_al_free(&lf);
    unlink(path);
    rmdir(dir);
    return check_done();
}
