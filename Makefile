# opdoctor: venv, reference operator, fixtures, tests, demo.
#   make demo   — check the bundled reference operator (clean) and one broken fixture (fails)
#   make test   — build everything needed and run the test suite
#   make fuzz   — a long fuzzing campaign of the static check (N=20000 inputs, SEED=campaign)
# Builds are incremental and parallel (make -jN); objects are shared between fixture variants.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BUILD ?= build
OBJ := $(BUILD)/obj
FIX := $(BUILD)/fixtures
SKIP := $(FIX)/skipped
NPROC := $(shell nproc 2>/dev/null || echo 2)
# pytest-xdist workers: one more than the cores. A probe test waits (a hang's timeout, a
# framework child's start, a rank's rendezvous) while its worker holds no core; the spare
# worker runs a test meanwhile (whole suite 249 -> 213 s on 2 cores, same CPU time).
# benchmarks/bench_tests.py times the suite with the same count (_bench.test_workers).
TEST_WORKERS := $(shell echo $$(( $(NPROC) + 1 )))
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CUDA_HOME ?= $(if $(wildcard /usr/local/cuda/lib64/),/usr/local/cuda,$(patsubst %/bin/nvcc,%,$(realpath $(NVCC))))
AARCH64_AS ?= $(shell command -v aarch64-linux-gnu-as 2>/dev/null)
AARCH64_LD ?= $(shell command -v aarch64-linux-gnu-ld 2>/dev/null)
CC ?= gcc
CXX ?= g++
SRC := native/myop
IFX := tests/fixtures/integrity

.DEFAULT_GOAL := all
.PHONY: all venv venv-tf venv-ms reference fixtures truth test demo lint bench fuzz clean distclean readme startup-tables realworld compile
# Keep intermediate objects (shared between fixture variants) so rebuilds stay incremental.
.SECONDARY:

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# Facts about the torch we build against (include dirs, lib dir, CXX11 ABI), as make variables.
$(BUILD)/config.mk: $(VENV)/.installed native/torch_config.py
	mkdir -p $(BUILD)
	$(PY) native/torch_config.py > $@.tmp 2>/dev/null && mv $@.tmp $@

ifeq ($(filter clean distclean,$(MAKECMDGOALS)),)
include $(BUILD)/config.mk
endif

CXXFLAGS_NOABI := -O2 -fPIC -std=c++20 $(TORCH_INCLUDES)
CXXFLAGS_TORCH_PLAIN := $(CXXFLAGS_NOABI) -D_GLIBCXX_USE_CXX11_ABI=$(TORCH_ABI)
# A precompiled <torch/library.h> + <ATen/ATen.h> (native/torch_pch.h) speeds each translation
# unit that includes <torch/library.h> first from ~7 s to ~2 s: g++ looks for
# $(PCH_DIR)/torch/library.h.gch before the header, and uses it only when the unit's flags and
# macros match the ones it was built with (it checks; the output is byte-identical). Units built
# with other flags (another C++11 ABI, -O0 -g) silently read the headers as before. g++ does
# not check include paths: a unit that must see other headers under the same names (another
# torch, another abseil) compiles with CXXFLAGS_TORCH_PLAIN.
# One directory per torch release: a .gch of another release's headers is never on the path.
PCH_DIR := $(BUILD)/pch/$(TORCH_VERSION)
PCH_STAMP := $(PCH_DIR)/.built
CXXFLAGS_TORCH := -I$(PCH_DIR) $(CXXFLAGS_TORCH_PLAIN)
LDFLAGS_TORCH := -shared -L$(TORCH_LIBDIR) -lc10 -ltorch_cpu
NVCC_ARCH := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90

# ---------------------------------------------------------------- reference operator
# The stamp is made even when g++ cannot build the header (another compiler, no space): the
# units then compile from the headers, only slower. Where the .gch cannot serve an #include (a
# nested one, other flags) g++ reads the header beside it, which defers to torch's own. Both
# appear at once (mv), so a unit compiling meanwhile sees either torch's header or them.
$(PCH_STAMP): native/torch_pch.h $(BUILD)/config.mk
	@mkdir -p $(PCH_DIR)/torch
	rm -f $(PCH_DIR)/torch/library.h.gch
	echo '#include_next <torch/library.h>' > $(PCH_DIR)/torch/library.h.tmp
	mv $(PCH_DIR)/torch/library.h.tmp $(PCH_DIR)/torch/library.h
	$(CXX) $(CXXFLAGS_TORCH_PLAIN) -x c++-header $< -o $(PCH_DIR)/torch/library.h.gch.tmp \
	  && mv $(PCH_DIR)/torch/library.h.gch.tmp $(PCH_DIR)/torch/library.h.gch \
	  || { rm -f $(PCH_DIR)/torch/library.h.gch.tmp; echo "precompiled header not built: compiling without it"; }
	touch $@

ifneq ($(NVCC),)
REF_OBJS := $(OBJ)/weighted_sum.o $(OBJ)/weighted_sum_cuda.o $(OBJ)/weighted_sum_kernel.o
REF_LIBS := -L$(CUDA_HOME)/lib64 -lcudart
CUDA_NOTE :=
else
REF_OBJS := $(OBJ)/weighted_sum.o
REF_LIBS :=
CUDA_NOTE := nvcc not found: the reference operator is built CPU-only (no CUDA kernel)
endif

# Not waiting for the precompiled header: make demo never builds it, and in make fixtures these
# two units compile beside it (using it if it is already there: the same objects either way).
$(OBJ)/%.o: $(SRC)/%.cpp $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) -c $< -o $@

$(OBJ)/weighted_sum_kernel.o: $(SRC)/weighted_sum_kernel.cu
	@mkdir -p $(@D)
	$(NVCC) -O2 -Xcompiler -fPIC $(NVCC_ARCH) -c $< -o $@

$(BUILD)/myop/libmyop.so: $(REF_OBJS)
	@mkdir -p $(@D)
	$(CXX) -o $@ $^ $(LDFLAGS_TORCH) $(REF_LIBS)

# The importable package: myop/__init__.py loads libmyop.so from its own directory.
$(BUILD)/pkg/myop/libmyop.so: $(BUILD)/myop/libmyop.so $(SRC)/python/myop/__init__.py
	@mkdir -p $(@D)
	cp $(SRC)/python/myop/__init__.py $(@D)/__init__.py
	cp $< $@

reference: $(BUILD)/myop/libmyop.so $(BUILD)/pkg/myop/libmyop.so

# ---------------------------------------------------------------- integrity fixtures (cause 4)
INTEGRITY := empty truncated not_elf lfs_pointer relocatable executable pie textrel \
             elf32 execstack aarch64
INTEGRITY_SO := $(patsubst %,$(FIX)/integrity/%.so,$(INTEGRITY))

$(FIX)/integrity/empty.so:
	@mkdir -p $(@D)
	: > $@
# Cut the real reference operator short: headers intact, sections past the end.
$(FIX)/integrity/truncated.so: $(BUILD)/myop/libmyop.so
	@mkdir -p $(@D)
	head -c 4096 $< > $@
$(FIX)/integrity/not_elf.so: $(IFX)/not_elf.txt
	@mkdir -p $(@D)
	cp $< $@
$(FIX)/integrity/lfs_pointer.so: $(IFX)/lfs_pointer.txt
	@mkdir -p $(@D)
	cp $< $@
$(FIX)/integrity/relocatable.so: $(IFX)/tiny.c
	@mkdir -p $(@D)
	$(CC) -c -fPIC $< -o $@
$(FIX)/integrity/executable.so: $(IFX)/tiny_main.c
	@mkdir -p $(@D)
	$(CC) -no-pie $< -o $@
$(FIX)/integrity/pie.so: $(IFX)/tiny_main.c
	@mkdir -p $(@D)
	$(CC) -fPIE -pie $< -o $@
$(FIX)/integrity/textrel.so: $(IFX)/textrel.S
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-z,notext $< -o $@
# -nostdlib: no 32-bit libc is needed to link a real ELF32 i386 shared object.
$(FIX)/integrity/elf32.so: $(IFX)/tiny.c
	@mkdir -p $(@D)
	$(CC) -m32 -shared -fPIC -nostdlib $< -o $@ 2>/dev/null \
	  || { mkdir -p $(SKIP); echo "$(CC) -m32 cannot build a 32-bit object here" > $(SKIP)/elf32.so.txt; }
$(FIX)/integrity/execstack.so: $(IFX)/tiny.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -Wl,-z,execstack $< -o $@
$(FIX)/integrity/aarch64.so: $(IFX)/aarch64.S
	@mkdir -p $(@D) $(SKIP)
ifneq ($(AARCH64_AS),)
	$(AARCH64_AS) $< -o $(@:.so=.o) && $(AARCH64_LD) -shared $(@:.so=.o) -o $@ && rm -f $(@:.so=.o)
	rm -f $(SKIP)/aarch64.so.txt  # a note left from before the tools were installed
else
	echo "aarch64-linux-gnu-as not installed (apt-get install binutils-aarch64-linux-gnu)" > $(SKIP)/aarch64.so.txt
endif

# ---------------------------------------------------------------- loader fixtures (causes 2, 3)
LSRC := tests/fixtures/loader
LFX := $(FIX)/loader
LOADER_SO := $(LFX)/depdir/libmyop_dep.so $(LFX)/uses_dep.so $(LFX)/wrong_runpath.so \
  $(LFX)/chain_deps/libchain_c.so $(LFX)/chain_deps/libchain_b.so $(LFX)/chain_a_rpath.so \
  $(LFX)/chain_a_runpath.so $(LFX)/ver_v1/libverdep.so $(LFX)/ver_v2/libverdep.so \
  $(LFX)/uses_verdep.so $(LFX)/abi0.so $(LFX)/other_torch.so $(LFX)/pybind_mismatch.so \
  $(LFX)/pybind_other_torch.so

