# SPDX-License-Identifier: MIT
# Plugins: optional shared objects loaded at run time through
# plugins/include/penny_plugin.h.  The core binary never links CUDA or NCCL.
#   $(B)/plugins/penny-nccl.so   always (NCCL and the CUDA driver are opened with dlopen)
#   $(B)/plugins/penny-cuda.so   when nvcc exists (kernels embedded as fatbins for CUDA_ARCHS)
#   $(B)/plugins/penny-nvshmem.so   when nvcc and NVSHMEM are found (below)
# NVCC= (empty) builds as if there were no nvcc.
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
# The GPU architectures of the kernels: CUDA_ARCHS, compute capabilities
# without the dot, machine code (SASS) for each and PTX of the first, which
# the driver compiles for a GPU newer than all of them.  Default: Ampere
# (80), Hopper (90) and Blackwell (100, 120), those this nvcc knows
# (nvcc --list-gpu-arch; Blackwell from CUDA 12.8).  The nvshmem plugin is
# linked for NVSHMEM_ARCH (90) alone.  debian/control states the default.
CUDA_ARCHS_DEFAULT := 80 90 100 120
CUDA_ARCHS_GIVEN := $(if $(filter undefined,$(origin CUDA_ARCHS)),,yes)
ifeq ($(origin CUDA_ARCHS),undefined)
ifneq ($(strip $(NVCC)),)
CUDA_ARCHS := $(filter $(CUDA_ARCHS_DEFAULT),$(patsubst compute_%,%,$(shell $(NVCC) --list-gpu-arch 2>/dev/null)))
CUDA_ARCHS := $(if $(CUDA_ARCHS),$(CUDA_ARCHS),80 90)
endif
endif
NVSHMEM_ARCH ?= 90
# make test builds the kernels as PTX for one architecture, TEST_CUDA_ARCHS
# (90, or the first of CUDA_ARCHS), unless CUDA_ARCHS is given or this build
# tree has kernels already (a plain make before keeps its architectures): no
# test runs them here (no GPU; the emulator tests compile the kernels' source
# with the host compiler), so the test build checks that every kernel
# compiles (cicc) and leaves out ptxas's machine code: 89 CPU s on the
# 2-core machine against 221 with sm_90 code.  A GPU would JIT that PTX;
# make, make install and make deb build machine code for every one (their
# arch line differs, so they rebuild).
# A tree with kernels keeps their nvcc line as it is (a second make test
# after the first rebuilds nothing; tests/run.sh passes it to the files that
# run make on the build).
TEST_CUDA_ARCHS ?= $(firstword $(filter 90,$(CUDA_ARCHS)) $(CUDA_ARCHS))
PL_HAVE_ARCH = $(if $(wildcard $(PL)/gen/arch),$(shell head -n 1 $(PL)/gen/arch))
PL_TEST_ARCHS = $(if $(CUDA_ARCHS_GIVEN),,$(if $(PL_HAVE_ARCH),NVCC_ARCH="$(PL_HAVE_ARCH)", \
	CUDA_ARCHS="$(TEST_CUDA_ARCHS)" \
	NVCC_ARCH="-gencode arch=compute_$(TEST_CUDA_ARCHS),code=compute_$(TEST_CUDA_ARCHS)"))
NVCC_ARCH ?= $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
	-gencode arch=compute_$(firstword $(CUDA_ARCHS)),code=compute_$(firstword $(CUDA_ARCHS))
NVCC_FLAGS ?= -O3 -std=c++17 $(NVCC_ARCH) -diag-suppress 177
BIN2C ?= $(dir $(NVCC))bin2c
# The CPU emulator test of the kernels needs a C++ compiler (not nvcc).
PN_CXX ?= $(shell for c in $(if $(findstring clang,$(CC)),clang++ g++,g++ clang++); do command -v $$c >/dev/null 2>&1 && { echo $$c; break; }; done)

PL := $(B)/plugins
PL_CFLAGS = $(CFLAGS) -fvisibility=hidden -Iplugins/include
PL_LIBS := -ldl -lpthread

PL_COMMON := plugins/common/cudrv.c plugins/common/gpu.c
# the one size and duration rule (src/base/units.c: the C library only)
PL_UNITS := src/base/units.c
PL_NCCL_SRC := $(PL_COMMON) plugins/nccl/nccl.c plugins/nccl/nccl_entry.c
PL_CUDA_SRC := $(PL_COMMON) $(PL_UNITS) plugins/cuda/cuda.c plugins/cuda/cuda_plan.c plugins/cuda/xnode.c \
	plugins/cuda/cuda_coll.c plugins/cuda/cuda_ce.c plugins/cuda/cuda_entry.c
