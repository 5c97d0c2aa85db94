# llm-run build. `make` builds ./llm-run (CPU backend); `make CUDA=1` adds the CUDA backend.
# `make test` builds and runs every test; `make demo` runs the default model.
CC      ?= cc
CXX     ?= c++
# No -march=native: the binary runs on any x86-64 (or other) CPU; the SIMD kernels
# (kernels/cpu/simd_*.c) carry target attributes and are chosen at run time.
OPT     ?= -O3
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -fopenmp -I. -MMD -MP
CXXFLAGS ?= $(OPT) -g
CXXFLAGS += -std=c++17 -Wall -Wextra -I. -MMD -MP
LDLIBS  += -lsentencepiece -lcjson -lz -lopenblas -lm -lstdc++ -fopenmp -lpthread
LDFLAGS +=

ifeq ($(SANITIZE),1)
  CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer
  CXXFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer
  LDFLAGS  += -fsanitize=address,undefined
  BUILD    ?= build-san
endif
# CUDA=1: the same ./llm-run with the CUDA backend too (kernels/cuda/*.cu), objects in
# build-cuda so `make` and `make CUDA=1` never mix. Compiles and links without a GPU (only the
# toolkit: nvcc, cudart, cuBLAS); sm_80 and sm_90 code plus sm_90 PTX for newer GPUs.
ifeq ($(CUDA),1)
  BUILD     ?= build-cuda
endif
BUILD ?= build

# Every .c under these directories is part of the library linked by the binary and the tests.
LIB_DIRS := model tokenizer kernels/cpu eviction eval
LIB_C    := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_CC   := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.cc))
LIB_OBJ  := $(LIB_C:%.c=$(BUILD)/%.o) $(LIB_CC:%.cc=$(BUILD)/%.o)

ifeq ($(CUDA),1)
  CUDA_HOME ?= $(or $(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null)),/usr/local/cuda)
  NVCC      ?= $(CUDA_HOME)/bin/nvcc
  CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
               -gencode arch=compute_90,code=compute_90
  NVCCFLAGS ?= -O3 -g -lineinfo
  NVCCFLAGS += -std=c++17 $(CUDA_ARCH) -I. -MMD -MP -Xcompiler -Wall,-Wextra,-Wno-unused-parameter \
               -Xptxas -warn-spills,-warn-lmem-usage,-warn-double-usage
  CFLAGS  += -DLLM_CUDA=1
  LIB_CU  := $(wildcard kernels/cuda/*.cu)
  LIB_OBJ += $(LIB_CU:%.cu=$(BUILD)/%.o)
  LDLIBS  += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart
endif

TEST_C   := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_C:tests/%.c=$(BUILD)/tests/%)

.PHONY: all lib test check demo clean setup bench
all: llm-run

# Objects are linked directly (not through an archive): the policy registry refers to the
# policies weakly, which would not pull archive members in.
# ./llm-run is a copy of $(BUILD)/llm-run, refreshed on every make, so switching between
# `make` and `make CUDA=1` always leaves the binary of the last configuration built.
.PHONY: llm-run
llm-run: $(BUILD)/llm-run
	@cp $< $@

$(BUILD)/llm-run: $(BUILD)/main.o $(LIB_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

lib: $(LIB_OBJ)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJ) $(LDLIBS) -lcmocka

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

# The suite tests the CPU backend (LLM_DEVICE=cpu) unless told otherwise: on a GPU machine
# `--device auto` would move some runs to the GPU; tests/test_cuda.sh tests the GPU explicitly.
check: llm-run $(TEST_BIN)
	@BUILD=$(BUILD) LLM_DEVICE=$${LLM_DEVICE:-cpu} tests/run_all.sh

# The main job on the default model (../shared/models/stories260K, or a downloaded copy).
demo: setup
	@$(MAKE) --no-print-directory llm-run
	@scripts/demo.sh

setup:
	@scripts/setup.sh

clean:
	rm -rf build build-san build-cuda llm-run

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
