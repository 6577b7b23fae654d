# win64.mk — included by the Makefile: jitherald for Windows x64, cross-built with mingw-w64
# into build-win64/ (`make win64`), and the Windows programs the Wine tests run
# (`make win64-tests`, part of `make test` when the cross compiler is installed).
#   build-win64/libjitherald.a       static library
#   build-win64/jitherald.dll        the DLL, exporting the jh_* of src/jitherald.map
#   build-win64/libjitherald.dll.a   its import library
# Windows gets the channels it has consumers for: unwind (SEH, C++ exceptions, longjmp,
# RtlVirtualUnwind, stack walks) and the audit log. The others are left out
# (channels/absent_win.c). Files named *_win.c are the Windows side of a platform
# difference; the POSIX side of each is not built here.
WIN_BUILD ?= build-win64
WIN_CC    ?= x86_64-w64-mingw32-gcc
WIN_CXX   ?= x86_64-w64-mingw32-g++
WIN_AR    ?= x86_64-w64-mingw32-ar
WIN_OBJDUMP ?= x86_64-w64-mingw32-objdump
HAVE_MINGW := $(shell command -v $(WIN_CC) >/dev/null 2>&1 && command -v $(WIN_CXX) >/dev/null 2>&1 && echo yes)

# Windows 7 and later (SRW locks with TryAcquire, InitOnce). mingw's own printf family
# (__USE_MINGW_ANSI_STDIO) understands %zu and %llu, which msvcrt's does not.
WIN_CPPFLAGS := -Iinclude -Isrc -D_WIN32_WINNT=0x0601 -D__USE_MINGW_ANSI_STDIO=1
WIN_CFLAGS   := -std=c11 $(OPT) -g -fno-omit-frame-pointer $(WARN)
WIN_CXXFLAGS := -std=c++17 $(OPT) -g -fno-omit-frame-pointer $(WARN)