PL_NCCL_OBJ := $(PL_NCCL_SRC:%.c=$(PL)/obj/%.o)
PL_CUDA_OBJ := $(PL_CUDA_SRC:%.c=$(PL)/obj/%.o)
PL_KDEPS := plugins/cuda/ar_block.cuh plugins/cuda/ar_sync.cuh plugins/common/pn_dev.cuh plugins/common/pn_reduce.cuh plugins/common/kargs.h plugins/include/penny_data.h \
	plugins/include/penny_plugin.h
PL_ALGOS := oneshot oneshot_fl twoshot_ll twoshot ring twoshot_hy ce

# The NCCL interposer (plugins/interpose/): NCCL's C API in front of the
# real NCCL, ncclAllReduce, ncclReduceScatter and ncclAllGather on the cuda
# plugin; always built, like penny-nccl.so.
PL_INTERPOSE_SRC := plugins/common/cudrv.c $(PL_UNITS) src/gpu/plugin_open.c plugins/interpose/interpose.c \
	plugins/interpose/regcache.c plugins/interpose/settings.c plugins/interpose/together.c \
	plugins/interpose/lastcall.c
PL_INTERPOSE_OBJ := $(PL_INTERPOSE_SRC:%.c=$(PL)/obj/%.o)

PLUGIN_SO := $(PL)/penny-nccl.so $(PL)/libpenny-nccl.so
# every plugin make install may install (PLUGIN_SO: those this build makes)
PLUGIN_ALL := penny-nccl.so libpenny-nccl.so penny-cuda.so penny-nvshmem.so
ifneq ($(strip $(NVCC)),)
PLUGIN_SO += $(PL)/penny-cuda.so
PL_IMAGE_OBJ := $(PL)/obj/image_data.o
PL_AR_IMAGE_OBJ := $(PL_ALGOS:%=$(PL)/obj/image_%.o) $(PL)/obj/image_xnode.o $(PL)/obj/image_coll.o
endif

# The nvshmem plugin (plugins/nvshmem/): NVSHMEM_HOME names an NVSHMEM tree
# (include/, lib/libnvshmem_host.so.3, lib/libnvshmem_device.a); by default
# the Python environment's (pip's nvidia-nvshmem).  The kernels are one cubin
# linked by nvlink against libnvshmem_device.a and embedded; the plugin
# links libnvshmem_host.so.3 with an RPATH to NVSHMEM_HOME/lib (the core
# binary never links it).  Without NVSHMEM it is skipped with one line.
# nvshmem-check compiles the kernels (a few types) and the host glue against
# NVSHMEM_HOME's headers alone: CI's syntax check where headers exist.
ifeq ($(origin NVSHMEM_HOME),undefined)
NVSHMEM_HOME := $(shell python3 -c 'import nvidia.nvshmem as m; print(m.__path__[0])' 2>/dev/null)
endif
NVLINK ?= $(dir $(NVCC))nvlink
PL_NV_INC := $(if $(strip $(NVCC)),$(if $(strip $(NVSHMEM_HOME)),$(wildcard $(NVSHMEM_HOME)/include/nvshmem.h)))
PL_NV_LIBDIR := $(abspath $(NVSHMEM_HOME)/lib)
PL_NV_OK := $(if $(PL_NV_INC),$(and $(wildcard $(PL_NV_LIBDIR)/libnvshmem_device.a),$(wildcard $(PL_NV_LIBDIR)/libnvshmem_host.so.3)))
# (large calls within a node by the cuda plugin's copy-engine allreduce:
# cuda_ce.c, its geometry in cuda_plan.c, its kernels' image image_ce.o)
PL_NV_SRC := $(PL_COMMON) $(PL_UNITS) plugins/nvshmem/nv_plugin.c plugins/nvshmem/nv_plan.c \
	plugins/nvshmem/nv_entry.c plugins/cuda/cuda_ce.c plugins/cuda/cuda_plan.c
