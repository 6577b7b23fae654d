# jitherald — plain GNU make. `make help` lists the targets.
# Everything built goes under $(BUILD) (default build/), so several builds can coexist:
#   make BUILD=build-asan SAN=address,undefined test
BUILD   ?= build
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
LUADIR  ?= $(PREFIX)/share/lua/5.1
MANDIR  ?= $(PREFIX)/share/man
CC      ?= cc
CXX     ?= c++
OPT     ?= -O2
SAN     ?=
V       ?= 0

ifeq ($(V),0)
Q = @
msg = @printf '  %-6s %s\n' $(1) $(2)
else
Q =
msg =
endif

SANFLAGS := $(if $(SAN),-fsanitize=$(SAN) -fno-sanitize-recover=all,)
WARN     := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CPPFLAGS += -D_GNU_SOURCE -Iinclude -Isrc
CFLAGS   += -std=c11 $(OPT) -g -fno-omit-frame-pointer $(WARN) $(SANFLAGS)
CXXFLAGS += -std=c++17 $(OPT) -g -fno-omit-frame-pointer $(WARN) $(SANFLAGS)
LDFLAGS  += $(SANFLAGS)
LIBS     := -lpthread -ldl
# Our shared objects: no executable stack, and every symbol bound at load with the GOT then
# read-only (full RELRO). Lazy binding would resolve a libc function at its first call,
# which may be in a signal handler (jh_log_*, a fork child's first) or inside a VM's
# interposed write: ~2 KiB more of the handler's stack there (the loader saves the vector
# registers), which test_auditlog_signal measures.
SO_LDFLAGS := -Wl,-z,noexecstack -Wl,-z,relro,-z,now

SONAME   := libjitherald.so.0
# Files named *_win.c are the Windows side of a platform difference (make win64, win64.mk).
LIB_SRC  := $(filter-out %_win.c,$(sort $(wildcard src/base/*.c src/fmt/*.c src/channels/*.c src/core/*.c)))
# The LuaJIT adapter's C half (adapters/luajit/trace.h): its event handlers, which LuaJIT
# would run with the JIT off as Lua, and the derivation of each trace's lines and frame.
LUAJIT_SRC := adapters/luajit/trace.c adapters/luajit/events.c adapters/luajit/funcs.c \
              adapters/luajit/open.c adapters/luajit/gather.c
LIB_SRC  += $(LUAJIT_SRC)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB_A    := $(BUILD)/libjitherald.a
LIB_SO   := $(BUILD)/$(SONAME)

# The CLI's offline tools may use libraries the library itself never needs.
TOOL_PKGS := $(shell for p in libdw capstone zlib; do pkg-config --exists $$p 2>/dev/null && echo $$p; done)
TOOL_CFLAGS := $(if $(TOOL_PKGS),$(shell pkg-config --cflags $(TOOL_PKGS)),) \
               $(foreach p,$(TOOL_PKGS),-DJH_HAVE_$(shell echo $(p) | tr a-z- A-Z_)=1)
# None of them is linked: each is opened when first used (tools/log_disasm.c: capstone,
# log_dwarf.c: libdw, log_report.c: zlib), so that `jitherald run`, which needs none,
# starts without loading them (tests/integration/run_start.sh).
# LLVM 14: the adapter (adapters/llvm/llvm.mk), the programs some tests run, a benchmark's peer.
LLVM_CONFIG := $(shell command -v llvm-config-14 2>/dev/null)
CLANG14     := $(shell command -v clang-14 2>/dev/null)
CLANGXX14   := $(shell command -v clang++-14 2>/dev/null)
# tools/lib: the reader library (jitdump, .eh_frame, perf map, audit log, symbol table,
# callgrind rewriter) that the CLI, the unit tests and the fuzz targets link; tools/*.c: the
# commands (cmd_*.c) and the audit log's presenters (log_*.c).
READ_SRC := $(sort $(wildcard tools/lib/*.c))
READ_OBJ := $(READ_SRC:%.c=$(BUILD)/%.o)
READ_A   := $(BUILD)/libjitherald-read.a
TOOL_SRC := $(sort $(wildcard tools/*.c))
TOOL_OBJ := $(TOOL_SRC:%.c=$(BUILD)/%.o)
LOG_OBJ  := $(filter $(BUILD)/tools/log_%.o,$(TOOL_OBJ))
CLI      := $(BUILD)/jitherald

# The preload library of `jitherald run` (adapters/preload): its own files, the readers it
# shares with the CLI (built again position-independent) and, from the static library, the
# few internal helpers they use (hidden there too). The public API comes from
# libjitherald.so, found beside it.
RUN_SRC  := $(sort $(wildcard adapters/preload/*.c))
RUN_READ := tools/lib/jitdump_read.c tools/lib/jitdump_lines.c tools/lib/perfmap_read.c tools/lib/text.c \
            tools/lib/eh_frame.c tools/lib/prologue.c tools/lib/symbol.c
RUN_OBJ  := $(RUN_SRC:%.c=$(BUILD)/pic/%.o) $(RUN_READ:%.c=$(BUILD)/pic/%.o)
RUN_SO   := $(BUILD)/libjitherald-run.so

# Examples: one program per directory under examples/ (examples/win64: Windows, win64.mk).
EXAMPLES := $(patsubst examples/%/,$(BUILD)/examples/%,$(filter-out examples/win64/,$(sort $(dir $(wildcard examples/*/*.c)))))

