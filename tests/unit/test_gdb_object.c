/*
 * test_gdb_object.c — jh_gdb_object_add/remove (jitherald.h): a ready-made ELF object goes
 * into the GDB JIT interface's list as it is (the caller's bytes, its size), announced
 * through the hook, and leaves it on removal; a bad argument is -EINVAL with the field
 * named in the log; no gdb channel, -ENODEV. What gdb does with such an object is
 * llvm_late_attach.sh's (the LLVM adapter registers LLVM's debug objects this way).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "channels/gdb_jit.h"
#include "check.h"
#include "jitherald.h"

static char said[512];

static void record(void *arg, int level, const char *msg)
{
    (void)arg;
    (void)level;
    snprintf(said, sizeof said, "%s", msg);
}

static int listed(const void *elf, size_t len)
{
    int n = 0;
    for (const struct jit_code_entry *ce = __jit_debug_descriptor.first_entry; ce; ce = ce->next_entry)
        if (ce->symfile_addr == elf && ce->symfile_size == len)
            n++;
    return n;
}

static void refused(int r, const char *field)
{
    CHECK_EQ(r, -EINVAL);
    if (!strstr(said, field)) {
        fprintf(stderr, "the log does not name %s: \"%s\"\n", field, said);
        CHECK(0);
    }
    said[0] = 0;
}

int main(void)
{
    static unsigned char elf[128] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
    static unsigned char other[128] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
    static unsigned char junk[128] = { 'E', 'L', 'F' };
    struct jh_options o = { .sz = sizeof o, .flags = JH_OPT_IGNORE_ENV, .channels = JH_GDB,
                            .log = record };
    jh_ctx *jh;
    CHECK_EQ(jh_open(&jh, &o), 0);
    CHECK_EQ(jh_channels(jh), JH_GDB);
    CHECK_EQ(jh_gdb_listening(), 0);

    jh_gdb_object *a = NULL, *b = NULL;
    CHECK_EQ(jh_gdb_object_add(NULL, elf, sizeof elf, &a), -EINVAL);
    refused(jh_gdb_object_add(jh, elf, sizeof elf, NULL), "obj");
    refused(jh_gdb_object_add(jh, NULL, sizeof elf, &a), "elf is NULL");
    refused(jh_gdb_object_add(jh, elf, 63, &a), "len");
    refused(jh_gdb_object_add(jh, junk, sizeof junk, &a), "ELF magic");
    CHECK(a == NULL);
    refused(jh_gdb_object_remove(jh, NULL), "obj");
    CHECK_EQ(listed(elf, sizeof elf), 0);

    /* registered as it is, the newest first, each removal taking its own */
    CHECK_EQ(jh_gdb_object_add(jh, elf, sizeof elf, &a), 0);
    CHECK(a != NULL);
    CHECK_EQ(listed(elf, sizeof elf), 1);
    CHECK_EQ(jh_gdb_object_add(jh, other, sizeof other, &b), 0);
    CHECK(__jit_debug_descriptor.first_entry->symfile_addr == (const char *)other);
    CHECK_EQ(__jit_debug_descriptor.action_flag, JIT_NOACTION);
    CHECK_EQ(jh_gdb_object_remove(jh, a), 0);
    CHECK_EQ(listed(elf, sizeof elf), 0);
    CHECK_EQ(listed(other, sizeof other), 1);

    /* the gdb channel off: nothing registered, the object already there stays */
    CHECK_EQ(jh_channels_set(jh, 0), 0);
    jh_gdb_object *c = (jh_gdb_object *)1;
    CHECK_EQ(jh_gdb_object_add(jh, elf, sizeof elf, &c), -ENODEV);
    CHECK(c == NULL);
    CHECK_EQ(listed(other, sizeof other), 1);
    CHECK_EQ(jh_gdb_object_remove(jh, b), 0);
    CHECK_EQ(listed(other, sizeof other), 0);
    CHECK(__jit_debug_descriptor.first_entry == NULL);
    jh_close(jh);
    return check_done();
}
