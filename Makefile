# agoq-bench build.
#   make            build build/agoq (CPU backend always; CUDA + NCCL when nvcc is found)
#   make run        the default experiment on the best backend -> results/cpu/default.json + .png, then
#                   (GPU + cuDNN) the measured step comparison experiments/step_quick.json
#   make test       CPU test runner (what CI runs); SAN=1 adds address/undefined sanitizers
#   make test-cuda  bit-exact CUDA-vs-reference tests (needs a GPU)
#   make cuda-check compile every .cu for sm_90 (CI does this: CUDA code must not rot)
#   make figures    every experiment + gnuplot figures
# Knobs: CUDA=0/1 (default: 1 when $(NVCC) exists), MPI=0/1 (mpicc, one process per GPU),
#        CUDA_HOME, NCCL_HOME, CUDA_ARCH (default sm_90), SAN=1.

CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)
CUDNN_HOME ?= $(CUDA_HOME)
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCH ?= sm_90
CUDA      ?= $(shell test -x $(NVCC) && echo 1 || echo 0)
MPI       ?= 0
# cuDNN (fused flash attention of the step engine): found like NCCL, by its header under CUDNN_HOME.
CUDNN     ?= $(if $(filter 1,$(CUDA)),$(shell test -f $(CUDNN_HOME)/include/cudnn.h && echo 1 || echo 0),0)
SAN       ?= 0
BUILD     ?= build

# Parallel by default (one job per core); an explicit -jN on the command line wins.
ifeq (0,$(MAKELEVEL))
ifeq (,$(filter -j%,$(MAKEFLAGS)))
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
endif

ifeq ($(MPI),1)
CC := mpicc
endif
CC ?= cc

GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)

# The references are the specification: no fast-math, no FMA contraction.
CFLAGS  := -std=c11 -O2 -g -Wall -Wextra -Wundef -Wshadow -Wno-unused-parameter \
           -ffp-contract=off -fno-fast-math -D_GNU_SOURCE -I. \
           -DAGOQ_HAVE_CUDA=$(CUDA) -DAGOQ_HAVE_MPI=$(MPI) -DAGOQ_HAVE_CUDNN=$(CUDNN)
LDLIBS  := -lcjson -lm -lpthread
ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
endif

# Quantizers must match the C references bit for bit: same IEEE ops, no FMA, no FTZ.
NVCCFLAGS := -arch=$(CUDA_ARCH) -O3 -std=c++17 -I. -I$(NCCL_HOME)/include \
             --fmad=false --prec-div=true --prec-sqrt=true --ftz=false \
             -DAGOQ_HAVE_CUDA=1 -DAGOQ_HAVE_MPI=$(MPI) -DAGOQ_HAVE_CUDNN=$(CUDNN) \
             -I$(CUDNN_HOME)/include -Xcompiler -Wall,-Wextra,-Wno-unused-parameter

