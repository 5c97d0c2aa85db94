# llm-run build. `make` builds ./llm-run (CPU backend); `make CUDA=1` adds the CUDA backend.
# `make test` builds and runs every test; `make demo` runs the default model.
CC      ?= cc
CXX     ?= c++
# Every build runs on all cores unless the command line says -jN (a fresh `make test` compiles
# about 150 files; a command-line -j takes precedence over this default).
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
# No -march=native: the binary runs on any x86-64 (or other) CPU; the SIMD kernels
# (kernels/cpu/simd_*.c) carry target attributes and are chosen at run time.
# SANITIZE=1 builds at -O2: the same checks, and the four quantized-kernel families
# (kernels/cpu/quant*_avx*.c) compile about 3x faster than at -O3 under ASan + UBSan (quant_avx2.c:
# 36 s against ~118 s on the 2-core machine, 2026-11-29), minutes of every CI run.
ifeq ($(SANITIZE),1)
  OPT   ?= -O2
endif
OPT     ?= -O3
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -fopenmp -I. -MMD -MP
CXXFLAGS ?= $(OPT) -g
CXXFLAGS += -std=c++17 -Wall -Wextra -I. -MMD -MP
LDLIBS  += -lsentencepiece -lcjson -lpcre2-8 -lutf8proc -lz -lopenblas -lm -lstdc++ -fopenmp -lpthread
LDFLAGS +=

# SANITIZE=1: AddressSanitizer (with LeakSanitizer) + UBSan into build-san/; any report ends the
# program with a non-zero exit (no recovery), so a test that hits one fails. Reports inside
# the uninstrumented libraries (OpenBLAS, OpenMP, SentencePiece) are suppressed by
# tests/sanitizer/*.supp (exported by tests/run_all.sh).
ifeq ($(SANITIZE),1)
  SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
  CFLAGS   += $(SAN_FLAGS)
  CXXFLAGS += $(SAN_FLAGS)
  LDFLAGS  += $(SAN_FLAGS)
  BUILD    ?= build-san
endif
# CUDA=1: the same ./llm-run with the CUDA backend too (kernels/cuda/*.cu), objects in
# build-cuda so `make` and `make CUDA=1` never mix. Compiles and links without a GPU (only the
# toolkit: nvcc, cudart, cuBLAS); sm_80 and sm_90 code plus sm_90 PTX for newer GPUs.
comma := ,
ifeq ($(CUDA),1)
  BUILD     ?= build-cuda
endif
BUILD ?= build

# Every .c under these directories is part of the library linked by the binary and the tests.
LIB_DIRS := model tokenizer kernels kernels/cpu eviction eval cli
LIB_C    := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_CC   := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.cc))
LIB_OBJ  := $(LIB_C:%.c=$(BUILD)/%.o) $(LIB_CC:%.cc=$(BUILD)/%.o)

# CUDA=1 objects shared with other builds (tests/test_cuda_emu.sh builds the CUDA twin of
# build/ and of build-san/): HOST_BUILD=DIR takes every C/C++ library object except
# model/device.o (the one file that reads LLM_CUDA) from DIR, a build made with the same flags
# without CUDA=1; CU_BUILD=DIR puts the .cu objects in DIR (nvcc's flags do not change with
# SANITIZE, so build-cuda-san can use build-cuda's). Both default to BUILD (nothing shared).
HOST_BUILD ?= $(BUILD)
CU_BUILD   ?= $(BUILD)
ifeq ($(CUDA),1)
  ifneq ($(HOST_BUILD),$(BUILD))
    LIB_OBJ := $(filter $(BUILD)/model/device.o,$(LIB_OBJ)) \
               $(patsubst $(BUILD)/%,$(HOST_BUILD)/%,$(filter-out $(BUILD)/model/device.o,$(LIB_OBJ)))
  endif