PL_NV_OBJ := $(PL_NV_SRC:%.c=$(PL)/obj/%.o)
PL_NV_KDEPS := $(PL_KDEPS) plugins/nvshmem/nv_kargs.h
PL_NV_NVCC := $(NVCC) -std=c++17 -I$(NVSHMEM_HOME)/include -Xcompiler -fPIC,-fvisibility=hidden
ifneq ($(PL_NV_OK),)
PLUGIN_SO += $(PL)/penny-nvshmem.so
else
PL_NV_SKIP := nvshmem-skipped
endif

.PHONY: nvshmem-skipped nvshmem-check
nvshmem-skipped:
	@echo "penny-nvshmem.so skipped: no NVSHMEM (NVSHMEM_HOME='$(NVSHMEM_HOME)' lacks include/nvshmem.h, lib/libnvshmem_host.so.3 or lib/libnvshmem_device.a, or no nvcc)"

$(PL)/obj/plugins/nvshmem/nv_plugin.o: override PL_CFLAGS += -DPN_NVSHMEM_LIBDIR='"$(PL_NV_LIBDIR)"'

$(PL)/obj/nv_boot.o: plugins/nvshmem/nv_boot.cc plugins/nvshmem/nv_boot.h
	@mkdir -p $(dir $@)
	$(PL_NV_NVCC) -c -o $@ $<

$(PL)/gen/nvshmem_k.o: plugins/nvshmem/nv_kernels.cu $(PL_NV_KDEPS) $(PL)/gen/arch
	@mkdir -p $(dir $@)
	$(PL_NV_NVCC) $(NVCC_FLAGS) -rdc=true -c -o $@ $<

$(PL)/gen/nvshmem.cubin: $(PL)/gen/nvshmem_k.o
	$(NVLINK) -arch=sm_$(NVSHMEM_ARCH) -o $@ $< -L$(PL_NV_LIBDIR) -lnvshmem_device

$(PL)/gen/image_nvshmem.c: $(PL)/gen/nvshmem.cubin
	$(BIN2C) -c -n pn_image_nvshmem $< | \
		sed 's/^const unsigned char/__attribute__((aligned(64), visibility("hidden"))) const unsigned char/' >$@.tmp
	mv $@.tmp $@

$(PL)/penny-nvshmem.so: $(PL_NV_OBJ) $(PL)/obj/nv_boot.o $(PL_IMAGE_OBJ) $(PL)/obj/image_nvshmem.o \
		$(PL_ALGOS:%=$(PL)/obj/image_%.o)
	$(CC) -shared $(LDFLAGS) -o $@ $^ -L$(PL_NV_LIBDIR) -l:libnvshmem_host.so.3 \
		-Wl,-rpath,$(PL_NV_LIBDIR) -lstdc++ $(PL_LIBS)

nvshmem-check:
ifneq ($(PL_NV_INC),)
	@mkdir -p $(PL)/gen
	$(PL_NV_NVCC) $(NVCC_FLAGS) -DPN_NV_FEW_TYPES -rdc=true -c -o $(PL)/gen/nvshmem_check.o \
		plugins/nvshmem/nv_kernels.cu
	$(PL_NV_NVCC) -c -o $(PL)/gen/nv_boot_check.o plugins/nvshmem/nv_boot.cc
else
	@echo "nvshmem-check skipped: no nvcc or no NVSHMEM headers (NVSHMEM_HOME='$(NVSHMEM_HOME)')"
endif

# Test plugins for the loader's unit test and the CLI tests (sources in
# tests/plugins/fake/, never installed).
PL_TEST := $(B)/tests/plugins
PL_FAKES := $(PL_TEST)/penny-fake.so $(PL_TEST)/penny-badabi.so $(PL_TEST)/penny-nosym.so \
	$(PL_TEST)/penny-fake2.so $(PL_TEST)/penny-failinit.so $(PL_TEST)/penny-fakewrong.so \
	$(PL_TEST)/penny-fakedie.so $(PL_TEST)/penny-fakeskew.so $(PL_TEST)/penny-fakenograph.so $(PL_TEST)/penny-fakeflat.so \
	$(PL_TEST)/penny-fakeold.so $(PL_TEST)/penny-fakeall.so $(PL_TEST)/cuda/penny-cuda.so \
	$(PL_TEST)/nccl/penny-nccl.so $(PL_TEST)/cuda-nobw/penny-cuda.so $(PL_TEST)/noxnode/penny-fake.so \
	$(PL_TEST)/ncclhost/penny-nccl.so $(PL_TEST)/xcoll2/penny-fake.so