$(LFX)/depdir/libmyop_dep.so: $(LSRC)/dep.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -Wl,-soname,libmyop_dep.so $< -o $@
# No RPATH/RUNPATH: found only when LD_LIBRARY_PATH names depdir/.
$(LFX)/uses_dep.so: $(LSRC)/uses_dep.c $(LFX)/depdir/libmyop_dep.so
	$(CC) -shared -fPIC $< -L$(LFX)/depdir -lmyop_dep -o $@
# A RUNPATH that points nowhere (a build directory that does not exist here).
$(LFX)/wrong_runpath.so: $(LSRC)/uses_dep.c $(LFX)/depdir/libmyop_dep.so
	$(CC) -shared -fPIC $< -L$(LFX)/depdir -lmyop_dep \
	  -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/no_such_dir' -o $@
$(LFX)/chain_deps/libchain_c.so: $(LSRC)/chain_c.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -Wl,-soname,libchain_c.so $< -o $@
$(LFX)/chain_deps/libchain_b.so: $(LSRC)/chain_b.c $(LFX)/chain_deps/libchain_c.so
	$(CC) -shared -fPIC -Wl,-soname,libchain_b.so $< -L$(LFX)/chain_deps -lchain_c -o $@
$(LFX)/chain_a_rpath.so: $(LSRC)/chain_a.c $(LFX)/chain_deps/libchain_b.so
	$(CC) -shared -fPIC $< -L$(LFX)/chain_deps -lchain_b -Wl,-rpath-link,$(LFX)/chain_deps \
	  -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/chain_deps' -o $@
$(LFX)/chain_a_runpath.so: $(LSRC)/chain_a.c $(LFX)/chain_deps/libchain_b.so
	$(CC) -shared -fPIC $< -L$(LFX)/chain_deps -lchain_b -Wl,-rpath-link,$(LFX)/chain_deps \
	  -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/chain_deps' -o $@
$(LFX)/ver_v1/libverdep.so: $(LSRC)/verdep.c $(LSRC)/verdep_v1.map
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -Wl,-soname,libverdep.so -Wl,--version-script=$(LSRC)/verdep_v1.map $< -o $@
$(LFX)/ver_v2/libverdep.so: $(LSRC)/verdep.c $(LSRC)/verdep_v2.map
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -DVERDEP_V2 -Wl,-soname,libverdep.so \
	  -Wl,--version-script=$(LSRC)/verdep_v2.map $< -o $@
# Linked against the 2.0 release, run against the 1.0 release its RUNPATH points at.
$(LFX)/uses_verdep.so: $(LSRC)/uses_verdep.c $(LFX)/ver_v2/libverdep.so $(LFX)/ver_v1/libverdep.so
	$(CC) -shared -fPIC $< -L$(LFX)/ver_v2 -lverdep -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/ver_v1' -o $@
# The reference operator compiled with the other C++11 ABI than torch's.
$(OBJ)/weighted_sum_abi_other.o: $(SRC)/weighted_sum.cpp $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_NOABI) -D_GLIBCXX_USE_CXX11_ABI=$(if $(filter 1,$(TORCH_ABI)),0,1) -c $< -o $@
$(LFX)/abi0.so: $(OBJ)/weighted_sum_abi_other.o
	@mkdir -p $(@D)
	$(CXX) -o $@ $^ $(LDFLAGS_TORCH)
$(LFX)/other_torch.so: $(LSRC)/other_torch.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) $< -o $@ $(LDFLAGS_TORCH)
$(LFX)/pybind_mismatch.so: $(LSRC)/pybind_mismatch.cpp $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CXX) -shared -fPIC -O1 -std=c++17 -DPYBIND11_INTERNALS_VERSION=12 $(TORCH_INCLUDES) \
	  -isystem $(PY_INCLUDE) $< -L$(TORCH_LIBDIR) -Wl,--no-as-needed -lc10 -o $@
# The same extension built for another torch release too (its pybind11 and a c10 signature).
$(LFX)/pybind_other_torch.so: $(LSRC)/pybind_mismatch.cpp $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CXX) -shared -fPIC -O1 -std=c++17 -DPYBIND11_INTERNALS_VERSION=12 -DOTHER_TORCH \
	  $(TORCH_INCLUDES) -isystem $(PY_INCLUDE) $< -L$(TORCH_LIBDIR) -Wl,--no-as-needed -lc10 -o $@

# ---------------------------------------------------------------- registration fixtures (cause 1)
RSRC := tests/fixtures/registration
RFX := $(FIX)/registration
REG_VARIANTS := no_registration bad_schema extension_name def_only impl_only
FLAGS_no_registration := -DMYOP_NO_REGISTRATION
FLAGS_bad_schema := -DMYOP_BAD_SCHEMA
FLAGS_extension_name := -DMYOP_EXTENSION_NAME_NS
FLAGS_def_only := -DMYOP_DEF_ONLY
FLAGS_impl_only := -DMYOP_IMPL_ONLY
REGISTRATION_SO := $(patsubst %,$(RFX)/%.so,$(REG_VARIANTS) cpu_only stripped entry_ok \
                     entry_hidden entry_mangled legacy legacy_stripped)

$(OBJ)/ws_%.o: $(SRC)/weighted_sum.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) $(FLAGS_$*) -c $< -o $@
$(RFX)/%.so: $(OBJ)/ws_%.o
	@mkdir -p $(@D)
	$(CXX) -o $@ $^ $(LDFLAGS_TORCH)
# The reference's CPU half alone: defines the op, registers only a CPU kernel.
$(RFX)/cpu_only.so: $(OBJ)/weighted_sum.o
	@mkdir -p $(@D)
	$(CXX) -o $@ $^ $(LDFLAGS_TORCH)
$(RFX)/stripped.so: $(BUILD)/myop/libmyop.so
	@mkdir -p $(@D)
	strip --strip-all -o $@ $<
# The legacy registrar (torch::RegisterOperators), as torch_scatter registers: survey 22.
$(OBJ)/reg_legacy.o: $(RSRC)/legacy.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) -c $< -o $@
$(RFX)/legacy.so: $(OBJ)/reg_legacy.o
	@mkdir -p $(@D)
	$(CXX) -o $@ $^ $(LDFLAGS_TORCH)
$(RFX)/legacy_stripped.so: $(RFX)/legacy.so
	strip --strip-all -o $@ $<
$(RFX)/entry_ok.so: $(RSRC)/entry.cpp
	@mkdir -p $(@D)
	$(CXX) -shared -fPIC $< -o $@
$(RFX)/entry_hidden.so: $(RSRC)/entry.cpp
	@mkdir -p $(@D)
	$(CXX) -shared -fPIC -fvisibility=hidden $< -o $@
$(RFX)/entry_mangled.so: $(RSRC)/entry.cpp
	@mkdir -p $(@D)
	$(CXX) -shared -fPIC -DENTRY_NO_EXTERN_C $< -o $@

# ---------------------------------------------------------------- CUDA fixtures (cause 3, nvcc)
CFX := $(FIX)/cuda
CUDA_SO := $(CFX)/sm80_only.so $(CFX)/sm90_only.so $(CFX)/ptx80_only.so
ARCH_sm80_only := -gencode arch=compute_80,code=sm_80
ARCH_sm90_only := -gencode arch=compute_90,code=sm_90
ARCH_ptx80_only := -gencode arch=compute_80,code=compute_80
ifneq ($(NVCC),)
$(CFX)/%.so: $(SRC)/weighted_sum_kernel.cu
	@mkdir -p $(@D)
	$(NVCC) -O2 -shared -Xcompiler -fPIC $(ARCH_$*) $< -o $@ -L$(CUDA_HOME)/lib64 -lcudart
else
$(CFX)/%.so:
	@mkdir -p $(SKIP)
	echo "nvcc not found: CUDA fixtures not built" > $(SKIP)/$*.so.txt
endif

# ---------------------------------------------------------------- probe fixtures (loaded for real)
PSRC := tests/fixtures/probe
PFX := $(FIX)/probe
PROBE_SO := $(PFX)/dup_a.so $(PFX)/dup_b.so $(PFX)/init_order.so $(PFX)/ctor_abort.so \
            $(PFX)/def_in_impl.so $(PFX)/kernel_mismatch.so \
            $(PFX)/ctor_hang.so $(PFX)/class_only.so

$(OBJ)/dup_%.o: $(PSRC)/dup_ns.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) -DDUP_LIB=$(if $(filter a,$*),1,2) -c $< -o $@
$(PFX)/dup_%.so: $(OBJ)/dup_%.o
	@mkdir -p $(@D)
	$(CXX) -o $@ $^ $(LDFLAGS_TORCH)
# Registrations torch refuses while the library's initialisers run (the process aborts); a
# library whose only registration is a TorchBind class.
$(OBJ)/probe_def_in_impl.o $(OBJ)/probe_kernel_mismatch.o $(OBJ)/probe_class_only.o: \
                          $(OBJ)/probe_%.o: $(PSRC)/%.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) -c $< -o $@
$(PFX)/class_only.so $(PFX)/def_in_impl.so $(PFX)/kernel_mismatch.so: $(PFX)/%.so: $(OBJ)/probe_%.o
	@mkdir -p $(@D)
	$(CXX) -o $@ $^ $(LDFLAGS_TORCH)