WIN_LIB_SRC := $(addprefix src/base/,buf.c vec.c chanlist.c diag.c registry.c lock_win.c os_win.c files_win.c) \
               $(addprefix src/fmt/,arch.c auditlog.c cfa.c cfi.c cfi_hdr.c cfi_pac.c cfi_reuse.c eh_frame.c msgpack.c symbol.c unwind_info.c) \
               $(filter-out src/core/control.c src/core/gdb_object.c,$(sort $(wildcard src/core/*.c))) \
               $(sort $(wildcard src/channels/unwind*_win.c)) \
               $(addprefix src/channels/,auditlog.c auditlog_ref.c auditlog_ring_win.c absent_win.c) \
               $(LUAJIT_SRC)
WIN_LIB_OBJ := $(WIN_LIB_SRC:%.c=$(WIN_BUILD)/%.o)
WIN_LIB_A   := $(WIN_BUILD)/libjitherald.a
WIN_DLL     := $(WIN_BUILD)/jitherald.dll
WIN_IMPLIB  := $(WIN_BUILD)/libjitherald.dll.a
WIN_DEF     := $(WIN_BUILD)/jitherald.def
WIN_SYSLIBS :=

.PHONY: win64 win64-tests win64-check-exports bench-win64

# `make test` builds the Windows programs too when the cross compiler is here (the Wine
# tests skip, saying so, when it is not); `make bench` runs the Windows benchmark.
ifeq ($(HAVE_MINGW),yes)
test: win64-tests win64-check-exports
bench: $(WIN_BUILD)/bench/bench_unwind.exe
endif
win64: $(WIN_LIB_A) $(WIN_DLL)

$(WIN_BUILD)/src/%.o: src/%.c $(wildcard src/*/*.h) include/jitherald.h
	$(call msg,WINCC,$<)
	@mkdir -p $(@D)
	$(Q)$(WIN_CC) $(WIN_CPPFLAGS) $(WIN_CFLAGS) -c $< -o $@

$(WIN_BUILD)/adapters/luajit/%.o: adapters/luajit/%.c adapters/luajit/trace.h adapters/luajit/events.h include/jitherald.h
	$(call msg,WINCC,$<)
	@mkdir -p $(@D)
	$(Q)$(WIN_CC) $(WIN_CPPFLAGS) $(WIN_CFLAGS) -c $< -o $@

$(WIN_LIB_A): $(WIN_LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(WIN_AR) rcs $@ $^

# The DLL exports what the version script lists for ELF, minus the GDB JIT interface's two
# symbols (no gdb channel here): one list of the API, in src/jitherald.map.
$(WIN_DEF): src/jitherald.map
	@mkdir -p $(@D)
	$(Q){ echo EXPORTS; tr ' ;' '\n\n' < $< | grep -E '^jh_[a-z_]+$$' | sed 's/^/    /'; } > $@

# libgcc linked in, so the DLL needs nothing beyond what every Windows has.
$(WIN_DLL): $(WIN_LIB_OBJ) $(WIN_DEF)
	$(call msg,LD,$@)
	$(Q)$(WIN_CC) -shared -static-libgcc -o $@ $(WIN_LIB_OBJ) $(WIN_DEF) \
	    -Wl,--out-implib,$(WIN_IMPLIB) $(WIN_SYSLIBS)

# Only the jh_* functions leave the DLL.
win64-check-exports: $(WIN_DLL) $(WIN_DEF)
	@got=$$($(WIN_OBJDUMP) -p $(WIN_DLL) | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$$/p' | \
	    awk '/\[ *[0-9]+\]/ {print $$NF}' | sort); \
	want=$$(sed -n 's/^    //p' $(WIN_DEF) | sort); \
	if [ "$$got" != "$$want" ]; then echo "jitherald.dll exports differ from $(WIN_DEF):"; \
	    echo "want: $$want"; echo "got:  $$got"; exit 1; fi

# ---- the Windows test programs (run under Wine by tests/integration/win64_*.sh) -----------
# Statically linked (libgcc, libstdc++), so Wine needs nothing but the .exe; dll_test.exe
# links the DLL through its import library, as a user's program would.
WIN_TEST_DIR := $(WIN_BUILD)/tests
WIN_TESTS := $(WIN_TEST_DIR)/unwind_test.exe $(WIN_TEST_DIR)/dll_test.exe \
             $(WIN_TEST_DIR)/auditlog_test.exe $(WIN_TEST_DIR)/jitherald.dll
WIN_TEST_FLAGS := $(WIN_CPPFLAGS) -Itests/win64
WIN_EXAMPLES := $(WIN_BUILD)/examples/longjmp_vm.exe $(WIN_BUILD)/examples/jitherald.dll

win64-tests: win64 $(WIN_TESTS) $(WIN_EXAMPLES)

$(WIN_TEST_DIR)/wjit.o: tests/win64/wjit.c tests/win64/wjit.h include/jitherald.h
	$(call msg,WINCC,$<)
	@mkdir -p $(@D)
	$(Q)$(WIN_CC) $(WIN_TEST_FLAGS) $(WIN_CFLAGS) -c $< -o $@

$(WIN_TEST_DIR)/unwind_test.exe: tests/win64/unwind_test.cc $(WIN_TEST_DIR)/wjit.o $(WIN_LIB_A)
	$(call msg,WINCXX,$<)
	$(Q)$(WIN_CXX) $(WIN_TEST_FLAGS) $(WIN_CXXFLAGS) -o $@ $< $(WIN_TEST_DIR)/wjit.o \
	    $(WIN_LIB_A) -static

$(WIN_TEST_DIR)/auditlog_test.exe: tests/win64/auditlog_test.c $(WIN_TEST_DIR)/wjit.o $(WIN_LIB_A)
	$(call msg,WINCC,$<)
	$(Q)$(WIN_CC) $(WIN_TEST_FLAGS) $(WIN_CFLAGS) -o $@ $< $(WIN_TEST_DIR)/wjit.o $(WIN_LIB_A) -static

$(WIN_TEST_DIR)/dll_test.exe: tests/win64/dll_test.c $(WIN_IMPLIB)
	$(call msg,WINCC,$<)
	$(Q)$(WIN_CC) $(WIN_TEST_FLAGS) $(WIN_CFLAGS) -o $@ $< -L$(WIN_BUILD) -ljitherald

$(WIN_IMPLIB): $(WIN_DLL)

# Windows finds a program's DLLs next to it.
$(WIN_TEST_DIR)/jitherald.dll: $(WIN_DLL)
	@mkdir -p $(@D)
	$(Q)cp $< $@

# ---- the Windows example (examples/win64), linked with the DLL as a user's program is ----
.PHONY: win64-examples
win64-examples: $(WIN_EXAMPLES)

$(WIN_BUILD)/examples/%.exe: examples/win64/%.c include/jitherald.h $(WIN_IMPLIB)
	$(call msg,WINCC,$<)
	@mkdir -p $(@D)
	$(Q)$(WIN_CC) -Iinclude $(WIN_CFLAGS) -fomit-frame-pointer -o $@ $< -L$(WIN_BUILD) -ljitherald

$(WIN_BUILD)/examples/jitherald.dll: $(WIN_DLL)
	@mkdir -p $(@D)
	$(Q)cp $< $@

# ---- the benchmark (bench/win64.sh runs it under Wine; `make bench` runs that script) ----
WIN_BENCH := $(WIN_BUILD)/bench/bench_unwind.exe
bench-win64: $(WIN_BENCH)
	@bash bench/win64.sh

$(WIN_BENCH): bench/win64/unwind.cc $(WIN_TEST_DIR)/wjit.o $(WIN_LIB_A)
	$(call msg,WINCXX,$<)
	@mkdir -p $(@D)
	$(Q)$(WIN_CXX) $(WIN_TEST_FLAGS) $(WIN_CXXFLAGS) -o $@ $< $(WIN_TEST_DIR)/wjit.o \
	    $(WIN_LIB_A) -static
