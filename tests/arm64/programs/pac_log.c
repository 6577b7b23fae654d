/*
 * pac_log.c — an arm64 "VM" for tests/arm64/pac_log.sh: it announces one JIT function and
 * logs (jh_log_memory) a frame record whose return address into that function is signed
 * with the A key (pacia, as paciasp would sign it), then prints both values. Offline, on
 * the x86-64 host, `jitherald log F show ADDR --vm pac_log` must strip the signature with
 * the log's pac_mask and name the function.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "jitherald.h"

/* The stack as a JIT's frame record holds it: the caller's fp and a signed return address. */
struct frame_rec {
    struct frame_rec *fp;
    void (*lr)(void);
    const char *vm_name;
};

/* PACIA1716: x17 signed with the A key and x16 as modifier (a hint: a no-op without PAC,
 * which the test then reports). */
static uint64_t sign_a(uint64_t addr, uint64_t modifier)
{
    register uint64_t x17 __asm__("x17") = addr;
    register uint64_t x16 __asm__("x16") = modifier;
    __asm__("hint #8" : "+r"(x17) : "r"(x16));
    return x17;
}

int main(void)
{
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .engine = "paclog" };
    if (jh_open(&jh, &o) < 0)
        return 1;
    uint32_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        return 1;
    const uint32_t body[] = { 0xd503233f /* paciasp */, 0xa9bf7bfd /* stp x29, x30 */,
                              0x910003fd /* mov x29, sp */, 0xd503201f /* nop: a call */,
                              0xa8c17bfd /* ldp x29, x30 */, 0xd50323bf /* autiasp */,
                              0xd65f03c0 /* ret */ };
    memcpy(code, body, sizeof body);
    mprotect(code, 4096, PROT_READ | PROT_EXEC);
    const struct jh_range signed_ra = { 4, 24 };
    struct jh_code c = { .sz = sizeof c, .name = "jit_signed", .start = code,
                         .size = sizeof body, .unwind = JH_UNWIND_FRAME_POINTER,
                         .fp_push_end = 8, .fp_set_end = 12, .ra_signed = &signed_ra,
                         .nra_signed = 1, .ra_key = JH_PAC_KEY_A };
    if (jh_code_add(jh, &c, NULL) < 0)
        return 1;
    static struct frame_rec outer;
    uint64_t ret = (uint64_t)(uintptr_t)code + 16;       /* after the call at offset 12 */
    /* A signature can come out all zeros (about 1 in 128 under qemu-user, whose address
     * space leaves few PAC bits): the value would look unsigned. Another modifier then. */
    uint64_t lr = ret;
    for (uint64_t m = 0x1234; lr == ret && m < 0x1234 + 16; m++)
        lr = sign_a(ret, m);
    struct frame_rec rec = { &outer, (void (*)(void))(uintptr_t)lr, "paclog" };
    jh_log_memory(jh, &rec, sizeof rec, "struct frame_rec");
    printf("frame_rec at %p: lr %#llx signed from %#llx\n", (void *)&rec,
           (unsigned long long)(uintptr_t)rec.lr, (unsigned long long)ret);
    jh_close(jh);
    return 0;
}