# Link order matters: the registrar's translation unit first, so its initialiser runs first.
$(PFX)/init_order.so: $(PSRC)/init_order_registrar.cpp $(PSRC)/init_order_registry.cpp \
                      $(PSRC)/init_order_registry.h
	@mkdir -p $(@D)
	$(CXX) -shared -fPIC -O1 $(PSRC)/init_order_registrar.cpp $(PSRC)/init_order_registry.cpp -o $@
$(PFX)/ctor_abort.so: $(PSRC)/ctor.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -DCTOR_ABORT $< -o $@
$(PFX)/ctor_hang.so: $(PSRC)/ctor.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -DCTOR_HANG $< -o $@

# ---------------------------------------------------------------- Python package fixtures (cause 5)
YSRC := tests/fixtures/python
YFX := $(FIX)/python
OTHER_PY ?= $(shell native/other_python.sh $(PY_VERSION))
PYEXT_FLAGS := -shared -fPIC -O1 -isystem $(PY_INCLUDE)
PY_FIXTURES := $(YFX)/noimport/myop/libmyop.so $(YFX)/shadow_src/myop/__init__.py \
  $(YFX)/wrongabi/myext/__init__.py $(YFX)/pyinit/myext/__init__.py \
  $(YFX)/swallow/myext/__init__.py $(YFX)/partial/myop-0.1.0.dist-info/RECORD \
  $(YFX)/namespace/myop/libmyop.so $(YFX)/scriptrel/myext/tool.py \
  $(YFX)/lazydep/lazyext/__init__.py $(YFX)/lazydep_nolib/lazyext/__init__.py

# Editable installs (`pip install -e .`: setuptools' PEP 660 finder maps edpkg to its source
# tree, where the extension is built in place), each in a venv of its own: ok, unbuilt (the
# extension deleted: a build that left it out), moved (the source tree gone); the same in
# setuptools' strict mode (a link tree of symbolic links: one now dangles) and compat mode (a
# .pth line puts the project on sys.path). setuptools comes from the package index (build
# isolation); a skip reason when pip cannot get it.
EDITABLE := $(YFX)/editable/.ready
PY_FIXTURES += $(EDITABLE)
$(EDITABLE): $(YSRC)/editable/setup.py $(YSRC)/editable/edpkg/__init__.py \
  $(YSRC)/editable/edpkg/_fast.c | $(VENV)/.installed
	rm -rf $(@D) && mkdir -p $(@D) $(SKIP)
	ok=1; for v in ok:lenient unbuilt:lenient moved:lenient strict-unbuilt:strict \
	    compat-unbuilt:compat compat-moved:compat dynamic-unbuilt:lenient; do \
	  name=$${v%%:*}; mode=$${v##*:}; \
	  cp -r $(YSRC)/editable $(@D)/$$name-src && $(PY) -m venv --without-pip $(@D)/$$name && \
	  $(PY) -m pip install -q --no-deps --prefix $(@D)/$$name \
	    --config-settings editable_mode=$$mode -e $(@D)/$$name-src > $(@D)/$$name.log 2>&1 \
	    || { tail -3 $(@D)/$$name.log > $(SKIP)/editable.txt; ok=0; break; }; \
	done; if [ $$ok = 1 ]; then rm -f $(SKIP)/editable.txt; fi
	rm -f $(@D)/unbuilt-src/edpkg/_fast*.so $(@D)/strict-unbuilt-src/edpkg/_fast*.so \
	  $(@D)/compat-unbuilt-src/edpkg/_fast*.so $(@D)/dynamic-unbuilt-src/edpkg/_fast*.so
	# a package that finds its compiled module at run time, as torch_scatter does (survey 22)
	printf 'import importlib\n_fast = importlib.import_module(__name__ + "._" + "fast")\n' \
	  > $(@D)/dynamic-unbuilt-src/edpkg/__init__.py
	rm -rf $(@D)/moved-src $(@D)/compat-moved-src
	touch $@
# A scikit-build-core editable install (its own import hook: skpkg's sources from the tree,
# its compiled module from site-packages), healthy (ok) and with that module deleted (gone).
# scikit-build-core (and cmake, where the system has none) from the package index.
SKBC := $(YFX)/skbc/.ready
PY_FIXTURES += $(SKBC)
$(SKBC): $(wildcard $(YSRC)/skbc/*.* $(YSRC)/skbc/src/skpkg/*) | $(VENV)/.installed
	rm -rf $(@D) && mkdir -p $(@D) $(SKIP)
	ok=1; for v in ok gone; do cp -r $(YSRC)/skbc $(@D)/$$v-src && \
	  $(PY) -m venv --without-pip $(@D)/$$v && \
	  $(PY) -m pip install -q --no-deps --prefix $(@D)/$$v -e $(@D)/$$v-src \
	    > $(@D)/$$v.log 2>&1 || { tail -3 $(@D)/$$v.log > $(SKIP)/skbc.txt; ok=0; break; }; \
	done; if [ $$ok = 1 ]; then rm -f $(SKIP)/skbc.txt; fi
	rm -f $(@D)/gone/lib/python*/site-packages/skpkg/_fast*.so
	touch $@
# A copy of the reference package whose __init__ never loads the library.
$(YFX)/noimport/myop/libmyop.so: $(BUILD)/myop/libmyop.so $(YSRC)/noimport_init.py $(YSRC)/helpers.py
	@mkdir -p $(@D)
	cp $(YSRC)/noimport_init.py $(@D)/__init__.py
	cp $(YSRC)/helpers.py $(@D)/helpers.py
	cp $< $@
# A source checkout: the reference __init__.py without the built library.
$(YFX)/shadow_src/myop/__init__.py: $(SRC)/python/myop/__init__.py
	@mkdir -p $(@D)
	cp $< $@
# An extension built for another Python (its EXT_SUFFIX), with that Python's headers when one
# is installed; otherwise the 3.x build renamed to the other suffix, and the reason recorded.
$(YFX)/wrongabi/myext/__init__.py: $(YSRC)/ext.c $(YSRC)/ext_init.py
	@mkdir -p $(@D) $(SKIP)
	if [ -n "$(OTHER_PY)" ]; then \
	  suf=$$($(OTHER_PY) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))'); \
	  inc=$$($(OTHER_PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])'); \
	  $(CC) -shared -fPIC -O1 -isystem $$inc $(YSRC)/ext.c -o $(@D)/_C$$suf; \
	else \
	  $(CC) $(PYEXT_FLAGS) $(YSRC)/ext.c -o $(@D)/_C.cpython-39-x86_64-linux-gnu.so; \
	  echo "no second Python installed: wrongabi's _C is this Python's build under the 3.9 suffix" > $(SKIP)/wrongabi-note.txt; \
	fi
	cp $(YSRC)/ext_init.py $@
# _C<suffix> compiled as module "other": exports PyInit_other, not PyInit__C.
$(YFX)/pyinit/myext/__init__.py: $(YSRC)/ext.c $(YSRC)/ext_init.py $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CC) $(PYEXT_FLAGS) -DMODNAME=other $< -o $(@D)/_C$(PY_EXT_SUFFIX)
	cp $(YSRC)/ext_init.py $@
# _C<suffix> needs missing_helper(); __init__ swallows the ImportError.
$(YFX)/swallow/myext/__init__.py: $(YSRC)/ext.c $(YSRC)/swallow_init.py $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CC) $(PYEXT_FLAGS) -DNEEDS_MISSING $< -o $(@D)/_C$(PY_EXT_SUFFIX)
	cp $(YSRC)/swallow_init.py $@
# An installed distribution whose RECORD lists libmyop.so, deleted afterwards.
# A compiled module whose dependency only the package's own import finder makes present
# (mpi4py's way with libmpi), and the same package without that library (the import fails).
define lazy_fixture
$(YFX)/$(1)/lazyext/__init__.py: $(YSRC)/ext.c $(YSRC)/lazy.c $(YSRC)/lazy_init.py $(BUILD)/config.mk
	rm -rf $$(@D) && mkdir -p $$(@D)/.libs
	$(CC) -shared -fPIC -O1 -Wl,-soname,liblazy.so.1 $(YSRC)/lazy.c -o $$(@D)/.libs/liblazy.so.1
	$(CC) $(PYEXT_FLAGS) -DNEEDS_LAZY -DMODNAME=_core $(YSRC)/ext.c -o $$(@D)/_core.variant$(PY_EXT_SUFFIX) \
	  -L$$(@D)/.libs -l:liblazy.so.1
	$(if $(2),rm -rf $$(@D)/.libs)
	cp $(YSRC)/lazy_init.py $$@
endef
$(eval $(call lazy_fixture,lazydep,))
$(eval $(call lazy_fixture,lazydep_nolib,1))

$(YFX)/partial/myop-0.1.0.dist-info/RECORD: $(BUILD)/pkg/myop/libmyop.so $(YSRC)/partial_record.py
	rm -rf $(YFX)/partial && mkdir -p $(YFX)/partial
	cp -r $(BUILD)/pkg/myop $(YFX)/partial/myop
	$(PY) $(YSRC)/partial_record.py $(YFX)/partial myop 0.1.0
	rm $(YFX)/partial/myop/libmyop.so
# The library in a directory without __init__.py: a namespace package.
$(YFX)/namespace/myop/libmyop.so: $(BUILD)/myop/libmyop.so
	@mkdir -p $(@D)
	cp $< $@