# The demo JIT's compiler as a library, so tests can compile code and call it.
MJ_SRC   := $(filter-out examples/minijit/main.c,$(sort $(wildcard examples/minijit/*.c)))
MJ_OBJ   := $(MJ_SRC:examples/minijit/%.c=$(BUILD)/obj/minijit/%.o)
MJ_A     := $(BUILD)/libminijit.a

# Tests: every tests/unit/test_*.c and *.cc is its own program, linked with the static
# library so it can reach internal functions (and the reader library, tools/lib), and with
# the test support archive: the harnesses several tests share (tests/unit/*.c that are not
# test_*, tests/support/*.c).
# tests/integration/*.sh drive the real tools, some of them running tests/programs/*.
UNIT_C   := $(sort $(wildcard tests/unit/test_*.c))
UNIT_CC  := $(sort $(wildcard tests/unit/test_*.cc))
UNIT_BIN := $(UNIT_C:tests/unit/%.c=$(BUILD)/tests/%) $(UNIT_CC:tests/unit/%.cc=$(BUILD)/tests/%)
TEST_HDR := $(wildcard tests/unit/*.h tests/support/*.h)
SUPPORT_SRC := $(sort $(wildcard tests/support/*.c) $(filter-out tests/unit/test_%,$(wildcard tests/unit/*.c)))
SUPPORT_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o)
SUPPORT_A := $(BUILD)/obj/tests/libsupport.a
TEST_CPPFLAGS := $(CPPFLAGS) -Iexamples/minijit -Itests/support -Itools
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all lib cli man examples tests programs install uninstall test test-unit test-slow asan tsan fuzz bench demo clean help check-exports check-layers
all: lib cli examples man

lib: $(LIB_A) $(LIB_SO) $(BUILD)/jitherald.pc $(RUN_SO)
cli: $(CLI)
# The man pages are written by hand (docs/man/): tests/integration/man_pages.sh lints them
# and fails when the header or the CLI has a function, constant, command, option or
# variable they lack. $(BUILD)/man/ holds them and a link jh_NAME.3 -> jitherald.3 per
# function (scripts/mkman.sh), which `man -l` follows from anywhere.
MAN_SRC := docs/man/jitherald.1 docs/man/jitherald.3
man: $(BUILD)/man/jitherald.3
$(BUILD)/man/jitherald.3: $(MAN_SRC) scripts/mkman.sh
	$(call msg,MAN,$(@D))
	$(Q)rm -rf $(@D) && scripts/mkman.sh docs/man $(@D)
examples: $(EXAMPLES)
tests: $(UNIT_BIN) $(FUZZ_BIN) all

$(BUILD)/obj/minijit/%.o: examples/minijit/%.c $(wildcard examples/minijit/*.h) include/jitherald.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(MJ_A): $(MJ_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/src/%.o: src/%.c $(wildcard src/*/*.h) include/jitherald.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(BUILD)/adapters/luajit/%.o: adapters/luajit/%.c adapters/luajit/trace.h adapters/luajit/events.h include/jitherald.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# scripts/gdb-section.sh: gdb reads our descriptor even where the executable has its own.
$(LIB_SO): $(LIB_OBJ) src/jitherald.map scripts/gdb-section.sh
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script,src/jitherald.map \
	    -Wl,-z,defs $(SO_LDFLAGS) $(LDFLAGS) -o $@ $(LIB_OBJ) $(LIBS)
	$(Q)sh scripts/gdb-section.sh $@ || { rm -f $@; exit 1; }
	$(Q)ln -sf $(SONAME) $(BUILD)/libjitherald.so

$(BUILD)/pic/%.o: %.c $(wildcard adapters/preload/*.h tools/lib/*.h src/*/*.h) include/jitherald.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itools $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(RUN_SO): $(RUN_OBJ) $(LIB_SO) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) -shared $(SO_LDFLAGS) $(LDFLAGS) -o $@ $(RUN_OBJ) -L$(BUILD) -ljitherald \
	    $(LIB_A) -Wl,-rpath,'$$ORIGIN' $(LIBS)

$(BUILD)/jitherald.pc: jitherald.pc.in Makefile
	@mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
	    -e 's|@VERSION@|$(shell sed -n 's/^#define JH_VERSION_STRING "\(.*\)"/\1/p' include/jitherald.h)|' $< > $@

$(BUILD)/tools/%.o: tools/%.c $(wildcard tools/*.h tools/lib/*.h) $(wildcard src/*/*.h) include/jitherald.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itools $(CFLAGS) $(TOOL_CFLAGS) -DJH_LIBDIR='"$(LIBDIR)"' -c $< -o $@

# The report's script and style, embedded by the assembler (.incbin) from where make runs.
$(BUILD)/tools/log_report_assets.o build-fuzz/tools/log_report_assets.o: tools/report/page.js tools/report/page.css

$(READ_A): $(READ_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(CLI): $(TOOL_OBJ) $(READ_A) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(TOOL_OBJ) $(READ_A) $(LIB_A) $(LIBS)

# Examples link against the shared library, as a user's program would.
.SECONDEXPANSION:
$(BUILD)/examples/%: $$(wildcard examples/%/*.c) $$(wildcard examples/%/*.h) $(LIB_SO)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^) \
	    -L$(BUILD) -ljitherald -Wl,-rpath,'$$ORIGIN/..' $(LIBS)

$(BUILD)/obj/tests/%.o: tests/%.c $(TEST_HDR) $(wildcard src/*/*.h) include/jitherald.h examples/minijit/minijit.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(TEST_CPPFLAGS) $(CFLAGS) -c $< -o $@

$(SUPPORT_A): $(SUPPORT_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# The preload's parts that interpose nothing, tested alone (the rest: tests/integration/run_*):
# test_run_X with adapters/preload/X.c.
$(BUILD)/tests/test_run_pkeys $(BUILD)/tests/test_run_format: $(BUILD)/tests/test_run_%: \
    tests/unit/test_run_%.c adapters/preload/%.c adapters/preload/preload.h tests/unit/check.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(TEST_CPPFLAGS) -Iadapters/preload $(CFLAGS) $(LDFLAGS) -o $@ $< \
	    adapters/preload/$*.c
$(BUILD)/tests/test_run_stream: tests/unit/test_run_stream.c adapters/preload/stream.c \
    adapters/preload/stream.h adapters/preload/preload.h tests/unit/check.h $(READ_A) $(LIB_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(TEST_CPPFLAGS) -Iadapters/preload $(CFLAGS) $(LDFLAGS) -o $@ $< \
	    adapters/preload/stream.c $(READ_A) $(LIB_A) $(LIBS)

# The library is linked in statically here: bound at load as our shared objects are, so
# that the stack its signal handler's call takes is the library's (SO_LDFLAGS).
$(BUILD)/tests/test_auditlog_signal: LDFLAGS += -Wl,-z,now

$(BUILD)/tests/%: tests/unit/%.c $(TEST_HDR) $(SUPPORT_A) $(LIB_A) $(READ_A) $(MJ_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(TEST_CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(SUPPORT_A) $(MJ_A) $(READ_A) \
	    $(LIB_A) $(LIBS)

$(BUILD)/tests/%: tests/unit/%.cc $(TEST_HDR) $(SUPPORT_A) $(LIB_A) $(MJ_A)
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(TEST_CPPFLAGS) $(CXXFLAGS) $(LDFLAGS) -o $@ $< $(SUPPORT_A) $(MJ_A) $(LIB_A) $(LIBS)

include tests/programs/programs.mk
include win64.mk
include arm64.mk
include adapters/llvm/llvm.mk
include adapters/jvmti/jvmti.mk

# Fuzz targets: LLVMFuzzerTestOneInput + fuzz/driver.c, which replays the corpus and a
# bounded number of mutations, so every target also runs as a regression test. They link
# the reader library; the audit log's target also every presenter of what it read.
$(BUILD)/fuzz/fuzz_auditlog: $(LOG_OBJ)
$(BUILD)/fuzz/%: fuzz/%.c fuzz/driver.c $(READ_A) $(LIB_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -Itools $(LDFLAGS) -o $@ $< fuzz/driver.c \
	    $(filter %.o,$^) $(READ_A) $(LIB_A) $(LIBS)

# Benchmarks may use the tests' support code (tests/support: e.g. the elfmap witness).
$(BUILD)/bench/%: bench/%.c bench/bench.h $(SUPPORT_A) $(LIB_A) $(MJ_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Iexamples/minijit -Itests/support $(CFLAGS) $(LDFLAGS) -o $@ $< \
	    $(SUPPORT_A) $(MJ_A) $(LIB_A) $(LIBS) -lm

# ---- running --------------------------------------------------------------------------
test: tests programs check-exports check-exports-llvm check-layers
	@BUILD=$(BUILD) tests/run.sh

test-unit: tests
	@BUILD=$(BUILD) TIERS="unit fuzz" tests/run.sh

# The slow tier: real VMs' JIT code under callgrind (Erlang, node, rakudo), a minute or more
# each on a busy machine, so `make test` stays short; CI runs both (.ci/run).
# JH_LOAD=2 (either target): the same tests with both cores kept busy (scripts/busy.sh).
test-slow: tests programs
	@BUILD=$(BUILD) TIERS=slow tests/run.sh

# Sanitizer builds run the unit and fuzz tiers (the integration tier drives perf, gdb and
# valgrind, which do not mix with sanitizer runtimes).
# Both also run the preload library of `jitherald run`, built with their sanitizer, under
# the plain build's run_vm (tests/run/sanitize.sh).
asan:
	$(MAKE) BUILD=build-asan SAN=address,undefined OPT=-O1 test-unit
	$(MAKE) programs
	@tests/run/sanitize.sh build-asan address
# TSan looks for races: the unit tier holds the threaded tests (fuzzing is single-threaded
# and ASan's job).
tsan:
	$(MAKE) BUILD=build-tsan SAN=thread OPT=-O1 tests
	@BUILD=build-tsan TIERS=unit JH_SKIP_LIST=tests/tsan-skip.list JH_SKIP_TAG=tsan tests/run.sh
	$(MAKE) programs
	@tests/run/sanitize.sh build-tsan thread

# Open-ended fuzzing with libFuzzer (clang): `make fuzz` builds build-fuzz/fuzz/*; run one
# with e.g. build-fuzz/fuzz/fuzz_jitdump NEW_DIR fuzz/corpus/jitdump -max_total_time=600
# (new inputs go to the first directory). The code under test is built with
# fuzzer-no-link: without its coverage libFuzzer sees only the target's few edges and
# mutates blind. (A build-fuzz/ from before that: rm -rf build-fuzz.)
FUZZ_LOG_OBJ := $(LOG_OBJ:$(BUILD)/%=build-fuzz/%)
fuzz:
	@mkdir -p build-fuzz/fuzz
	$(MAKE) BUILD=build-fuzz CC=clang SAN=address,undefined,fuzzer-no-link OPT=-O1 \
	    build-fuzz/libjitherald.a build-fuzz/libjitherald-read.a $(FUZZ_LOG_OBJ)
	@for f in $(FUZZ_SRC); do n=$$(basename $$f .c); echo "  FUZZ   build-fuzz/fuzz/$$n"; \
	    objs=; [ $$n = fuzz_auditlog ] && objs="$(FUZZ_LOG_OBJ)"; \
	    clang $(CPPFLAGS) -Itools -g -O1 -fsanitize=fuzzer,address,undefined \
	    -o build-fuzz/fuzz/$$n $$f $$objs build-fuzz/libjitherald-read.a \
	    build-fuzz/libjitherald.a $(LIBS) || exit 1; done

# Every fuzz target in turn for FUZZ_SECONDS (default 60) each, and a table of the
# executions and coverage each reached (docs/fuzzing.md). Not part of CI: open-ended.
.PHONY: fuzz-run
fuzz-run: fuzz
	@scripts/fuzz-run.sh

bench: all $(BENCH_BIN)
	@BUILD=$(BUILD) bench/run.sh

# The demo needs only the library and the demo JIT: a compiler, make and perf
# (scripts/install-deps.sh demo), not LLVM nor the CLI's libraries.
demo: $(LIB_SO) $(BUILD)/examples/minijit
	@BUILD=$(BUILD) examples/demo.sh

# Screenshot of the audit log's HTML report for the README (generated, not committed).
.PHONY: report-demo
report-demo: all
	@BUILD=$(BUILD) tools/report_demo.sh docs/img/auditlog-report.png

# Includes go one way, no .c includes, every lock has a fork path, files stay small
# (docs/architecture.md).
check-layers:
	@scripts/check-layers.sh

# Only jh_* and the two GDB JIT-interface symbols may leave the shared library.
check-exports: $(LIB_SO)
	@bad=$$(nm -D --defined-only $(LIB_SO) | awk '$$2 != "A" {print $$3}' | sed 's/@.*//' | \
	    grep -v -e '^jh_' -e '^__jit_debug_register_code$$' -e '^__jit_debug_descriptor$$' || true); \
	if [ -n "$$bad" ]; then echo "unexpected exports: $$bad"; exit 1; fi

# the LuaJIT adapter's machine-code readers, one per architecture (beside jitherald.lua)
LUA_ARCH := $(sort $(wildcard adapters/luajit/jitherald/*.lua))

install: all install-llvm
	install -d $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR)
	install -m 644 include/jitherald.h $(DESTDIR)$(INCDIR)/
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(RUN_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libjitherald.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
	    -e 's|@VERSION@|$(shell sed -n 's/^#define JH_VERSION_STRING "\(.*\)"/\1/p' include/jitherald.h)|' \
	    jitherald.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/jitherald.pc
	install -m 755 $(CLI) $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3
	install -m 644 $(BUILD)/man/jitherald.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(BUILD)/man/jitherald.3 $(DESTDIR)$(MANDIR)/man3/
	for f in $(BUILD)/man/jh_*.3; do \
	    ln -sf jitherald.3 $(DESTDIR)$(MANDIR)/man3/$${f##*/} || exit 1; done
	install -d $(DESTDIR)$(LUADIR)
	sed -e 's|@LIBDIR@|$(LIBDIR)|' adapters/luajit/jitherald.lua > $(DESTDIR)$(LUADIR)/jitherald.lua
	chmod 644 $(DESTDIR)$(LUADIR)/jitherald.lua
	install -d $(DESTDIR)$(LUADIR)/jitherald
	install -m 644 $(LUA_ARCH) $(DESTDIR)$(LUADIR)/jitherald/

uninstall:
	rm -f $(DESTDIR)$(INCDIR)/jitherald.h $(DESTDIR)$(LIBDIR)/libjitherald.* \
	    $(DESTDIR)$(LIBDIR)/libjitherald-run.so $(DESTDIR)$(LIBDIR)/libjitherald-jvmti.so \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/jitherald.pc $(DESTDIR)$(BINDIR)/jitherald \
	    $(DESTDIR)$(LUADIR)/jitherald.lua $(LUA_ARCH:adapters/luajit/%=$(DESTDIR)$(LUADIR)/%) \
	    $(DESTDIR)$(MANDIR)/man1/jitherald.1 \
	    $(DESTDIR)$(INCDIR)/jitherald/llvm.h $(DESTDIR)$(LIBDIR)/libjitherald-llvm.* \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/jitherald-llvm.pc
	-rmdir $(DESTDIR)$(INCDIR)/jitherald $(DESTDIR)$(LUADIR)/jitherald 2>/dev/null
	for f in $(BUILD)/man/*.3; do rm -f $(DESTDIR)$(MANDIR)/man3/$${f##*/}; done

clean:
	rm -rf build build-*

help:
	@echo "make [all]         library (static + shared), CLI, examples    (V=1: full commands)"
	@echo "make demo          run the demo JIT and show what the tools see"
	@echo "make test          unit, fuzz regression, integration with real tools (JH_LOAD=2: busy cores)"
	@echo "make test-slow     the slow tier: Erlang, node and rakudo JIT code under callgrind"
	@echo "make asan | tsan   unit + fuzz tiers under ASan+UBSan / TSan"
	@echo "make programs      the programs the integration tests run (make test builds them)"
	@echo "make bench         benchmarks beside their peers (never fails on a number)"
	@echo "make fuzz          libFuzzer builds of the fuzz targets (clang) in build-fuzz/"
	@echo "make fuzz-run      each target FUZZ_SECONDS (60) under libFuzzer, a table of executions"
	@echo "make jvmti         the JVMTI agent build/libjitherald-jvmti.so (make builds it when jvmti.h is there)"
	@echo "make test-arm64    unit + fuzz tiers and tests/arm64 cross-built for arm64, under qemu-aarch64"
	@echo "make win64         Windows x64 build with mingw-w64 in build-win64/ (docs/windows.md)"
	@echo "make win64-tests   the Windows programs make test runs under Wine"
	@echo "make win64-examples  examples/win64 (longjmp through JIT frames) in build-win64/examples"
	@echo "make bench-win64   the Windows unwind benchmark under Wine"
	@echo "make report-demo   the audit log HTML report of the demo, and its screenshot"
	@echo "make install PREFIX=/usr/local   (LuaJIT adapter: \$$PREFIX/share/lua/5.1/jitherald.lua;"
	@echo "                                  man pages jitherald(1), jitherald(3), jh_*(3))"
