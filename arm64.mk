# arm64.mk — included by the Makefile: `make test-arm64` cross-builds the library, the unit
# tests, the fuzz targets' corpus replays and tests/arm64/*.c for arm64 Linux into
# build-arm64/, and runs them under qemu-aarch64 with tests/run.sh (tiers unit, fuzz, arm64).
# Needs gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
# (scripts/install-deps.sh test). The tests qemu-user cannot run — x86-64 machine code,
# perf/gdb/valgrind, a kernel feature it lacks — are named in tests/arm64/skip.list with
# the reason, which run.sh prints; the others must pass.
# The host's CLI ($(CLI), x86-64) reads what the arm64 programs write (JH_HOST_CLI).
# Not here: the CLI, the preload, the integration tier (it drives the host's tools) and
# the LLVM adapter. What the tests are told: JH_QEMU_USER=1 (qemu-user, not a kernel, answers
# some of /proc), JH_OBJDUMP (the host's objdump knows x86-64 only).
ARM64_BUILD ?= build-arm64
ARM64_CC    ?= aarch64-linux-gnu-gcc
ARM64_CXX   ?= aarch64-linux-gnu-g++
ARM64_AR    ?= aarch64-linux-gnu-ar
ARM64_OBJDUMP ?= aarch64-linux-gnu-objdump
ARM64_QEMU  ?= qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu
# Debian's arm64 libunwind (LLVM's, nongnu) and LuaJIT, unpacked by scripts/arm64-debs.sh
# (install-deps.sh test runs it): the tests that use them find them through $JH_ARM64_DEBS.
ARM64_DEBS  ?= /opt/jitherald/arm64-debs