$(YFX)/scriptrel/myext/tool.py: $(YSRC)/ext.c $(YSRC)/ext_init.py $(YSRC)/scriptrel_tool.py $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CC) $(PYEXT_FLAGS) $< -o $(@D)/_C$(PY_EXT_SUFFIX)
	cp $(YSRC)/ext_init.py $(@D)/__init__.py
	cp $(YSRC)/scriptrel_tool.py $@

# ---------------------------------------------------------------- TensorFlow fixtures (cause 1)
TF_VERSION := 2.21.0
TFDIR := $(BUILD)/tf
TFFX := $(FIX)/tensorflow
TF_SO := $(TFFX)/zero_out.so $(TFFX)/zero_out_noreg.so $(TFFX)/zero_out_nokernel.so \
         $(TFFX)/zero_out_abi0.so $(TFFX)/zero_out_oldabsl.so $(TFFX)/zero_out_nolink.so \
         $(TFFX)/other_zero_out.so $(TFFX)/tf216_fs_plugin.so $(TFFX)/pkg/.built \
         $(TFFX)/zero_out_ns.so
TF_CXX := $(CXX) -std=c++17 -shared -fPIC -O1 -w -D_GLIBCXX_USE_CXX11_ABI=1 \
          -isystem $(TFDIR)/tensorflow/include
TF_LINK := -L$(TFDIR)/tensorflow -l:libtensorflow_framework.so.2

$(TFDIR)/.ready: native/fetch_tf.py | $(VENV)/.installed
	@mkdir -p $(TFDIR) $(SKIP)
	if $(PY) native/fetch_tf.py $(TF_VERSION) $(TFDIR) > $(TFDIR)/fetch.log 2>&1; then \
	  rm -f $(SKIP)/tf.txt; else cp $(TFDIR)/fetch.log $(SKIP)/tf.txt; fi
	touch $@
define tf_fixture
$(TFFX)/$(1).so: $(TSRC)/zero_out.cc $(TFDIR)/.ready
	@mkdir -p $$(@D) $(SKIP)
	if [ -f $(SKIP)/tf.txt ]; then cp $(SKIP)/tf.txt $(SKIP)/$(1).so.txt; \
	else $(TF_CXX) $(2) $$< -o $$@ $(TF_LINK); fi
endef
TSRC := tests/fixtures/tensorflow
$(eval $(call tf_fixture,zero_out,))
$(eval $(call tf_fixture,zero_out_noreg,-DTF_NO_REGISTRATION))
$(eval $(call tf_fixture,zero_out_nokernel,-DTF_NO_KERNEL))
# Built with the other C++11 ABI than tf.sysconfig.get_compile_flags() says (=1).
$(eval $(call tf_fixture,zero_out_abi0,-U_GLIBCXX_USE_CXX11_ABI -D_GLIBCXX_USE_CXX11_ABI=0))
# Built against an older abseil LTS (TF 2.16-2.19 shipped lts_20230802): the wheel's own headers
# with only absl/base/options.h's inline namespace changed, as an older TF's headers would have.
$(TFDIR)/absl_2023/absl/base/options.h: $(TFDIR)/.ready
	@mkdir -p $(@D)
	if [ -f $(TFDIR)/tensorflow/include/absl/base/options.h ]; then \
	  sed 's/^#define ABSL_OPTION_INLINE_NAMESPACE_NAME .*/#define ABSL_OPTION_INLINE_NAMESPACE_NAME lts_20230802/' \
	    $(TFDIR)/tensorflow/include/absl/base/options.h > $@; else : > $@; fi
$(TFFX)/zero_out_oldabsl.so: $(TFDIR)/absl_2023/absl/base/options.h
$(eval $(call tf_fixture,zero_out_oldabsl,-I$(TFDIR)/absl_2023))
# Compiled with the TF flags but linked without tf.sysconfig.get_link_flags().
$(TFFX)/zero_out_nolink.so: $(TSRC)/zero_out.cc $(TFDIR)/.ready
	@mkdir -p $(@D) $(SKIP)
	if [ -f $(SKIP)/tf.txt ]; then cp $(SKIP)/tf.txt $(SKIP)/zero_out_nolink.so.txt; \
	else $(TF_CXX) $< -o $@; fi
# An op with a namespaced name (Opdoctor>ZeroOutNs), as tensorflow-text's TFText>… ops.
$(TFFX)/zero_out_ns.so: $(TSRC)/zero_out_ns.cc $(TFDIR)/.ready
	@mkdir -p $(@D) $(SKIP)
	if [ -f $(SKIP)/tf.txt ]; then cp $(SKIP)/tf.txt $(SKIP)/zero_out_ns.so.txt; \
	else $(TF_CXX) $< -o $@ $(TF_LINK); fi
# A second project's library that registers an op of the same name (ZeroOut).
$(eval $(call tf_fixture,other_zero_out,-DTF_OTHER_PROJECT))
# A filesystem plugin written for TF <= 2.16's C API: TF_VLog (tensorflow/c/logging.h) is gone
# from 2.21's libtensorflow_framework.
$(TFFX)/tf216_fs_plugin.so: $(TSRC)/fs_plugin.c $(TFDIR)/.ready
	@mkdir -p $(@D) $(SKIP)
	if [ -f $(SKIP)/tf.txt ]; then cp $(SKIP)/tf.txt $(SKIP)/tf216_fs_plugin.so.txt; \
	else $(CC) -shared -fPIC -O1 -isystem $(TFDIR)/tensorflow/include $< -o $@ $(TF_LINK); fi
# An installed package (dist-info requiring TF 2.16) shipping that plugin and the healthy op
# library, plus a package whose __init__ never loads its op library.
$(TFFX)/pkg/.built: $(TFFX)/tf216_fs_plugin.so $(TFFX)/zero_out.so $(TSRC)/make_pkgs.py
	rm -rf $(@D) && mkdir -p $(@D)
	$(PY) $(TSRC)/make_pkgs.py $(@D) $(TFFX)
	touch $@

# A TensorFlow environment for the TensorFlow probe tests (tests skip, naming this target, when
# it is absent): tensorflow-cpu from PyPI (a 274 MB wheel), reused when present. When pip cannot
# install it the reason is recorded and the tests that need it are skipped.
TF_VENV := $(BUILD)/venv-tf
venv-tf: $(TF_VENV)/.installed
$(TF_VENV)/.installed:
	@mkdir -p $(SKIP)
	test -x $(TF_VENV)/bin/python || $(PYTHON) -m venv $(TF_VENV)
	if $(TF_VENV)/bin/python -m pip install -q tensorflow-cpu==$(TF_VERSION) > $(TF_VENV)/pip.log 2>&1; \
	  then rm -f $(SKIP)/venv-tf.txt; touch $@; \
	  else tail -1 $(TF_VENV)/pip.log > $(SKIP)/venv-tf.txt; fi

# ---------------------------------------------------------------- truth fixtures (verdict truth)
# tinyop and the ordinary ways a new user breaks it (tests/fixtures/truth/tinyop.cpp says which
# switch does what); tests/test_truth.py loads each for real to prove its failure (or health).
TRSRC := tests/fixtures/truth
TRFX := $(FIX)/truth
TRUTH_VARIANTS := assert macro_ns typo exit daemon undef undef_global inferred
FLAGS_TR_assert := -O0 -g -DTINYOP_ASSERT
FLAGS_TR_macro_ns := -DTINYOP_NS_MACRO -DMY_NS=foo
FLAGS_TR_typo := -DTINYOP_TYPO
FLAGS_TR_exit := -DTINYOP_EXIT
FLAGS_TR_daemon := -DTINYOP_DAEMON
FLAGS_TR_undef := -DTINYOP_UNDEF
FLAGS_TR_undef_global := -DTINYOP_UNDEF_GLOBAL
FLAGS_TR_inferred := -DTINYOP_INFERRED
TRUTH_SO := $(TRFX)/tinyop.so $(patsubst %,$(TRFX)/%.so,$(TRUTH_VARIANTS)) $(TRFX)/stripped.so \
  $(TRFX)/nolink/tinyop.so \
  $(TRFX)/inferred_stripped.so \
  $(TRFX)/noreg.so $(TRFX)/pkg_ok/tinyop/__init__.py $(TRFX)/pkg_noimport/tinyop/__init__.py \
  $(TRFX)/nosections/deps/libtinydep.so $(TRFX)/nosections/uses_dep.so \
  $(TRFX)/nosections/missing_dep.so $(TRFX)/nosections/tinyop.so

$(TRFX)/tinyop.so: $(TRSRC)/tinyop.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) $< -o $@ $(LDFLAGS_TORCH)
$(TRFX)/%.so: $(TRSRC)/tinyop.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) $(FLAGS_TR_$*) $< -o $@ $(LDFLAGS_TORCH)
# Compiled against this torch's headers, linked without its libraries (no -lc10 -ltorch_cpu):
# the c10/torch symbols are the installed torch's, yet nothing NEEDs the libraries that define
# them, and torch loads those RTLD_LOCAL (OD432).
$(TRFX)/nolink/tinyop.so: $(TRSRC)/tinyop.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) $< -o $@ -shared
$(TRFX)/stripped.so: $(TRFX)/tinyop.so
	strip --strip-all -o $@ $<
$(TRFX)/inferred_stripped.so: $(TRFX)/inferred.so
	strip --strip-all -o $@ $<
