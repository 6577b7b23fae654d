// test_header_cxx.cc — the public header compiles as C++ and the API links from C++.
#include <jitherald.h>

#include <cerrno>

#include "check.h"

int main()
{
    jh_ctx *jh = nullptr;
    jh_options o{};
    o.sz = sizeof o;
    o.flags = JH_OPT_IGNORE_ENV;
    CHECK_EQ(jh_open(&jh, &o), 0);
    static char code[64];
    jh_code c{};
    c.sz = sizeof c;
    c.name = "cxx_fn";
    c.start = code;
    c.size = sizeof code;
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    CHECK_EQ(jh_code_remove(jh, id), 0);
    jh_attr a{};
    a.key = "k";
    a.kind = JH_ATTR_INT;
    a.v.i = 1;
    CHECK_EQ(jh_log_event(jh, "e", &a, 1), 0);
    jh_close(jh);
    CHECK(jh_strerror(-EINVAL) != nullptr);
    return check_done();
}