# tests/arm64/NAME.c: one test program each, linked as the unit tests are (check.h from
# tests/unit); they land in $(BUILD)/tests/arm64/, which the arm64 tier runs.
ARM64_SRC := $(sort $(wildcard tests/arm64/*.c))
ARM64_CC_SRC := $(sort $(wildcard tests/arm64/*.cc))
ARM64_BIN := $(ARM64_SRC:tests/arm64/%.c=$(BUILD)/tests/arm64/%) \
             $(ARM64_CC_SRC:tests/arm64/%.cc=$(BUILD)/tests/arm64/%)
ARM64_HDR := $(wildcard tests/arm64/*.h)

# The arm64 unwinders users link, from $(ARM64_DEBS), linked by path with an rpath there
# (qemu's -L sysroot has neither; -L falls back to the real path). DT_RPATH, not RUNPATH:
# it also finds libunwind.so.8's liblzma.so.5. Where $(ARM64_DEBS) lacks one, the tests
# that need it build without it and skip, saying how to get it.
ARM64_LLVM_UNW := $(ARM64_DEBS)/usr/lib/llvm-14/lib/libunwind.so.1
ARM64_GNU_UNW  := $(ARM64_DEBS)/usr/lib/aarch64-linux-gnu/libunwind.so.8
ARM64_RPATH     = -Wl,--disable-new-dtags,-rpath,$(subst $(eval) ,:,$(strip $(1)))
# LLVM's libunwind ahead of libgcc_s, as clang -unwindlib=libunwind links it: the
# program's _Unwind_* (libstdc++'s throw included) bind to LLVM's.
# --no-as-needed: the tests reach some of it through weak references only (to skip when it
# is absent), which --as-needed would not count.
ARM64_NEEDED    = -Wl,--push-state,--no-as-needed $(1) -Wl,--pop-state
ARM64_LLVM_LINK := $(if $(wildcard $(ARM64_LLVM_UNW)),$(call ARM64_NEEDED,$(ARM64_LLVM_UNW)) \
                   $(call ARM64_RPATH,$(dir $(ARM64_LLVM_UNW))))
ARM64_GNU_LINK := $(if $(wildcard $(ARM64_GNU_UNW)),$(call ARM64_NEEDED,$(ARM64_GNU_UNW)) \
                  $(call ARM64_RPATH,$(dir $(ARM64_GNU_UNW)) $(ARM64_DEBS)/lib/aarch64-linux-gnu))
# test_a64_unwind and test_a64_exceptions once more, linked with LLVM's libunwind
ARM64_BIN += $(BUILD)/tests/arm64/test_a64_unwind_llvm $(BUILD)/tests/arm64/test_a64_exceptions_llvm
$(BUILD)/tests/arm64/test_a64_libunwind: ARM64_LINK = $(ARM64_GNU_LINK)
$(BUILD)/tests/arm64/%_llvm: ARM64_LINK = $(ARM64_LLVM_LINK)
$(BUILD)/tests/arm64/%_llvm: ARM64_DEFS = -DJH_A64_LLVM_UNWIND
# What was linked, recorded: the tests relink when it changes (the libraries' own dates
# are Debian's, older than any build).
ARM64_DEBS_STAMP := $(BUILD)/arm64-debs.link
.PHONY: arm64-debs-check
$(ARM64_DEBS_STAMP): arm64-debs-check
	@mkdir -p $(@D)
	@echo '$(ARM64_LLVM_LINK) | $(ARM64_GNU_LINK)' | cmp -s - $@ 2>/dev/null || \
	    echo '$(ARM64_LLVM_LINK) | $(ARM64_GNU_LINK)' >$@
# tests/arm64/programs/NAME.c: what tests/arm64/*.sh run under qemu (not tests themselves)
ARM64_PROG_SRC := $(sort $(wildcard tests/arm64/programs/*.c))
ARM64_PROG := $(ARM64_PROG_SRC:tests/arm64/programs/%.c=$(BUILD)/tests/arm64-programs/%)

.PHONY: test-arm64 arm64-tests bench-arm64
# What the sub-make builds for arm64: everything the unit, fuzz and arm64 tiers run.
arm64-tests: $(LIB_SO) $(UNIT_BIN) $(FUZZ_BIN) $(ARM64_BIN) $(ARM64_PROG)

# The host's pkg-config answers for x86-64 libraries (libdw, capstone): the cross build
# uses none, as the library itself needs only libc.
test-arm64: $(CLI)
	$(MAKE) BUILD=$(ARM64_BUILD) CC=$(ARM64_CC) CXX=$(ARM64_CXX) AR=$(ARM64_AR) \
	    LLVM_CONFIG= CLANG14= CLANGXX14= TOOL_PKGS= arm64-tests
	@BUILD=$(ARM64_BUILD) TIERS="unit fuzz arm64" JH_EXEC="$(ARM64_QEMU)" JH_QEMU_USER=1 \
	    JH_ARM64_DEBS=$(ARM64_DEBS) JH_HOST_CLI=$(abspath $(CLI)) JH_SKIP_LIST=tests/arm64/skip.list JH_SKIP_TAG=arm64 JH_OBJDUMP=$(ARM64_OBJDUMP) \
	    tests/run.sh

$(BUILD)/tests/arm64-programs/%: tests/arm64/programs/%.c $(LIB_A) include/jitherald.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LIBS)

ARM64_C_DEPS := $(TEST_HDR) $(ARM64_HDR) $(SUPPORT_A) $(LIB_A) $(READ_A) $(MJ_A) $(ARM64_DEBS_STAMP)
ARM64_C_LINK = $(CC) $(TEST_CPPFLAGS) -Itests/unit $(ARM64_DEFS) $(CFLAGS) $(LDFLAGS) -o $@ $< \
	    $(ARM64_LINK) $(SUPPORT_A) $(MJ_A) $(READ_A) $(LIB_A) $(LIBS)
$(BUILD)/tests/arm64/%: tests/arm64/%.c $(ARM64_C_DEPS)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(ARM64_C_LINK)

$(BUILD)/tests/arm64/%_llvm: tests/arm64/%.c $(ARM64_C_DEPS)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(ARM64_C_LINK)

# bench/unwind for arm64 under qemu: a backtrace through one JIT frame with 1 and 100k
# functions registered (the x1 column: the lookup stays O(log n) there too). qemu's
# times are an emulator's; the ratio between the rows is what it shows.
bench-arm64:
	$(MAKE) BUILD=$(ARM64_BUILD) CC=$(ARM64_CC) CXX=$(ARM64_CXX) AR=$(ARM64_AR) \
	    LLVM_CONFIG= CLANG14= CLANGXX14= TOOL_PKGS= $(ARM64_BUILD)/bench/unwind
	JH_BENCH_UNWIND_N=$${JH_BENCH_UNWIND_N:-1,100000} JH_BENCH_UNWIND_NAIVE_MAX=$${JH_BENCH_UNWIND_NAIVE_MAX:-10000} \
	    $(ARM64_QEMU) $(ARM64_BUILD)/bench/unwind

ARM64_CC_DEPS := $(TEST_HDR) $(ARM64_HDR) $(SUPPORT_A) $(LIB_A) $(READ_A) $(ARM64_DEBS_STAMP)
ARM64_CXX_LINK = $(CXX) $(TEST_CPPFLAGS) -Itests/unit $(ARM64_DEFS) $(CXXFLAGS) $(LDFLAGS) -o $@ \
	    $< $(ARM64_LINK) $(SUPPORT_A) $(READ_A) $(LIB_A) $(LIBS)
$(BUILD)/tests/arm64/%: tests/arm64/%.cc $(ARM64_CC_DEPS)
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(ARM64_CXX_LINK)

$(BUILD)/tests/arm64/%_llvm: tests/arm64/%.cc $(ARM64_CC_DEPS)
	$(call msg,CXX,$@)
	@mkdir -p $(@D)
	$(Q)$(ARM64_CXX_LINK)