# Registration compiled out: with --as-needed (Ubuntu's default) no torch library stays linked.
$(TRFX)/noreg.so: $(TRSRC)/tinyop.cpp $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CXX) -O2 -fPIC -std=c++20 -DTINYOP_NO_REGISTRATION $< -o $@ -shared -Wl,--as-needed \
	  -L$(TORCH_LIBDIR) -lc10 -ltorch_cpu
# cpp_extension layout: tinyop/_C<EXT_SUFFIX> (a Python module that registers the op on import).
$(TRFX)/pkg_%/tinyop/__init__.py: $(TRSRC)/tinyop.cpp $(TRSRC)/init_%.py $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) -DTINYOP_PYMODULE -isystem $(PY_INCLUDE) $< \
	  -o $(@D)/_C$(PY_EXT_SUFFIX) $(LDFLAGS_TORCH)
	cp $(TRSRC)/init_$*.py $@
# No section header table (sstrip): ld.so loads these through PT_DYNAMIC alone.
$(TRFX)/nosections/deps/libtinydep.so: $(TRSRC)/dep.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -Wl,-soname,libtinydep.so $< -o $@
$(TRFX)/nosections/uses_dep.so: $(TRSRC)/uses_dep.c $(TRFX)/nosections/deps/libtinydep.so $(TRSRC)/sstrip.py
	$(CC) -shared -fPIC $< -L$(@D)/deps -ltinydep -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/deps' \
	  -o $@.full && $(PY) $(TRSRC)/sstrip.py $@.full $@ && rm $@.full
$(TRFX)/nosections/missing_dep.so: $(TRSRC)/uses_dep.c $(TRFX)/nosections/deps/libtinydep.so $(TRSRC)/sstrip.py
	$(CC) -shared -fPIC $< -L$(@D)/deps -ltinydep -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/no_such_dir' \
	  -o $@.full && $(PY) $(TRSRC)/sstrip.py $@.full $@ && rm $@.full
$(TRFX)/nosections/tinyop.so: $(TRFX)/tinyop.so $(TRSRC)/sstrip.py
	@mkdir -p $(@D)
	$(PY) $(TRSRC)/sstrip.py $< $@

truth: $(TRUTH_SO)

# ---------------------------------------------------------------- realpkg fixtures (verdict truth, #15)
# An initialiser that allocates 640 MiB at load (the memory-limit fix text).
RPSRC := tests/fixtures/realpkg
RPFX := $(FIX)/realpkg
# Real wheels (fetched like realwheels/): xformers 0.0.35 records the torch it was built for;
# torchtext 0.18.0 (2 MB, its last release) was built for torch 2.3 with the old C++ ABI;
# torchvision 0.21.0 (7 MB) is a CUDA 12.4 build for torch 2.6, with the old ABI too.
# sounddevice 0.5.6 (and the cffi 2.1.1 its module imports) looks PortAudio up by name with
# ctypes.util.find_library and raises its own OSError where the system has none (this one).
# protobuf 4.25.8 (0.3 MB) is below what TensorFlow 2.21 and MindSpore 2.10 require: their
# generated _pb2 modules' `from google.protobuf import runtime_version` (5.26+) fails on it.
# rtree 1.4.1 (1.5 MB) is pure Python; its finder loads rtree.libs/libspatialindex-….so (auditwheel's
# directory) with ctypes, over candidates read from importlib.metadata.files. python-vlc
# 3.0.21203 (0.1 MB) loads `ctypes.CDLL(find_library("vlc"))`: without libvlc, the program itself.
REALPKG_SO := $(RPFX)/alloc.so $(patsubst %,$(RPFX)/wheels/%/.ready,xformers-0.0.35 \
  fbgemm-gpu-cpu-1.8.0 fbgemm-gpu-cpu-1.9.0 torchtext-0.18.0 torchvision-0.21.0 \
  sounddevice-0.5.6 cffi-2.1.1 protobuf-4.25.8 rtree-1.4.1 python-vlc-3.0.21203)
# dgl 2.1.0 with its Python dependencies (about 60 MB, scipy and pandas the bulk), so that
# `import dgl` gets as far as the real failure: it ships its torch-facing libraries once per
# torch release (2.0.0 ... 2.2.1) and loads libdgl.so itself (ctypes) before the Cython module
# that needs it.
DGL_PINS := dgl==2.1.0 torchdata==0.7.1 scipy==1.17.1 pandas==3.1.1 networkx==3.6.1 \
  tqdm==4.70.1 psutil==7.2.2 requests==2.34.2 urllib3==2.8.0 idna==3.20 \
  charset-normalizer==3.5.3 certifi==2026.10.19.post1 python-dateutil==4.0.0 pytz==2026.6 \
  tzdata==2026.6 six==1.17.0
REALPKG_SO += $(RPFX)/dgl-2.1.0/.ready
$(RPFX)/dgl-2.1.0/.ready: | $(VENV)/.installed
	$(call pip_site,dgl-2.1.0,$(DGL_PINS))
# torch_npu 2.13.0 (44 MB, no Python dependencies needed to reach the failure): the Ascend
# backend, which torch auto-loads at its own import (entry point torch.backends); without the
# CANN toolkit its libhccl.so is missing and `import torch` itself fails.
REALPKG_SO += $(RPFX)/torch-npu-2.13.0/.ready
$(RPFX)/torch-npu-2.13.0/.ready: | $(VENV)/.installed
	$(call pip_site,torch-npu-2.13.0,torch-npu==2.13.0)
# pydantic 2.14.4 (it pins pydantic-core==2.50.5) beside pydantic-core 2.27.2, with the pure
# Python packages it imports (about 7 MB): its import refuses the pair (OD327).
PYDANTIC_PINS := pydantic==2.14.4 pydantic-core==2.27.2 typing-extensions==4.16.0 \
  typing-inspection==0.4.5 annotated-types==0.8.0
REALPKG_SO += $(RPFX)/pydantic-pin/.ready
$(RPFX)/pydantic-pin/.ready: | $(VENV)/.installed
	$(call pip_site,pydantic-pin,$(PYDANTIC_PINS))
# jax 0.10.2 alone (3 MB, pure Python): its import raises its own "jax requires jaxlib to be
# installed" (no 'No module named'), and its METADATA pins the jaxlib it needs.
REALPKG_SO += $(RPFX)/jax-0.10.2/.ready
$(RPFX)/jax-0.10.2/.ready: | $(VENV)/.installed
	$(call pip_site,jax-0.10.2,jax==0.10.2)
# numexpr 2.8.7 (1 MB), built against NumPy 1.x, beside the venv's NumPy 2: its import fails
# in NumPy's own import_array() (OD328).
REALPKG_SO += $(RPFX)/numexpr-2.8.7/.ready
$(RPFX)/numexpr-2.8.7/.ready: | $(VENV)/.installed
	$(call pip_site,numexpr-2.8.7,numexpr==2.8.7)
# ml_dtypes 0.7.0 (built with NumPy 2's headers for NumPy 2.0's C API) beside numpy 1.26.4
# (about 40 MB installed): its import fails in import_array() ("module was compiled against
# NumPy C-API version 0x12 (NumPy 2.0) but the running NumPy has C-API version 0x11"; OD328).
REALPKG_SO += $(RPFX)/ml_dtypes-numpy1/.ready
$(RPFX)/ml_dtypes-numpy1/.ready: | $(VENV)/.installed
	$(call pip_site,ml_dtypes-numpy1,ml_dtypes==0.7.0 numpy==1.26.4)
# numba 0.60.0 (3.7 MB wheel, 34 MB installed) without llvmlite: Requires-Dist numpy<2.1,>=1.22,
# and its import refuses the venv's NumPy 2.4 first ("Numba needs NumPy 2.0 or less"; OD327).
REALPKG_SO += $(RPFX)/numba-0.60.0/.ready
$(RPFX)/numba-0.60.0/.ready: | $(VENV)/.installed
	$(call pip_site,numba-0.60.0,numba==0.60.0)
# bcrypt 5.0.0's musllinux wheel (300 KB; pip's --platform) on this glibc system: its extension
# links libc.musl-x86_64.so.1, which the loader "cannot open" (OD417, not a search path).
REALPKG_SO += $(RPFX)/bcrypt-musl/.ready
$(RPFX)/bcrypt-musl/.ready: | $(VENV)/.installed
	$(call pip_site,bcrypt-musl,--platform musllinux_1_2_x86_64 --python-version 3.11 \
	  --implementation cp --abi abi3 bcrypt==5.0.0)
REALPKG_SO += $(RPFX)/bcrypt-glibc/.ready
$(RPFX)/bcrypt-glibc/.ready: | $(VENV)/.installed
	$(call pip_site,bcrypt-glibc,bcrypt==5.0.0)
# Wheels for another platform or Python, as pip's --platform/--python-version install them
# (OD418, OD503): orjson 3.13.0 for aarch64 and for Windows (its import fails), msgpack 1.2.4
# for CPython 3.10 and for musl (its pure-Python fallback runs), regex for CPython 3.12
# (imported as `from regex import _regex`). About 6 MB in all.
FOREIGN_WHEELS := orjson-aarch64 orjson-win msgpack-py310 msgpack-musl regex-py312
REALPKG_SO += $(FOREIGN_WHEELS:%=$(RPFX)/%/.ready)
$(RPFX)/orjson-aarch64/.ready: | $(VENV)/.installed
	$(call pip_site,orjson-aarch64,--platform manylinux2014_aarch64 --python-version 3.11 \
	  --implementation cp --abi cp311 orjson==3.13.0)
$(RPFX)/orjson-win/.ready: | $(VENV)/.installed
	$(call pip_site,orjson-win,--platform win_amd64 --python-version 3.11 --implementation cp \
	  --abi cp311 orjson==3.13.0)
