/*
 * test_run_symbol.c — the symbol the preload derives once for code it hands to two
 * contexts (tools/lib/symbol.h, jhr_symbol) is the library's own: an entry described with
 * it is the entry the core makes from the name alone (the same symbol, the same build-id
 * hash, so gdb's and elfmap's images are byte for byte the same), and a name that is a
 * symbol already gets none, as from the core.
 */
#include <string.h>

#include "check.h"
#include "core/describe.h"
#include "fmt/build_id.h"
#include "fmt/symbol.h"
#include "lib/symbol.h"

/* name described with the symbol jhr_symbol gives, and without: the same function. */
static void same_entry(struct jh__strings *s, const char *name)
{
    char sym[128];
    const char *given = jhr_symbol(sym, sizeof sym, name);
    struct jh_code a = { .sz = sizeof a, .name = name, .start = (void *)0x40000, .size = 64 };
    struct jh_code b = a;
    b.symbol = given;
    struct jh__entry *x = jh__entry_new(s, &a), *y = jh__entry_new(s, &b);
    CHECK(x != NULL && y != NULL);
    if (x && y) {
        CHECK((x->fn.symbol == NULL) == (y->fn.symbol == NULL));
        if (x->fn.symbol && y->fn.symbol)
            CHECK_STR(y->fn.symbol, x->fn.symbol);
        CHECK_STR(jh__func_symbol(&y->fn), jh__func_symbol(&x->fn));
        CHECK(jh__bid_func_hash(&y->fn) == jh__bid_func_hash(&x->fn));
    }
    jh__entry_free(x);
    jh__entry_free(y);
}

int main(void)
{
    char out[64];
    CHECK_STR(jhr_symbol(out, sizeof out, "Builtin:ArrayPrototypePush"),
              "Builtin_ArrayPrototypePush");
    CHECK_STR(jhr_symbol(out, sizeof out, "JS:*f app.js:2:15"), "JS_f_app_js_2_15");
    CHECK_STR(jhr_symbol(out, sizeof out, "9lives"), "_9lives");
    CHECK_STR(jhr_symbol(out, sizeof out, "::"), "_");
    CHECK(jhr_symbol(out, sizeof out, "Builtins_JSEntry") == NULL);    /* a symbol already */
    CHECK(jhr_symbol(out, sizeof out, NULL) == NULL);
    /* a symbol already exactly when the library would say so (fmt/symbol.h) */
    const char *edge[] = { "", "_", "_9abc", "a-b", "a_-b", "a b", "ab_", "9", "x\xc3\xa9",
                           "Builtin:ArrayPrototypePush", "Builtins_JSEntry" };
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        const char *got = jhr_symbol(out, sizeof out, edge[i]);
        CHECK((got == NULL) == jh__symbol_is_safe(edge[i]));
        /* the same with the room known, and the symbol's length */
        char out_n[64];
        size_t len_n = 99;
        const char *got_n = jhr_symbol_n(out_n, edge[i], &len_n);
        CHECK((got_n == NULL) == (got == NULL));
        CHECK_EQ(len_n, got ? strlen(got) : 0);
        if (got && got_n)
            CHECK_STR(got_n, got);
        if (got) {
            char want[64];
            jh__symbol_from_name(want, sizeof want, edge[i]);
            CHECK_STR(got, want);
        }
    }
    /* room for the longest result (strlen + 2) or nothing: never a cut symbol */
    CHECK(jhr_symbol(out, JHR_SYMBOL_MAX(strlen("a:b")) - 1, "a:b") == NULL);
    CHECK_STR(jhr_symbol(out, JHR_SYMBOL_MAX(strlen("a:b")), "a:b"), "a_b");

    struct jh__strings s = { 0 };
    const char *names[] = { "Builtin:ArrayPrototypePush", "Builtins_JSEntry", "JS:*f app.js:2:15",
                            "9lives", "::", "LazyCompile:~ <anonymous> node:internal/main:1" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        same_entry(&s, names[i]);
    jh__strings_free(&s);
    return check_done();
}
