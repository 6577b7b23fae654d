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

$(BUILD)/tests/arm64/%: tests/arm64/%.c $(TEST_HDR) $(SUPPORT_A) $(LIB_A) $(READ_A) $(MJ_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(TEST_CPPFLAGS) -Itests/unit $(CFLAGS) $(LDFLAGS) -o $@ $< $(SUPPORT_A) $(MJ_A) \
	    $(READ_A) $(LIB_A) $(LIBS)

# bench/unwind for arm64 under qemu: a backtrace through one JIT frame with 1 and 100k
# functions registered (the x1 column: the lookup stays O(log n) there too). qemu's
# times are an emulator's; the ratio between the rows is what it shows.
bench-arm64:
	$(MAKE) BUILD=$(ARM64_BUILD) CC=$(ARM64_CC) CXX=$(ARM64_CXX) AR=$(ARM64_AR) \
	    LLVM_CONFIG= CLANG14= CLANGXX14= TOOL_PKGS= $(ARM64_BUILD)/bench/unwind
	JH_BENCH_UNWIND_N=$${JH_BENCH_UNWIND_N:-1,100000} JH_BENCH_UNWIND_NAIVE_MAX=$${JH_BENCH_UNWIND_NAIVE_MAX:-10000} \
	    $(ARM64_QEMU) $(ARM64_BUILD)/bench/unwind

$(BUILD)/tests/arm64/%: tests/arm64/%.cc $(TEST_HDR) $(SUPPORT_A) $(LIB_A) $(READ_A)
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(TEST_CPPFLAGS) -Itests/unit $(CXXFLAGS) $(LDFLAGS) -o $@ $< $(SUPPORT_A) \
	    $(READ_A) $(LIB_A) $(LIBS)