# Stand-ins for NCCL and the CUDA driver, and a program that calls NCCL like
# a framework: the NCCL interposer's tests (tests/cli/t0610-nccl-interposer.sh).
PL_NCCL_TEST := $(PL_TEST)/fakenccl/libnccl.so.2 $(PL_TEST)/fakecuda/libcuda.so.1 \
	$(PL_TEST)/nccl-caller

PL_EMU :=
ifneq ($(strip $(PN_CXX)),)
PL_EMU := $(B)/tests/unit/t_plugin_emu $(B)/tests/unit/t_plugin_xnemu $(B)/tests/unit/t_plugin_nvemu \
	$(B)/tests/unit/t_plugin_coemu $(B)/tests/unit/t_plugin_ceemu
endif

plugins: $(PLUGIN_SO) $(PL_NV_SKIP) $(PL_FAKES) $(PL_NCCL_TEST) $(PL_EMU)

# A test plugin whose recipe (its -D variant) changes is built again.
$(PL_FAKES) $(PL_NCCL_TEST): plugins/plugins.mk

# The core's loader finds the plugins of this build tree too.
$(B)/src/gpu/plugin.o: override CFLAGS += -DPENNY_BUILD_PLUGINDIR='"$(abspath $(PL))"'

$(PL)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -c -o $@ $<