$(RPFX)/msgpack-py310/.ready: | $(VENV)/.installed
	$(call pip_site,msgpack-py310,--platform manylinux2014_x86_64 --python-version 3.10 \
	  --implementation cp --abi cp310 msgpack==1.2.4)
$(RPFX)/regex-py312/.ready: | $(VENV)/.installed
	$(call pip_site,regex-py312,--platform manylinux2014_x86_64 --python-version 3.12 \
	  --implementation cp --abi cp312 regex==2026.12.2)
$(RPFX)/msgpack-musl/.ready: | $(VENV)/.installed
	$(call pip_site,msgpack-musl,--platform musllinux_1_2_x86_64 --python-version 3.11 \
	  --implementation cp --abi cp311 msgpack==1.2.4)
# sounddevice 0.5.1 (pure Python, cffi): its import looks PortAudio up with
# ctypes.util.find_library and raises "PortAudio library not found" where it is not installed.
REALPKG_SO += $(RPFX)/sounddevice-0.5.1/.ready
$(RPFX)/sounddevice-0.5.1/.ready: | $(VENV)/.installed
	$(call pip_site,sounddevice-0.5.1,sounddevice==0.5.1 cffi==2.1.1 pycparser==3.12)
# pyvips 2.1.0 (pure Python, cffi's ABI mode; its last wheel) with cffi 2.1.1 and pycparser:
# without its compiled _libvips its import runs ffi.dlopen('libvips.so.42'), which fails where
# the system has no libvips (this one).
REALPKG_SO += $(RPFX)/pyvips-2.1.0/.ready
$(RPFX)/pyvips-2.1.0/.ready: | $(VENV)/.installed
	$(call pip_site,pyvips-2.1.0,pyvips==2.1.0 cffi==2.1.1 pycparser==3.12)
# pandas 2.1.4 (12 MB, built against NumPy 1.x) with its pure-Python requirements, beside the
# venv's NumPy 2: `import pandas` fails in Cython's check of numpy.dtype's size (OD328 read
# over the package's compiled modules).
REALPKG_SO += $(RPFX)/pandas-2.1.4/.ready
$(RPFX)/pandas-2.1.4/.ready: | $(VENV)/.installed
	$(call pip_site,pandas-2.1.4,pandas==2.1.4 python-dateutil==2.9.0.post0 pytz==2024.1 \
	  six==1.16.0 tzdata==2024.1)
# PyMuPDF 1.24.9 (it pins PyMuPDFb==1.24.9) beside PyMuPDFb 1.24.8 (about 20 MB): its
# extension NEEDs libmupdf.so.24.8, and the other release installs libmupdf.so.24.4.
REALPKG_SO += $(RPFX)/pymupdf-pin/.ready
$(RPFX)/pymupdf-pin/.ready: | $(VENV)/.installed
	$(call pip_site,pymupdf-pin,PyMuPDF==1.24.9 PyMuPDFb==1.24.8)
# requests 2.32.3 with its requirements (about 1 MB): a test deletes a module of urllib3 from
# a copy, and `import requests` fails on that partial install of its requirement (OD508).
REALPKG_SO += $(RPFX)/requests-2.32.3/.ready
$(RPFX)/requests-2.32.3/.ready: | $(VENV)/.installed
	$(call pip_site,requests-2.32.3,requests==2.32.3 urllib3==2.2.3 idna==3.10 \
	  charset-normalizer==3.4.0 certifi==2024.8.30)
$(RPFX)/alloc.so: $(RPSRC)/alloc.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -O1 $< -o $@
# Real PyPI wheels $(2) installed as a user installs them (pip install --no-deps --target
# $(@D)/site); when pip cannot get them, the reason is $(SKIP)/$(1).txt, which the tests skip on.
define pip_site
	@mkdir -p $(@D) $(SKIP)
	if $(PY) -m pip install -q --no-deps --only-binary=:all: --target $(@D)/site $(2) \
	  > $(@D)/pip.log 2>&1; then rm -f $(SKIP)/$(1).txt; \
	  else tail -3 $(@D)/pip.log > $(SKIP)/$(1).txt; fi
	touch $@
endef
# One real PyPI wheel into $(@D) (native/fetch_wheel.py; a skip reason when pip cannot get it).
# name-with-dashes-1.2.3 → name-with-dashes==1.2.3 (only the last dash is the separator).
define fetch_wheel
	@mkdir -p $(@D) $(SKIP)
	if $(PY) native/fetch_wheel.py "$$(echo $* | sed 's/-\([^-]*\)$$/==\1/')" $(@D) \
	  > $(@D)/fetch.log 2>&1; then \
	  rm -f $(SKIP)/$*.txt; else cp $(@D)/fetch.log $(SKIP)/$*.txt; fi
	touch $@
endef
$(RPFX)/wheels/%/.ready: native/fetch_wheel.py | $(VENV)/.installed
	$(fetch_wheel)

# ---------------------------------------------------------------- real PyPI wheels (cause 3)
# Real extension wheels beside the pinned CPU torch: PyPI's torchvision 0.28.0 is a CUDA 13.0
# build (needs libc10_cuda.so, libtorch_cuda.so): the commonest "torchvision::nms does not
# exist" in the wild. Downloaded with pip (24 MB unpacked); a skip reason when unavailable.
RWFX := $(FIX)/realwheels
REALWHEELS := $(RWFX)/torchvision-0.28.0/.ready
$(RWFX)/%/.ready: native/fetch_wheel.py | $(VENV)/.installed
	$(fetch_wheel)

# ---------------------------------------------------------------- Python registrations, computed
# load paths, version guards (#14): real wheels whose ops are defined from Python (bitsandbytes,
# torchao), whose loads are computed (torchvision, torchao, bitsandbytes), torchao 0.14.1 whose own
# guard rejects torch 2.13, tensordict without its dependency pyvers, torchaudio (its loader is
# a function of another module). About 64 MB of downloads.
PRFX := $(FIX)/pyreg
PYREG_WHEELS := $(patsubst %,$(PRFX)/%/.ready,bitsandbytes-0.50.2 torchao-0.14.1 torchao-0.18.0 \
  torchvision-0.29.1 tensordict-0.11.0 torchaudio-2.11.1)
$(PRFX)/%/.ready: native/fetch_wheel.py | $(VENV)/.installed
	$(fetch_wheel)

# ---------------------------------------------------------------- compile-readiness fixtures (cause 1)
# One op, cop::scale, in variants (see tests/fixtures/compile/cop.cpp); stable-ABI registrars;
# Python custom_op packages; a package registering a C++ op's fake impl from Python.
KSRC := tests/fixtures/compile
KFX := $(FIX)/compile
FLAGS_cop_nometa :=
FLAGS_cop_meta := -DCOP_META
FLAGS_cop_meta_autograd := -DCOP_META -DCOP_AUTOGRAD
FLAGS_cop_pystub_missing := -DCOP_PYSTUB
COMPILE_FX := $(patsubst %,$(KFX)/%.so,nometa meta meta_autograd pystub_missing stable_meta \
                stable_nometa stable_meta_stripped multi) \
              $(KFX)/python/pyop_nofake/__init__.py $(KFX)/python/pyop_fake/__init__.py \
              $(KFX)/python/pyop_badgrad/__init__.py $(KFX)/python/cop_pyfake/libcop.so

$(KFX)/%.so: $(KSRC)/cop.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) $(FLAGS_cop_$*) $< -o $@ $(LDFLAGS_TORCH)
$(KFX)/stable_meta.so: $(KSRC)/stable_meta.cpp $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) $< -o $@ $(LDFLAGS_TORCH)
$(KFX)/stable_nometa.so: $(KSRC)/stable_meta.cpp $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) -DSTABLE_NO_META $< -o $@ $(LDFLAGS_TORCH)
$(KFX)/multi.so: $(KSRC)/multi.cpp $(BUILD)/config.mk | $(PCH_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) $< -o $@ $(LDFLAGS_TORCH)
$(KFX)/stable_meta_stripped.so: $(KFX)/stable_meta.so
	strip --strip-all -o $@ $<
$(KFX)/python/pyop_nofake/__init__.py: $(KSRC)/python/pyop_nofake_init.py
	@mkdir -p $(@D)
	cp $< $@
$(KFX)/python/pyop_fake/__init__.py: $(KSRC)/python/pyop_fake_init.py
	@mkdir -p $(@D)
	cp $< $@
$(KFX)/python/pyop_badgrad/__init__.py: $(KSRC)/python/pyop_badgrad_init.py
	@mkdir -p $(@D)
	cp $< $@
$(KFX)/python/cop_pyfake/libcop.so: $(KFX)/nometa.so $(KSRC)/python/cop_pyfake_init.py \
                                    $(KSRC)/python/cop_pyfake_fake.py
	@mkdir -p $(@D)
	cp $(KSRC)/python/cop_pyfake_init.py $(@D)/__init__.py
	cp $(KSRC)/python/cop_pyfake_fake.py $(@D)/fake.py
	cp $< $@

compile: $(COMPILE_FX)

# ---------------------------------------------------------------- wheels (CI gating)
WFX := $(FIX)/wheels
WHEELS := $(WFX)/good/.built $(WFX)/abi/.built

$(WFX)/good/.built: $(BUILD)/pkg/myop/libmyop.so native/make_wheel.py
	rm -rf $(@D) && mkdir -p $(@D)
	$(PY) native/make_wheel.py $(@D) myop 0.1.0 $(BUILD)/pkg/myop
	touch $@
