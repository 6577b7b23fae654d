/*
 * unwind_reclaim.c — freeing what an unwinder may still be reading. Deregistering does not
 * wait for a thread that already holds an FDE pointer: old runs are freed after GRACE_NS,
 * or at once when libgcc never looked at them (its object's pc_begin still (void *)-1) and
 * libunwind was not fed; libunwind's lock-free list readers get DYN_DELAY_NS more.
 */
#include <stdlib.h>

#include "base/clock.h"
#include "channels/unwind.h"

bool jh__uw_queue_push(struct uw_queue *q, void *p, bool img)
{
    if (q->len == q->cap) {
        if (q->head) {
            memmove(q->a, q->a + q->head, (q->len - q->head) * sizeof *q->a);
            q->len -= q->head;
            q->head = 0;
        }
        if (q->len == q->cap) {
            size_t cap = q->cap ? 2 * q->cap : 64;
            struct uw_retired *r = realloc(q->a, cap * sizeof *r);
            if (!r)
                return false;
            q->a = r;
            q->cap = cap;
        }
    }
    q->a[q->len++] = (struct uw_retired){ jh__now_ns(), p, img };
    return true;
}

/* The oldest entry if it is at least age old, else NULL. */
static struct uw_retired *queue_old(struct uw_queue *q, uint64_t now, uint64_t age)
{
    if (q->head == q->len || q->a[q->head].when > now || now - q->a[q->head].when < age)
        return NULL;            /* (pushed after now was read: young, not 2^64 ns old) */
    struct uw_retired *r = &q->a[q->head++];
    if (q->head == q->len)
        q->head = q->len = 0;   /* r stays readable until the next push */
    return r;
}

void jh__uw_retire(void *p, bool img)
{
    if (!jh__uw_queue_push(&jh__uw.retired, p, img))
        return;                 /* cannot wait for the grace period: leak rather than crash */
}

static void dyn_unlink(struct uw_img *im);

void jh__uw_sweep(void)
{
    uint64_t now = jh__now_ns();
    struct uw_retired *r;
    while ((r = queue_old(&jh__uw.uncancel, now, jh__uw.dyn_delay_ns)))
        dyn_unlink(r->p);
    while ((r = queue_old(&jh__uw.retired, now, jh__uw.grace_ns))) {
        if (r->img)
            jh__uw_img_free(r->p);
        else
            free(r->p);
    }
}

void jh__unwind_tune_delays(uint64_t dyn_delay_ns, uint64_t grace_ns)
{
    jh__lock(&jh__uw_lock);
    if (dyn_delay_ns != JH__UNWIND_KEEP)
        jh__uw.dyn_delay_ns = dyn_delay_ns;
    if (grace_ns != JH__UNWIND_KEEP)
        jh__uw.grace_ns = grace_ns;
    jh__unlock(&jh__uw_lock);
}

void jh__uw_img_release(struct uw_img *im)
{
    if (!im)
        return;
    bool seen = false;
    if (im->gcc) {
        void *ob = jh__uw.dereg_info(im->buf);
        seen = ob != (void *)im->ob || im->ob[0] != (void *)-1;
    }
    if (im->dyn && jh__uw_queue_push(&jh__uw.uncancel, im, true))
        return;                 /* unlinked and retired by jh__uw_sweep() */
    if (im->dyn)
        dyn_unlink(im);
    else if (seen)
        jh__uw_retire(im, true);
    else
        jh__uw_img_free(im);
}

/*
 * libunwind's readers walk its list without its lock, first range match wins. A walk that
 * began before the replacing entry was put at the head would miss the range if the old
 * entry went at once, hence the DYN_DELAY_NS in the list. And _U_dyn_cancel clears next
 * after unlinking: a reader standing on the entry would stop there and miss every entry
 * after it (seen: JIT frames without proc info under churn), so next is pointed back into
 * the list; the entry itself lives on for the grace period.
 */
static void dyn_unlink(struct uw_img *im)
{
    struct uw_dyn_info *next = im->di.next;
    jh__uw.dyn_cancel(&im->di);
    __atomic_store_n(&im->di.next, next, __ATOMIC_RELEASE);
    jh__uw_retire(im, true);
}

