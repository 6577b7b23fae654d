// guards.cc — JIT-compiled C++: frames with destructors and a catch, crossed by an
// exception the host throws (host_throw) and caught by the host or by catch_here.
extern "C" void host_throw(long n);
extern "C" void host_guard_ran(long n);

namespace {
struct Guard {
    long n;
    ~Guard() { host_guard_ran(n); }
};
} // namespace

__attribute__((noinline)) long deep(long n)
{
    Guard g{n};
    host_throw(n);
    return n;
}

__attribute__((noinline)) long guarded(long n)
{
    Guard g{n + 100};
    return deep(n) + 1;
}

extern "C" long cxx_entry(long n)
{
    return guarded(n);
}

extern "C" long catch_here(long n)
{
    try {
        return guarded(n);
    } catch (int v) {
        return 1000 + v;
    }
}