# The same package shipping the other-C++11-ABI build of the library: a broken wheel.
$(WFX)/abi/.built: $(BUILD)/pkg/myop/libmyop.so $(LFX)/abi0.so native/make_wheel.py
	rm -rf $(@D) && mkdir -p $(@D)
	$(PY) native/make_wheel.py $(@D) myop 0.1.0 $(BUILD)/pkg/myop $(LFX)/abi0.so
	touch $@

# ---------------------------------------------------------------- MindSpore fixtures (cause 1)
# AOT custom operators (ops.Custom("lib.so:Func", ..., func_type="aot")) and the ordinary ways
# they break: native/mindspore/aot_add.cc says which switch does what. tests/test_mindspore.py
# runs each through real MindSpore (build/venv-ms) to prove its failure (or health).
MS_VERSION := 2.10.0
MSSRC := native/mindspore
MSFX := $(FIX)/mindspore
MS_VARIANTS := noinit mangled badsig initmangled undef
FLAGS_MS_noinit := -DAOT_NO_INIT
FLAGS_MS_mangled := -DAOT_MANGLED
FLAGS_MS_badsig := -DAOT_BADSIG
FLAGS_MS_initmangled := -DAOT_INIT_MANGLED
FLAGS_MS_undef := -DAOT_UNDEF
MS_SO := $(MSFX)/aot_add.so $(patsubst %,$(MSFX)/aot_add_%.so,$(MS_VARIANTS)) \
         $(MSFX)/needs_missing.so
$(MSFX)/aot_add.so: $(MSSRC)/aot_add.cc
	@mkdir -p $(@D)
	$(CXX) -shared -fPIC -O1 $< -o $@
$(MSFX)/aot_add_%.so: $(MSSRC)/aot_add.cc
	@mkdir -p $(@D)
	$(CXX) -shared -fPIC -O1 $(FLAGS_MS_$*) $< -o $@
# Links libaot_helper.so from a directory that is not searched at run time (no RPATH).
$(MSFX)/helper/libaot_helper.so: $(MSSRC)/aot_helper.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -O1 $< -o $@
$(MSFX)/needs_missing.so: $(MSSRC)/needs_missing.c $(MSFX)/helper/libaot_helper.so
	$(CC) -shared -fPIC -O1 $< -o $@ -L$(MSFX)/helper -laot_helper

# A CustomOpBuilder-like extension module linking libmindspore_core.so, with MindSpore's old C++
# ABI (abi0) and with the new one (abi1). Needs the MindSpore venv's libraries to link against.
MS_LIBDIR = $(abspath $(MS_VENV))/lib/python3.11/site-packages/mindspore/lib
MS_EXT := $(MSFX)/abi0/ms_ext$(PY_EXT_SUFFIX) $(MSFX)/abi1/ms_ext$(PY_EXT_SUFFIX)
MS_SO += $(MS_EXT)
$(MSFX)/abi%/ms_ext$(PY_EXT_SUFFIX): $(MSSRC)/ms_ext.cc $(BUILD)/config.mk
	@mkdir -p $(@D) $(SKIP)
	if [ -f $(MS_LIBDIR)/libmindspore_core.so ]; then \
	  $(CXX) $(PYEXT_FLAGS) -D_GLIBCXX_USE_CXX11_ABI=$* $< -o $@ -L$(MS_LIBDIR) \
	    -Wl,-rpath,$(MS_LIBDIR) -lmindspore_core && rm -f $(SKIP)/ms_ext$(PY_EXT_SUFFIX).txt; \
	else echo "no MindSpore install to link against: run make venv-ms" > $(SKIP)/ms_ext$(PY_EXT_SUFFIX).txt; fi

# ---------------------------------------------------------------- OneFlow fixtures (static only)
# OneFlow has no wheel for Python 3.11: these are compiled against native/oneflow/oneflow_min.h, a
# minimal header declaring the same registry API (the ELF markers are what the checks read), and
# a stub liboneflow.so built from liboneflow_stub.cc. No OneFlow runtime is involved.
OFSRC := native/oneflow
OFFX := $(FIX)/oneflow
OF_SO := $(OFFX)/lib/liboneflow.so $(OFFX)/relu_op.so $(OFFX)/relu_op_nokernel.so \
         $(OFFX)/relu_op_abi1.so $(OFFX)/relu_op_nolink.so
OF_CXX := $(CXX) -shared -fPIC -O1 -I$(OFSRC)
OF_LINK = -L$(OFFX)/lib -Wl,-rpath,$(abspath $(OFFX))/lib -loneflow
$(OFFX)/lib/liboneflow.so: $(OFSRC)/liboneflow_stub.cc $(OFSRC)/oneflow_min.h
	@mkdir -p $(@D)
	$(OF_CXX) -D_GLIBCXX_USE_CXX11_ABI=0 $< -o $@
$(OFFX)/relu_op.so: $(OFSRC)/relu_op.cc $(OFFX)/lib/liboneflow.so
	$(OF_CXX) -D_GLIBCXX_USE_CXX11_ABI=0 $< -o $@ $(OF_LINK)
$(OFFX)/relu_op_nokernel.so: $(OFSRC)/relu_op.cc $(OFFX)/lib/liboneflow.so
	$(OF_CXX) -D_GLIBCXX_USE_CXX11_ABI=0 -DOF_NO_KERNEL $< -o $@ $(OF_LINK)
$(OFFX)/relu_op_abi1.so: $(OFSRC)/relu_op.cc $(OFFX)/lib/liboneflow.so
	$(OF_CXX) -D_GLIBCXX_USE_CXX11_ABI=1 $< -o $@ $(OF_LINK)
$(OFFX)/relu_op_nolink.so: $(OFSRC)/relu_op.cc $(OFSRC)/oneflow_min.h
	@mkdir -p $(@D)
	$(OF_CXX) -D_GLIBCXX_USE_CXX11_ABI=0 $< -o $@

# A MindSpore environment for the MindSpore probe tests: mindspore from PyPI (an 804 MB wheel),
# reused when present. When pip cannot install it the reason is recorded and the tests that
# need it are skipped with it.
MS_VENV := $(BUILD)/venv-ms
venv-ms: $(MS_VENV)/.installed
$(MS_VENV)/.installed:
	@mkdir -p $(SKIP)
	test -x $(MS_VENV)/bin/python || $(PYTHON) -m venv $(MS_VENV)
	if $(MS_VENV)/bin/python -m pip install -q mindspore==$(MS_VERSION) > $(MS_VENV)/pip.log 2>&1; \
	  then rm -f $(SKIP)/venv-ms.txt; touch $@; \
	  else tail -1 $(MS_VENV)/pip.log > $(SKIP)/venv-ms.txt; fi

# ---------------------------------------------------------------- fuzzing seeds (robustness)
# A constructor that creates $$OPDOCTOR_FUZZ_MARKER when it runs: --static must never run it.
ZFX := $(FIX)/fuzz
FUZZ_SO := $(ZFX)/marker_ctor.so
$(ZFX)/marker_ctor.so: tests/fixtures/fuzz/marker_ctor.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -O1 $< -o $@

# ---------------------------------------------------------------- top-level targets
fixtures: reference $(INTEGRITY_SO) $(LOADER_SO) $(REGISTRATION_SO) $(CUDA_SO) $(PROBE_SO) \
          $(PY_FIXTURES) $(WHEELS) $(TF_SO) $(REALWHEELS) $(TRUTH_SO) $(FUZZ_SO) $(MS_SO) $(OF_SO) compile \
          $(REALPKG_SO) $(PYREG_WHEELS)
	@mkdir -p $(SKIP)
	@if [ -n "$(CUDA_NOTE)" ]; then echo "$(CUDA_NOTE)" > $(SKIP)/cuda.txt; echo "NOTE: $(CUDA_NOTE)"; \
	  else rm -f $(SKIP)/cuda.txt; fi

all: venv reference

# compileall first: the bytecode an installed package has. Under PYTHONDONTWRITEBYTECODE (this
# machine's environment sets it) no child writes it, and every `opdoctor` child of the suite
# compiled the modules it imports (the text report, the probe runner …) from source.
# Not tests/fixtures: its Python sources are fixtures, copied as they are.
# pytest rewrites each test module's asserts when it imports it, and caches the result beside
# the module's bytecode — unless PYTHONDONTWRITEBYTECODE is set (as on the machines this runs
# on): then each of the run's four processes rewrote all 58 modules (collection 4.0 s of CPU
# each; 1.0 s from the cache). One collection with bytecode writing allowed fills the cache
# (1 s once it is current); every process of the run then reads it, whatever the variable says.
# A module that cannot be collected is reported by the run itself.
PYTEST_REWRITE_CACHE := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q --collect-only \
  -p no:cacheprovider > /dev/null || true
test: venv venv-tf venv-ms
	$(MAKE) -j$(NPROC) fixtures
	$(PY) -m compileall -q src > /dev/null
	$(PY) -m compileall -q -l tests tests/fuzz > /dev/null
	$(PYTEST_REWRITE_CACHE)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal

demo: venv
	$(MAKE) -j$(NPROC) reference $(FIX)/integrity/truncated.so
	@echo "== opdoctor check on the reference operator in its package (expect: clean, exit 0)"
	$(VENV)/bin/opdoctor check $(BUILD)/pkg/myop/libmyop.so
	@echo "== opdoctor check on a truncated copy of it (expect: OD406, exit 1)"
	$(VENV)/bin/opdoctor check $(FIX)/integrity/truncated.so; rc=$$?; \
	  if [ $$rc -ne 1 ]; then echo "demo: expected exit 1, got $$rc"; exit 1; fi

