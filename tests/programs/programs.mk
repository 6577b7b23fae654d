# tests/programs/programs.mk — included by the Makefile: the programs the integration
# scripts run (`make programs`, part of `make test`), each with the flags and libraries it
# needs, into $(BUILD)/tests/programs/. A program whose library is not installed here is
# not built: NAME.missing says which library it lacked, and the script that runs it skips
# saying so (tests/integration/lib.sh: program). install_user.c is compiled by its script,
# against the installed tree: that is what it tests.
PROG_DIR := $(BUILD)/tests/programs
PROG_CFLAGS := $(TEST_CPPFLAGS) $(CFLAGS)
# Linked with the shared library, as a user's program is (found next to the build's).
PROG_SHARED := -L$(BUILD) -ljitherald -Wl,-rpath,'$$ORIGIN/../..'
# Linked with the static library and the demo JIT's compiler.
PROG_STATIC := $(SUPPORT_A) $(MJ_A) $(LIB_A) $(LIBS)

MSGPACK_PKG := $(firstword $(shell for p in msgpack-c msgpack; do pkg-config --exists $$p 2>/dev/null && echo $$p; done))
LIBUNWIND_PKG := $(shell pkg-config --exists libunwind 2>/dev/null && echo libunwind)
LLVM_LIBUNWIND := $(firstword $(wildcard /usr/lib/llvm-*/lib/libunwind.so.1 /usr/lib/*-linux-gnu/libunwind.so.1))

# name: built if the condition is non-empty, else NAME.missing holds the reason.
PROGRAMS :=
define program
PROGRAMS += $$(PROG_DIR)/$(1)$(if $(2),,.missing)
$$(PROG_DIR)/$(1).missing:
	@mkdir -p $$(@D)
	@echo '$(3)' > $$@
endef
$(eval $(call program,auditlog_dwarf_vm,yes))
$(eval $(call program,auditlog_ref_vm,yes))
$(eval $(call program,gdb_move,yes))
$(eval $(call program,gdb_names,yes))
$(eval $(call program,gdb_grow_attach,yes))
$(eval $(call program,gdb_own_descriptor,yes))
$(eval $(call program,gdb_own_descriptor_rdynamic,yes))
$(eval $(call program,luajit_abi,yes))
$(eval $(call program,churn_rows,yes))
$(eval $(call program,jitdump_move,yes))
$(eval $(call program,cg_invariants,yes))
$(eval $(call program,mj_lines,yes))
$(eval $(call program,run_vm,yes))
$(eval $(call program,run_harm,yes))
$(eval $(call program,run_deepbind,yes))
$(eval $(call program,unwind_asan,yes))
$(eval $(call program,attach_unwind,yes))
$(eval $(call program,clean_fork,yes))
$(eval $(call program,no_shared_map.so,yes))
$(eval $(call program,auditlog_msgpack_walk,$(MSGPACK_PKG),msgpack-c missing (Debian package libmsgpack-dev)))
$(eval $(call program,unwind_libunwind,$(LIBUNWIND_PKG),libunwind.h missing (Debian package libunwind-dev)))
$(eval $(call program,unwind_llvm,$(LLVM_LIBUNWIND),LLVM libunwind missing (Debian package libunwind-14)))
$(foreach p,llvm_first jh_first static,$(eval $(call program,gdb_coexist_$(p),$(LLVM_CONFIG),llvm-config-14 missing (Debian package llvm-14-dev))))
# the LLVM adapter's test JIT (its rule: adapters/llvm/llvm.mk)
$(eval $(call program,llvm_jit,$(and $(LLVM_CONFIG),$(CLANG14),$(CLANGXX14)),llvm-config-14 or clang-14 missing (Debian packages llvm-14-dev clang-14)))

programs: $(PROGRAMS)

$(PROG_DIR)/auditlog_dwarf_vm $(PROG_DIR)/auditlog_ref_vm $(PROG_DIR)/gdb_move $(PROG_DIR)/gdb_names $(PROG_DIR)/luajit_abi \
    $(PROG_DIR)/gdb_grow_attach \
    $(PROG_DIR)/churn_rows: $(PROG_DIR)/%: tests/programs/%.c $(LIB_SO)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O0 $(LDFLAGS) -o $@ $< $(PROG_SHARED)

$(PROG_DIR)/jitdump_move: tests/programs/jitdump_move.c $(LIB_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O1 $(LDFLAGS) -o $@ $< $(LIB_A) $(LIBS)

# A fork child running in its exited parent's elfmap image (elfmap_clean.sh).
$(PROG_DIR)/clean_fork: tests/programs/clean_fork.c $(LIB_A) $(MJ_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O1 $(LDFLAGS) -o $@ $< $(MJ_A) $(LIB_A) $(LIBS)

# A program with a JIT interface of its own (as PHP's): exported to the dynamic symbol
# table because libjitherald.so defines the same names, and with -rdynamic (as php).
$(PROG_DIR)/gdb_own_descriptor: tests/programs/gdb_own_descriptor.c $(LIB_SO)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O0 $(LDFLAGS) -o $@ $< $(PROG_SHARED) -ldl

$(PROG_DIR)/gdb_own_descriptor_rdynamic: tests/programs/gdb_own_descriptor.c $(LIB_SO)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O0 -rdynamic $(LDFLAGS) -o $@ $< $(PROG_SHARED) -ldl

# VMs that know nothing of jitherald: they link neither library (the preload brings them).
$(PROG_DIR)/run_vm $(PROG_DIR)/run_harm: $(PROG_DIR)/%: tests/programs/%.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O1 $(LDFLAGS) -o $@ $< -lpthread -ldl -lgcc_s -Wno-unused-result

# A VM whose JIT is a plugin loaded with RTLD_DEEPBIND (as PHP's opcache.so), found by its
# bare name through the program's RUNPATH; the plugin BIND_NOW + RELRO, as Debian's.
$(PROG_DIR)/run_deepbind: tests/programs/run_deepbind.c $(PROG_DIR)/deepbind/run_deepbind_vm.so
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O1 $(LDFLAGS) -o $@ $< -ldl -Wl,-rpath,'$$ORIGIN/deepbind'

$(PROG_DIR)/deepbind/run_deepbind_vm.so: tests/programs/run_deepbind_vm.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O1 -fPIC -shared -Wl,-z,relro,-z,now $(LDFLAGS) -o $@ $<

# A file system that cannot map the jitdump shared and writable (jitdump_nomap.sh).
$(PROG_DIR)/no_shared_map.so: tests/programs/no_shared_map.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O1 -fPIC -shared $(LDFLAGS) -o $@ $< -ldl

# A callgrind reader and a perf map / jitdump reader of its own: no tools/lib code.
$(PROG_DIR)/cg_invariants: tests/programs/cg_invariants.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) $(LDFLAGS) -o $@ $<

# The demo JIT's compiler alone (its line tables, the truth line checks compare with).
$(PROG_DIR)/mj_lines: tests/programs/mj_lines.c $(MJ_A) $(LIB_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) $(LDFLAGS) -o $@ $< $(MJ_A) $(LIB_A) $(LIBS)

# ASan's fatal report uses the slow unwinder (_Unwind_Backtrace): it must cross JIT frames.
# -O1 as unwind_libunwind: at -O2 main's frame is in code _Unwind_FindEnclosingFunction
# does not give main's address for (the check of the walk's root).
$(PROG_DIR)/attach_unwind: tests/programs/attach_unwind.cc $(TEST_HDR) $(SUPPORT_A) $(LIB_A) $(MJ_A)
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(TEST_CPPFLAGS) $(CXXFLAGS) -O1 $(LDFLAGS) -o $@ $< $(PROG_STATIC)

$(PROG_DIR)/unwind_asan: tests/programs/unwind_asan.c $(TEST_HDR) $(SUPPORT_A) $(LIB_A) $(MJ_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O1 -fsanitize=address $(LDFLAGS) -o $@ $< $(PROG_STATIC)

$(PROG_DIR)/auditlog_msgpack_walk: tests/programs/auditlog_msgpack_walk.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) $(shell pkg-config --cflags $(MSGPACK_PKG)) $(LDFLAGS) -o $@ $< \
	    $(shell pkg-config --libs $(MSGPACK_PKG))

$(PROG_DIR)/unwind_libunwind: tests/programs/unwind_libunwind.cc $(TEST_HDR) $(SUPPORT_A) $(LIB_A) $(MJ_A)
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(TEST_CPPFLAGS) $(CXXFLAGS) -O1 $(shell pkg-config --cflags libunwind) $(LDFLAGS) \
	    -o $@ $< $(PROG_STATIC) $(shell pkg-config --libs libunwind)

# LLVM's libunwind ahead of libgcc_s, so that its _Unwind_Backtrace is the one called.
$(PROG_DIR)/unwind_llvm: tests/programs/unwind_llvm.c $(TEST_HDR) $(SUPPORT_A) $(LIB_A) $(MJ_A)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O1 $(LDFLAGS) -o $@ $< $(SUPPORT_A) $(MJ_A) $(LIB_A) \
	    $(LLVM_LIBUNWIND) -Wl,-rpath,$(dir $(LLVM_LIBUNWIND)) $(LIBS)

# The link order decides which JIT interface the dynamic linker (and lldb) finds first.
$(BUILD)/obj/tests/programs/gdb_coexist.o: tests/programs/gdb_coexist.c include/jitherald.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -O0 $$($(LLVM_CONFIG) --cflags) -c $< -o $@

$(PROG_DIR)/gdb_coexist_llvm_first: $(BUILD)/obj/tests/programs/gdb_coexist.o $(LIB_SO)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $$($(LLVM_CONFIG) --ldflags --libs) $(PROG_SHARED)

$(PROG_DIR)/gdb_coexist_jh_first: $(BUILD)/obj/tests/programs/gdb_coexist.o $(LIB_SO)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(PROG_SHARED) $$($(LLVM_CONFIG) --ldflags --libs)

# Static: LLVM's GDB listener then resolves __jit_debug_descriptor to ours. Static LLVM
# links with warnings (getpwuid and friends in a static binary): shown only on failure.
$(PROG_DIR)/gdb_coexist_static: $(BUILD)/obj/tests/programs/gdb_coexist.o $(LIB_A)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $< $(LIB_A) \
	    $$($(LLVM_CONFIG) --link-static --ldflags --libs orcjit native) \
	    $$($(LLVM_CONFIG) --link-static --system-libs) $(LIBS) 2>$@.log || \
	    { grep -v warning $@.log; rm -f $@.log; exit 1; }
	@rm -f $@.log