# Layers, lowest first (tools/check_layers.sh keeps every #include pointing down):
#   core/ < kernels/<op>/ < collectives/, models/ < train/, sim/, step/ < runners/ < harness/
C_SRCS    := $(wildcard core/*.c kernels/*.c kernels/*/*.c collectives/*.c models/*.c train/*.c sim/*.c step/*.c \
                        runners/*.c harness/*.c)
CU_SRCS   := $(wildcard core/*.cu kernels/*.cu kernels/*/*.cu collectives/*.cu train/*.cu sim/*.cu step/*.cu)
# tests/<area>/test_*.c mirror the source folders (tests/quant/ tests kernels/quant/); tests/cuda/
# (and tests/cuda/<area>/) hold the GPU tests.
TEST_SRCS := $(filter-out tests/cuda/%,$(wildcard tests/test_*.c tests/*/test_*.c))
CUDA_TEST_SRCS := $(wildcard tests/cuda/test_*.c tests/cuda/*/test_*.c)
HDRS      := $(wildcard */*.h */*/*.h */*/*/*.h)
CUHS      := $(wildcard */*.cuh */*/*.cuh */*/*/*.cuh)

C_OBJS    := $(patsubst %.c,$(BUILD)/%.o,$(C_SRCS))
LIB_OBJS  := $(filter-out $(BUILD)/harness/main.o,$(C_OBJS))
ifeq ($(CUDA),1)
CU_OBJS   := $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRCS))
LDLIBS    += -L$(CUDA_HOME)/lib64 -L$(NCCL_HOME)/lib64 -lcudart -lcublas -lcublasLt -lnccl $(if $(filter 1,$(CUDNN)),-L$(CUDNN_HOME)/lib64 -lcudnn) -lstdc++ -Wl,-rpath,$(CUDA_HOME)/lib64
else
CU_OBJS   :=
endif

.PHONY: all deps run run-step test test-cuda cuda-check figures clean
all: $(BUILD)/agoq

deps:
	@bash tools/deps.sh $(if $(filter 1,$(MPI)),--mpi) $(if $(filter 1,$(CUDA)),--cuda=$(NVCC))

$(BUILD)/commit.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
FORCE:

$(BUILD)/core/provenance.o: CFLAGS += -DAGOQ_GIT_COMMIT='"$(GIT_COMMIT)"'
$(BUILD)/core/provenance.o: $(BUILD)/commit.stamp

$(BUILD)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# train/: the CPU training path, threaded with OpenMP over output rows (results do not depend on
# the thread count: every sum keeps one order) and -O3 so its GEMM inner loops vectorize.
$(BUILD)/train/%.o: CFLAGS += -O3 -fopenmp
LDFLAGS += -fopenmp

$(BUILD)/%.o: %.cu $(HDRS) $(CUHS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/agoq: $(C_OBJS) $(CU_OBJS)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/agoq_test: $(LIB_OBJS) $(CU_OBJS) $(patsubst %.c,$(BUILD)/%.o,$(TEST_SRCS) tests/runner.c)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/agoq_test_cuda: $(LIB_OBJS) $(CU_OBJS) $(patsubst %.c,$(BUILD)/%.o,$(CUDA_TEST_SRCS) tests/runner.c)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

run: | deps
	@$(MAKE) --no-print-directory $(BUILD)/agoq
	$(BUILD)/agoq run experiments/default.json --backend auto
	gnuplot -e "in='results/cpu/default.tsv'; out='results/cpu/default.png'" plots/default.gp
	@echo "wrote results/cpu/default.json results/cpu/default.tsv results/cpu/default.png"
	@$(MAKE) --no-print-directory run-step

# The measured step comparison of `make run` (experiments/step_quick.json): only where
# `agoq step --check` finds a GPU and cuDNN; otherwise one line saying why it was skipped.
run-step:
	@if why=$$($(BUILD)/agoq step --check 2>&1); then \
	  echo "make run: $$why"; \
	  $(BUILD)/agoq run experiments/step_quick.json -q > results/h200/step_quick.txt && \
	  echo "make run: measured step, 2 LLaMA-2-7B layers, seq 4096 (results/h200/step_quick.json):" && \
	  awk -F'\t' '!/^#/ { printf "  %-10s peak %7.2f GB  %9.0f tokens/s\n", $$1, $$8 / 1e9, $$11 }' results/h200/step_quick.tsv; \
	else echo "make run: step comparison skipped: $${why#agoq: step --check: }"; fi

test: | deps
	@bash tools/check_layers.sh
	@$(MAKE) --no-print-directory $(BUILD)/agoq $(BUILD)/agoq_test
	AGOQ_BIN=$(BUILD)/agoq $(BUILD)/agoq_test

test-cuda: | deps
	@test "$(CUDA)" = 1 || { echo "make test-cuda: needs CUDA=1 (nvcc at $(NVCC))"; exit 1; }
	@$(MAKE) --no-print-directory $(BUILD)/agoq $(BUILD)/agoq_test_cuda
	AGOQ_BIN=$(BUILD)/agoq $(BUILD)/agoq_test_cuda

cuda-check:
	@test -x $(NVCC) || { echo "cuda-check: nvcc not found at $(NVCC)"; exit 1; }
	@set -e; for f in $(CU_SRCS); do echo "nvcc -arch=$(CUDA_ARCH) $$f"; \
	  $(NVCC) $(NVCCFLAGS) -c $$f -o /dev/null; done

figures: | deps
	@$(MAKE) --no-print-directory $(BUILD)/agoq
	bash tools/figures.sh $(BUILD)/agoq

clean:
	rm -rf $(BUILD)
