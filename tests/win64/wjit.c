/* wjit.c — see wjit.h. */
#include "wjit.h"

#include <stdio.h>
#include <string.h>
#include <windows.h>

static uint8_t *area, *next, *limit;
static SRWLOCK area_lock = SRWLOCK_INIT;

int wjit_init(size_t bytes)
{
    area = VirtualAlloc(NULL, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_EXECUTE_READWRITE);
    if (!area)
        return -1;
    next = area;
    limit = area + bytes;
    return 0;
}

size_t wjit_free(void) { return (size_t)(limit - next); }
uint8_t *wjit_here(void) { return next; }
void wjit_rewind(uint8_t *p) { next = p; }

static uint8_t *take(size_t n)
{
    AcquireSRWLockExclusive(&area_lock);
    uint8_t *p = NULL;
    if ((size_t)(limit - next) >= n) {
        p = next;
        next += (n + 15) & ~(size_t)15;
    }
    ReleaseSRWLockExclusive(&area_lock);
    return p;
}

static uint8_t *put(uint8_t *p, const void *bytes, size_t n)
{
    memcpy(p, bytes, n);
    return p + n;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
    return p + 8;
}

/* The call at the heart of every function: to the next one (mov rax, imm64; call rax) or,
 * with to == NULL, to the callback in rdx (call rdx). rcx, rdx and r8 pass through
 * untouched. */
static uint8_t *put_call(uint8_t *p, const void *to)
{
    if (!to)
        return put(p, "\xff\xd2", 2);
    p = put(p, "\x48\xb8", 2);
    p = put64(p, (uint64_t)(uintptr_t)to);
    return put(p, "\xff\xd0", 2);
}

/* push rbp; mov rbp,rsp; sub rsp,48; mov [rsp+0..40],r8 (6 times); <call>; add rsp,48;
 * pop rbp; ret. The frame keeps the VM's code pointer (r8) in its slots, as JIT frames
 * keep return addresses and continuations in spill slots. An unwinder with no unwind info
 * for a frame takes it for a leaf function and reads a return address at rsp, then scans
 * on; what it finds there decides whether it resyncs by luck on a real return address
 * further up or derails. With vm_pc in every slot it derails every time. */
static size_t emit_fp(uint8_t *code, const void *to)
{
    uint8_t *p = put(code, "\x55\x48\x89\xe5\x48\x83\xec\x30\x4c\x89\x04\x24", 12);
    for (uint8_t off = 8; off <= 40; off += 8) {
        p = put(p, "\x4c\x89\x44\x24", 4);
        *p++ = off;
    }
    p = put_call(p, to);
    p = put(p, "\x48\x83\xc4\x30\x5d\xc3", 6);
    return (size_t)(p - code);
}

/* push rbx; push rsi; sub rsp,40; mov rbx,V1; mov rsi,V2; <call>; add rsp,40; pop rsi;
 * pop rbx; ret — and its CFI */
static size_t emit_saver(uint8_t *code, const void *to, uint64_t v1, uint64_t v2)
{
    uint8_t *p = put(code, "\x53\x56\x48\x83\xec\x28\x48\xbb", 8);
    p = put64(p, v1);
    p = put(p, "\x48\xbe", 2);
    p = put64(p, v2);
    p = put_call(p, to);
    p = put(p, "\x48\x83\xc4\x28\x5e\x5b\xc3", 7);
    return (size_t)(p - code);
}
static const uint8_t saver_cfi[] = { 0x41, 0x0e, 16, 0x83, 2, 0x41, 0x0e, 24, 0x84, 3,
                                     0x44, 0x0e, 64 };

static int announce(jh_ctx *jh, struct wjit_fn *f, enum jh_unwind_kind kind)
{
    f->id = 0;
    if (!jh)
        return 0;
    struct jh_code c = { .sz = sizeof c, .name = f->name, .start = f->code, .size = f->size,
                         .unwind = kind };
    if (kind == JH_UNWIND_FRAME_POINTER) {
        c.fp_push_end = 1;
        c.fp_set_end = 4;
    } else if (kind == JH_UNWIND_CFI) {
        c.cfi = saver_cfi;
        c.cfi_len = sizeof saver_cfi;
    }
    return jh_code_add(jh, &c, &f->id);
}

int wjit_make_chain(jh_ctx *jh, const char *tag, struct wjit_chain *c)
{
    static const char *const role[3] = { "outer", "middle", "inner" };
    static const enum jh_unwind_kind kind[3] = { JH_UNWIND_CFI, JH_UNWIND_FRAME_POINTER,
                                                 JH_UNWIND_CFI };
    uint8_t *code[3];
    for (int i = 0; i < 3; i++)
        if (!(code[i] = take(64)))
            return -1;
    size_t n[3];
    n[2] = emit_saver(code[2], NULL, 0xdeadbeefdeadbeefull, 0xbadc0ffee0ddf00dull);
    n[1] = emit_fp(code[1], code[2]);
    n[0] = emit_saver(code[0], code[1], WJIT_RBX, WJIT_RSI);
    for (int i = 0; i < 3; i++)
        FlushInstructionCache(GetCurrentProcess(), code[i], n[i]);
    for (int i = 0; i < 3; i++) {
        char name[64];      /* jitherald copies it */
        snprintf(name, sizeof name, "%s_%s", tag, role[i]);
        c->fn[i] = (struct wjit_fn){ .name = name, .code = code[i], .size = n[i] };
        int err = announce(jh, &c->fn[i], kind[i]);
        c->fn[i].name = role[i];
        if (err)
            return err;
    }
    c->entry = (wjit_entry *)(void *)code[0];
    return 0;
}

void wjit_unchain(jh_ctx *jh, struct wjit_chain *c)
{
    for (int i = 0; i < 3; i++)
        if (jh && c->fn[i].id)
            jh_code_remove(jh, c->fn[i].id);
}

int wjit_leaf(jh_ctx *jh, const char *name, size_t size, struct wjit_fn *out)
{
    uint8_t *p = take(size);
    if (!p)
        return -1;
    /* push rbp; mov rbp,rsp; mov rax,rcx; pop rbp; ret; int3 padding */
    memset(p, 0xcc, size);
    memcpy(p, "\x55\x48\x89\xe5\x48\x89\xc8\x5d\xc3", 9);
    *out = (struct wjit_fn){ .name = name, .code = p, .size = size };
    return announce(jh, out, JH_UNWIND_FRAME_POINTER);
}

int wjit_which(const struct wjit_chain *c, uintptr_t pc)
{
    for (int i = 0; i < 3; i++)
        if (pc >= (uintptr_t)c->fn[i].code && pc < (uintptr_t)c->fn[i].code + c->fn[i].size)
            return i;
    return -1;
}