$(PL)/penny-nccl.so: $(PL_NCCL_OBJ) $(PL_IMAGE_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(PL_LIBS)

# The nccl plugin itself without the data kernels (fill and check on the
# host, as where nvcc is missing): what the tests run over the fake NCCL and
# CUDA driver, which load no GPU code (t0208).
$(PL_TEST)/ncclhost/penny-nccl.so: $(PL_NCCL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -o $@ $(filter %.o,$^) $(PL_LIBS)

# Only NCCL's API is exported (the sources hide everything else).
$(PL)/libpenny-nccl.so: $(PL_INTERPOSE_OBJ)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libpenny-nccl.so -o $@ $^ $(PL_LIBS)

$(PL)/penny-cuda.so: $(PL_CUDA_OBJ) $(PL_IMAGE_OBJ) $(PL_AR_IMAGE_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(PL_LIBS)

# Kernels: nvcc -> fatbin -> C array (bin2c) -> object, built again when
# the architectures change ($(PL)/gen/arch holds those they were built for).
$(PL)/gen/arch: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(NVCC_ARCH)' | cmp -s - $@ || printf '%s\n' '$(NVCC_ARCH)' >$@

$(PL)/gen/data.fatbin: plugins/common/data_kernels.cu $(PL_KDEPS) $(PL)/gen/arch
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -fatbin -o $@ $<

$(PL)/gen/%.fatbin: plugins/cuda/ar_kernels.cu $(PL_KDEPS) $(PL)/gen/arch
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -DPN_AR_ALGO=$* -fatbin -o $@ $<

# The copy-engine allreduce's reduce and gate kernels (ce_kernels.cu),
# the image of the size table's kernel "ce".
$(PL)/gen/ce.fatbin: plugins/cuda/ce_kernels.cu $(PL_KDEPS) $(PL)/gen/arch
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -fatbin -o $@ $<

# The other collectives (reduce-scatter ... all-gather), their own image.
$(PL)/gen/coll.fatbin: plugins/cuda/co_kernels.cu $(PL_KDEPS) $(PL)/gen/arch
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -fatbin -o $@ $<

# The cross-node kernels, their own image.
$(PL)/gen/xnode.fatbin: plugins/cuda/xn_kernels.cu $(PL_KDEPS) $(PL)/gen/arch
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -fatbin -o $@ $<

# kernel-check: the block helpers every one-node kernel uses, run on a real
# GPU against a host reference (tests/helpers/kernel-check.cu).  Not part of
# all or test: no test machine has a GPU; GPU benches run it first.
.PHONY: kernel-check
ifneq ($(strip $(NVCC)),)
kernel-check: $(B)/tests/helpers/kernel-check
$(B)/tests/helpers/kernel-check: tests/helpers/kernel-check.cu $(PL_KDEPS) $(PL)/gen/arch
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -Iplugins/include -o $@ $<
else
kernel-check:
	@echo "kernel-check needs nvcc (NVCC= or none found)" >&2; exit 2
endif

$(PL)/gen/image_%.c: $(PL)/gen/%.fatbin
	$(BIN2C) -c -n pn_image_$* $< | \
		sed 's/^const unsigned char/__attribute__((aligned(64), visibility("hidden"))) const unsigned char/' >$@.tmp
	mv $@.tmp $@

.SECONDARY: $(PL_ALGOS:%=$(PL)/gen/%.fatbin) $(PL_ALGOS:%=$(PL)/gen/image_%.c) \
	$(PL)/gen/xnode.fatbin $(PL)/gen/image_xnode.c $(PL)/gen/coll.fatbin $(PL)/gen/image_coll.c \
	$(PL)/gen/data.fatbin $(PL)/gen/image_data.c \
	$(PL)/gen/nvshmem_k.o $(PL)/gen/nvshmem.cubin $(PL)/gen/image_nvshmem.c

$(PL)/obj/image_%.o: $(PL)/gen/image_%.c
	$(CC) $(OPT) -fPIC -c -o $@ $<

$(PL_TEST)/penny-fake.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -shared -o $@ $<
$(PL_TEST)/penny-fake2.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_VERSION='"second"' -shared -o $@ $<
$(PL_TEST)/penny-failinit.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_FAIL_INIT -DFAKE_NAME='"failinit"' -shared -o $@ $<
$(PL_TEST)/penny-fakewrong.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_WRONG -DFAKE_NAME='"fakewrong"' -shared -o $@ $<
$(PL_TEST)/penny-fakeskew.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_SKEW -DFAKE_NAME='"fakeskew"' -shared -o $@ $<
$(PL_TEST)/penny-fakedie.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_DIE -DFAKE_NAME='"fakedie"' -shared -o $@ $<
$(PL_TEST)/penny-fakenograph.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_NOGRAPH -DFAKE_NAME='"fakenograph"' -shared -o $@ $<
$(PL_TEST)/penny-fakeflat.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_MULTINODE -DFAKE_NAME='"fakeflat"' -shared -o $@ $<
$(PL_TEST)/penny-fakeold.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_OLD_SIZE -DFAKE_NAME='"fakeold"' -shared -o $@ $<
$(PL_TEST)/penny-fakeall.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_ALGOS=15u -DFAKE_NAME='"fakeall"' -shared -o $@ $<
# A test plugin named cuda (its own directory): penny bw --gpu and --backend cuda.
$(PL_TEST)/cuda/penny-cuda.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_ALGOS=15u -DFAKE_NAME='"cuda"' -DFAKE_VERSION='"fake cuda"' \
		-shared -o $@ $<
$(PL_TEST)/nccl/penny-nccl.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_NAME='"nccl"' -DFAKE_NOBW -DFAKE_ALGOS=17u -DFAKE_NCCL_LOG -DFAKE_MULTINODE -shared \
		-o $@ $<
$(PL_TEST)/cuda-nobw/penny-cuda.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_NAME='"cuda"' -DFAKE_NOBW -shared -o $@ $<
# The test plugin without the xnode calls: the host-staged path across nodes.
$(PL_TEST)/noxnode/penny-fake.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_NOXNODE -shared -o $@ $<
# The test plugin as before PENNY_CAP_XCOLL_NODES: xnode_coll's kinds that
# send to one node each across 2 nodes only.
$(PL_TEST)/xcoll2/penny-fake.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_XCOLL2 -shared -o $@ $<
$(PL_TEST)/fakenccl/libnccl.so.2: tests/plugins/fake/fakenccl.c plugins/interpose/nccl_api.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -shared -Wl,-soname,libnccl.so.2 -o $@ $<
$(PL_TEST)/fakecuda/libcuda.so.1: tests/plugins/fake/fakecuda.c
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $<
$(PL_TEST)/nccl-caller: tests/plugins/fake/nccl-caller.c plugins/interpose/nccl_api.h \
		$(PL_TEST)/fakenccl/libnccl.so.2
	$(CC) $(PL_CFLAGS) $(LDFLAGS) -o $@ $< -L$(PL_TEST)/fakenccl -l:libnccl.so.2 -ldl \
		-Wl,-rpath,$(abspath $(PL_TEST)/fakenccl)
$(PL_TEST)/penny-badabi.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_ABI=7 -shared -o $@ $<
$(PL_TEST)/penny-nosym.so: tests/plugins/fake/fake.c plugins/include/penny_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(PL_CFLAGS) -DFAKE_NOSYM -Wno-unused-function -shared -o $@ $<

# The kernels on the CPU emulator (tests/plugins/emu/; no sanitizer: fibers
# switch stacks), each test one C++ file that includes the kernels.  -g1:
# line tables for backtraces; full debug info cost a third of their
# compile (36 -> 24 CPU s for t_plugin_emu), the largest of make test's.
define pl_emu_build
	@mkdir -p $(dir $@)
	$(PN_CXX) -std=c++17 -O1 -g1 -Wall -Wextra -Werror -Wno-unknown-pragmas -Wno-unused-function \
		-Wno-unused-parameter -Wno-maybe-uninitialized -Wno-pass-failed -Wno-unknown-warning-option \
		-Itests/plugins/emu -o $@ $<
endef
$(B)/tests/unit/t_plugin_emu: tests/plugins/emu/t_emu.cc tests/plugins/emu/emu.h \
		tests/plugins/emu/emu_dev.h tests/plugins/emu/emu_check.h plugins/cuda/ar_kernels.cu \
		plugins/common/data_kernels.cu \
		$(PL_KDEPS)
	$(pl_emu_build)

# The cross-node kernel on the emulator, a stand-in proxy beside it.
$(B)/tests/unit/t_plugin_xnemu: tests/plugins/emu/t_emu_xn.cc tests/plugins/emu/emu.h \
		tests/plugins/emu/emu_dev.h tests/plugins/emu/emu_check.h plugins/cuda/xn_kernels.cu \
		plugins/include/penny_plugin.h $(PL_KDEPS)
	$(pl_emu_build)

# The other collectives' kernels on the emulator.
$(B)/tests/unit/t_plugin_coemu: tests/plugins/emu/t_emu_coll.cc tests/plugins/emu/emu.h \
		tests/plugins/emu/emu_dev.h tests/plugins/emu/emu_check.h plugins/cuda/co_kernels.cu \
		$(PL_KDEPS)
	$(pl_emu_build)

# The copy-engine allreduce on the emulator: its host code (C, built here
# without the rest of the plugin) through a stand-in driver, its kernels.
PL_CEEMU_C := plugins/cuda/cuda_ce.c plugins/cuda/cuda_plan.c plugins/common/cudrv.c $(PL_UNITS)
PL_CEEMU_OBJ := $(PL_CEEMU_C:%.c=$(B)/tests/unit/ceemu/%.o)
# (without SAN: the emulator's fibers switch stacks, and its link has none)
$(B)/tests/unit/ceemu/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out $(SAN),$(PL_CFLAGS)) -c -o $@ $<
$(B)/tests/unit/t_plugin_ceemu: tests/plugins/emu/t_emu_ce.cc tests/plugins/emu/emu.h \
		tests/plugins/emu/emu_dev.h tests/plugins/emu/emu_check.h plugins/cuda/ce_kernels.cu \
		plugins/cuda/cuda_ce.h plugins/cuda/cuda.h $(PL_CEEMU_OBJ) $(PL_KDEPS)
	@mkdir -p $(dir $@)
	$(PN_CXX) -std=c++17 -O1 -g1 -Wall -Wextra -Werror -Wno-unknown-pragmas -Wno-unused-function \
		-Wno-unused-parameter -Wno-maybe-uninitialized -Wno-pass-failed -Wno-unknown-warning-option \
		-Itests/plugins/emu -Iplugins/include -o $@ $< $(PL_CEEMU_OBJ) -ldl -lpthread

# The nvshmem plugin's kernels on the same emulator, NVSHMEM's calls stood in.
$(B)/tests/unit/t_plugin_nvemu: tests/plugins/emu/t_nvemu.cc tests/plugins/emu/emu.h \
		tests/plugins/emu/emu_dev.h tests/plugins/emu/emu_check.h plugins/nvshmem/nv_kernels.cu \
		$(PL_NV_KDEPS)
	$(pl_emu_build)

install_plugins = install -d $(DESTDIR)$(PLUGINDIR) && install -m 755 $(PLUGIN_SO) $(DESTDIR)$(PLUGINDIR)/

-include $(PL_NCCL_OBJ:.o=.d) $(PL_CUDA_OBJ:.o=.d) $(PL_INTERPOSE_OBJ:.o=.d) $(PL_NV_OBJ:.o=.d)
# The plugin unit tests include plugin sources: rebuild them when those change.
-include $(UNIT_BIN:%=%.d) $(HELPER_BIN:%=%.d)