endif
ifeq ($(CUDA),1)
  CUDA_HOME ?= $(or $(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null)),/usr/local/cuda)
  NVCC      ?= $(CUDA_HOME)/bin/nvcc
  CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
               -gencode arch=compute_90,code=compute_90
  NVCCFLAGS ?= -O3 -g -lineinfo
  NVCCFLAGS += -std=c++17 $(CUDA_ARCH) -I. -MMD -MP -Xcompiler -Wall,-Wextra,-Wno-unused-parameter \
               -Xptxas -warn-spills,-warn-lmem-usage,-warn-double-usage
  CFLAGS  += -DLLM_CUDA=1
  LIB_CU  := $(wildcard kernels/cuda/*.cu) $(wildcard model/cuda/*.cu)
  LIB_OBJ += $(LIB_CU:%.cu=$(CU_BUILD)/%.o)
  LDLIBS  += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart
  # [DECISION] subgen_stream's sketch update and subgen's decode k-center reproduce the CPU
  # policies' double arithmetic (the cluster choice and reservoir draws, kernels/cuda/ss_insert.cu;
  # the ℓ2² distances, kernels/cuda/subgen_recompress.cu; Ada-KV's budget split,
  # kernels/cuda/ada_recompress.cu): the three kernels allowed FP64
  $(CU_BUILD)/kernels/cuda/ss_insert.o $(CU_BUILD)/kernels/cuda/subgen_recompress.o $(CU_BUILD)/kernels/cuda/ada_recompress.o: \
    NVCCFLAGS := $(subst $(comma)-warn-double-usage,,$(NVCCFLAGS))
endif

TEST_C   := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_C:tests/%.c=$(BUILD)/tests/%)
# Builders shared by the cmocka tests (tests/support/support.h), linked into every test binary.
TEST_SUPPORT_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/support/*.c))
.SECONDARY: $(TEST_SUPPORT_OBJ)

# Fuzz targets (fuzz/fuzz_NAME.c). `make check` builds each with the normal compiler and
# fuzz/replay.c into $(BUILD)/fuzz/replay_NAME, which tests/test_fuzz_corpus.sh runs on the
# committed corpus fuzz/corpus/NAME. `make fuzz` builds them with clang + libFuzzer.
FUZZ_NAMES  := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_REPLAY := $(FUZZ_NAMES:%=$(BUILD)/fuzz/replay_%)

.PHONY: all lib test check demo clean setup bench fuzz fuzz-build
all: llm-run

# Objects are linked directly (not through an archive): the policy registry refers to the
# policies weakly, which would not pull archive members in.
# ./llm-run is a copy of $(BUILD)/llm-run, refreshed on every make, so switching between
# `make` and `make CUDA=1` always leaves the binary of the last configuration built.
.PHONY: llm-run
llm-run: $(BUILD)/llm-run
	@cp $< $@.tmp && mv -f $@.tmp $@

$(BUILD)/llm-run: $(BUILD)/main.o $(LIB_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

lib: $(LIB_OBJ)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c -o $@ $<

$(CU_BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c -o $@ $<

ifneq ($(HOST_BUILD),$(BUILD))
$(HOST_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -DLLM_CUDA=1,$(CFLAGS)) -c -o $@ $<

$(HOST_BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c -o $@ $<
endif

# The objects the CUDA emulator links in place of the .cu files (tests/test_cuda_emu.sh)
.PHONY: print-host-obj
print-host-obj:
	@echo $(BUILD)/main.o $(filter-out $(LIB_CU:%.cu=$(CU_BUILD)/%.o),$(LIB_OBJ))

$(BUILD)/tests/%: tests/%.c $(LIB_OBJ) $(TEST_SUPPORT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJ) $(TEST_SUPPORT_OBJ) $(LDLIBS) -lcmocka

$(BUILD)/bench/%: bench/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJ) $(LDLIBS)

# CPU benchmark (issue 6): makes the stories110M-shaped synthetic model under models/ when
# missing, measures memory bandwidth, prefill and decode, and writes bench/cpu.md.
# BENCH_THREADS (default: all cores) and BENCH_ARGS pass through to bench/run_bench.sh.
bench: setup
	@$(MAKE) --no-print-directory llm-run $(BUILD)/bench/bench_cpu
	@BUILD=$(BUILD) bench/run_bench.sh

# The test command of README.md: installs what is missing, builds, then runs the unit tests
# (cmocka) and the end-to-end tests (tests/*.sh). `make check` skips the set-up step.
test: setup
	@$(MAKE) --no-print-directory check

$(BUILD)/fuzz/replay_%: fuzz/fuzz_%.c fuzz/replay.c fuzz/fuzz.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< fuzz/replay.c $(LIB_OBJ) $(LDLIBS)

# The suite tests the CPU backend (LLM_DEVICE=cpu) unless told otherwise: on a GPU machine
# `--device auto` would move some runs to the GPU; tests/test_cuda.sh tests the GPU explicitly.
check: llm-run $(TEST_BIN) $(FUZZ_REPLAY)
	@BUILD=$(BUILD) LLM_DEVICE=$${LLM_DEVICE:-cpu} tests/run_all.sh

# The main job on the default model (../shared/models/stories260K, or a downloaded copy).
demo: setup
	@$(MAKE) --no-print-directory llm-run
	@scripts/demo.sh

setup:
	@scripts/setup.sh

# ------------------------------------------------------------------------------- fuzzing
# `make fuzz`: installs clang + libFuzzer (scripts/setup.sh --fuzz), builds every target with
# -fsanitize=fuzzer,address,undefined into build-fuzz/ and runs each for FUZZ_TIME seconds
# (fuzz/run.sh: new inputs go to build-fuzz/corpus/NAME, crashes to build-fuzz/crash/).
# FUZZ=NAME runs one target.
FUZZ_CC    ?= clang
FUZZ_CXX   ?= clang++
FUZZ_TIME  ?= 60
FUZZ_BUILD := build-fuzz
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS   := -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link -std=c11 -D_GNU_SOURCE -Wall -Wextra \
                 -Wno-unused-parameter -fopenmp -I. -MMD -MP
FUZZ_CXXFLAGS := -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link -std=c++17 -Wall -Wextra -I. -MMD -MP
FUZZ_LIB_OBJ  := $(LIB_C:%.c=$(FUZZ_BUILD)/%.o) $(LIB_CC:%.cc=$(FUZZ_BUILD)/%.o)
FUZZ_BIN      := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@.o $<
	$(FUZZ_CXX) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $@.o $(FUZZ_LIB_OBJ) $(LDLIBS)

fuzz-build: $(FUZZ_BIN)

fuzz:
	@scripts/setup.sh --fuzz
	@$(MAKE) --no-print-directory fuzz-build
	@FUZZ_TIME=$(FUZZ_TIME) fuzz/run.sh $(FUZZ)

clean:
	rm -rf build build-san build-cuda build-fuzz llm-run

-include $(shell find $(sort $(BUILD) $(HOST_BUILD) $(CU_BUILD)) $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