bench: venv
	$(MAKE) -j$(NPROC) reference
	$(PY) benchmarks/bench_table.py
	$(PY) benchmarks/bench_elf.py
	$(PY) benchmarks/bench_explain.py
	$(PY) benchmarks/bench_packages.py
	$(PY) benchmarks/bench_internals.py

# Real PyPI wheels that fail (or work) beside the venv's torch / a TensorFlow venv; downloads
# (see benchmarks/realworld/README.md). RW_ARGS=--quick or RW_ARGS='--case NAME'.
realworld: venv
	$(PY) benchmarks/realworld/run.py $(RW_ARGS)

# A long fuzzing campaign over mutated seed libraries (make fuzz N=20000 SEED=campaign
# [MINUTES=30]: stop after that long and report how many inputs ran).
N ?= 20000
SEED ?= campaign
fuzz: venv
	$(MAKE) -j$(NPROC) fixtures
	$(PY) -m tests.fuzz.harness --count $(N) --campaign $(SEED) $(if $(MINUTES),--max-minutes $(MINUTES))

lint: venv
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf $(VENV)

# Regenerate the README's code tables from the catalog (tests/test_layout.py checks they match).
readme: venv
	$(PY) native/update_readme.py

# Regenerate the start-up table of dataclass methods for this Python
# (src/opdoctor/_startup/dataclasses_pyXY.py; tests/test_startup_caches.py checks it is current).
startup-tables: venv
	$(MAKE) -j$(NPROC) reference
	$(PY) native/gen_startup.py
	$(PY) native/gen_startup.py --regex

# ---------------------------------------------------------------- MPICH for the fleet's mpirun test
# A real mpirun (MPICH's Hydra, from the mpich wheel: 9 MB, no compiler, no system package) so
# that tests/test_fleet.py runs `mpirun -n 2 python -m opdoctor fleet …` on 127.0.0.1; the test
# skips, naming this target, when it is absent. mpi4py is not needed: opdoctor reads PMI_*.
MPI_DIR := $(BUILD)/probe/mpi
MPICH_VERSION := 5.0.2
mpi: $(MPI_DIR)/.installed
$(MPI_DIR)/.installed: | $(VENV)/.installed
	@mkdir -p $(@D) $(SKIP)
	if $(PY) -m pip install -q --no-deps --target $(@D) mpich==$(MPICH_VERSION) > $(@D)/../mpi-pip.log 2>&1; \
	  then rm -f $(SKIP)/mpi.txt; touch $@; else tail -1 $(@D)/../mpi-pip.log > $(SKIP)/mpi.txt; fi
fixtures: mpi

# ---------------------------------------------------------------- stable-ABI fixtures (cause 3)
# A stable-ABI extension that calls a shim function only torch >= 2.14 exports (OD316).
SFX := $(FIX)/stable
STABLE_SO := $(SFX)/needs_2_14.so
$(SFX)/needs_2_14.so: tests/fixtures/stable/needs_2_14.cpp $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TORCH) $< -o $@ $(LDFLAGS_TORCH)
stable-fixtures: $(STABLE_SO)
fixtures: $(STABLE_SO)
# ---------------------------------------------------------------- healthy real packages (#14 item 9)
# Real PyPI wheels that load and work here, installed as a user installs them
# (pip install --no-deps --target): opdoctor must stay clean on them (tests/test_healthy.py).
# tokenizers re-exports names from its extension (`from .. import AddedToken`); numpy's RECORD
# lists console scripts outside site-packages (../../bin/f2py); executorch's op libraries sit in
# packages whose __init__.py does not load them; scipy.libs/libgfortran-8f1e9814 finds its
# libquadmath only through the DT_RPATH of the extensions that load it; soundfile 0.13.1 is a
# second release of a single-module distribution (two installs on sys.path, OD502). ~77 MB.
HFX := $(FIX)/healthy
HEALTHY := $(patsubst %,$(HFX)/%/.ready,tokenizers-0.23.3 numpy-2.4.6 executorch-1.5.1 \
  scipy-1.17.1 lightgbm-4.7.0 soundfile-0.13.1)
.PHONY: healthy
healthy: $(HEALTHY)
$(HFX)/%/.ready: | $(VENV)/.installed
	@mkdir -p $(@D) $(SKIP)
	if $(PY) -m pip install -q --no-deps --only-binary=:all: --target $(@D)/site \
	  "$$(echo $* | sed 's/-\([^-]*\)$$/==\1/')" > $(@D)/pip.log 2>&1; \
	  then rm -f $(SKIP)/healthy-$*.txt; else tail -3 $(@D)/pip.log > $(SKIP)/healthy-$*.txt; fi
	touch $@
fixtures: healthy
# A single-module distribution (soundfile.py, its libsndfile in _soundfile_data/ beside it) with
# the two packages it imports (cffi, pycparser): about 6 MB.
SOUNDFILE := $(HFX)/soundfile-0.14.0/.ready
healthy: $(SOUNDFILE)
$(SOUNDFILE): | $(VENV)/.installed
	$(call pip_site,healthy-soundfile-0.14.0,soundfile==0.14.0 cffi==2.1.1 pycparser==3.12)
# beautifulsoup4 with its one requirement (soupsieve): its builders catch `import lxml` and
# `import html5lib`, optional extras it runs without (OD512 a note; survey 11). About 1 MB.
BS4 := $(HFX)/bs4-4.12.3/.ready
healthy: $(BS4)
$(BS4): | $(VENV)/.installed
	$(call pip_site,healthy-bs4-4.12.3,beautifulsoup4==4.12.3 soupsieve==2.6)
# frozenlist and propcache: C accelerators over pure-Python versions their try/except keeps
# (a class defined before the try; a handler importing the _py module): OD509 notes, not
# warnings, statically (survey 12's P2). About 1 MB.
ACCEL := $(HFX)/accelerators/.ready
healthy: $(ACCEL)
$(ACCEL): | $(VENV)/.installed
	$(call pip_site,healthy-accelerators,frozenlist==1.8.0 propcache==0.5.4)
# pydantic: pure Python, its compiled core a distribution of its own (pydantic-core, an exact
# pin): its OD415 note names that, not a build that left an extension out. About 2.5 MB.
PYDANTIC := $(HFX)/pydantic-2.11.7/.ready
healthy: $(PYDANTIC)
$(PYDANTIC): | $(VENV)/.installed
	$(call pip_site,healthy-pydantic-2.11.7,pydantic==2.11.7 pydantic-core==2.33.2 \
	  annotated-types==0.7.0 typing-extensions==4.14.1 typing-inspection==0.4.1)
# cffi: `import _cffi_backend` inside `try: … except ImportError:` that drops the error
# (cffi/commontypes.py), the extension present and whole — read statically, a note, not a
# warning (survey 13). About 0.7 MB.
OPTEXT := $(HFX)/optional-ext/.ready
healthy: $(OPTEXT)
$(OPTEXT): | $(VENV)/.installed
	$(call pip_site,healthy-optional-ext,cffi==2.1.1 pycparser==3.12)
# protobuf: google.protobuf is pure Python, and the distribution installs its compiled module
# beside it (google/_upb/_message.abi3.so), which `import google.protobuf` does not load
# (survey 11's P9; OD415 a note that names it). About 1.5 MB.
PROTOBUF := $(HFX)/protobuf-5.29.3/.ready
healthy: $(PROTOBUF)
$(PROTOBUF): | $(VENV)/.installed
	$(call pip_site,healthy-protobuf-5.29.3,protobuf==5.29.3)
# Another pybind11 internals key than torch's (OD306): what converts and what does not.
HEALTHY_PYBIND := $(HFX)/pybind_tensor/pybind_tensor$(PY_EXT_SUFFIX)
$(HEALTHY_PYBIND): tests/fixtures/healthy/pybind_tensor.cpp $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(CXX) -shared -fPIC -O1 -std=c++17 -DPYBIND11_INTERNALS_VERSION=12 $(TORCH_INCLUDES) \
	  -isystem $(PY_INCLUDE) $< -L$(TORCH_LIBDIR) -Wl,--no-as-needed -lc10 -ltorch -ltorch_cpu \
	  -ltorch_python -o $@
healthy: $(HEALTHY_PYBIND)
# Over the 100 MB budget of make test (60 MB wheel, run beside build/venv-tf): fetched on demand;
# its test skips naming this target. tensorflow_text's libpybinds_library_common.so links
# TensorFlow, registers nothing, and is NEEDed by six pybind modules (a support library).
.PHONY: healthy-tf
healthy-tf: $(HFX)/tensorflow-text-2.21.1/.ready
# ---------------------------------------------------------------- real-world suite in make test (#14)
# The small torch cases of benchmarks/realworld (`make_test` in its cases.toml; about 99 MB of
# wheels, several cases sharing one), installed — never scored — into $(BUILD)/realworld/<case>
# by run.py --install-only; tests/test_realworld_suite.py scores them. A complete case directory
# is left as it is; each case is installed under a lock (safe with make -j and beside a running
# make realworld). A case pip cannot fetch leaves $(SKIP)/realworld-<case>.txt and its tests skip
# with that text instead of failing make test.
.PHONY: realworld-small
realworld-small: | $(VENV)/.installed
	@mkdir -p $(SKIP)
	$(PY) benchmarks/realworld/run.py --install-only --set make-test --build $(BUILD)
fixtures: realworld-small
