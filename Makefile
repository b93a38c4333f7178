# agoq-bench build.
#   make            build build/agoq (CPU backend always; CUDA + NCCL when nvcc is found)
#   make run        the default experiment on the best backend -> results/default.json + .png
#   make test       CPU test runner (what CI runs); SAN=1 adds address/undefined sanitizers
#   make test-cuda  bit-exact CUDA-vs-reference tests (needs a GPU)
#   make cuda-check compile every .cu for sm_90 (CI does this: CUDA code must not rot)
#   make figures    every experiment + gnuplot figures
#   make check-results  re-run every experiment whose committed results came from the cpu
#                   backend and compare every non-timing field (make test does the simulated ones)
#   make fuzz       libFuzzer harnesses of the parsers (needs clang: tools/deps.sh --fuzz), each
#                   run FUZZ_SECONDS (default 60) with address+undefined sanitizers
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

C_SRCS    := $(wildcard harness/*.c kernels/*.c kernels/*/*.c collectives/*.c models/*.c train/*.c sim/*.c step/*.c)
CU_SRCS   := $(wildcard kernels/*.cu kernels/*/*.cu collectives/*.cu train/*.cu sim/*.cu step/*.cu)
TEST_SRCS := $(wildcard tests/test_*.c)
CUDA_TEST_SRCS := $(wildcard tests/cuda/test_*.c)

C_OBJS    := $(patsubst %.c,$(BUILD)/%.o,$(C_SRCS))
LIB_OBJS  := $(filter-out $(BUILD)/harness/main.o,$(C_OBJS))
ifeq ($(CUDA),1)
CU_OBJS   := $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRCS))
LDLIBS    += -L$(CUDA_HOME)/lib64 -L$(NCCL_HOME)/lib64 -lcudart -lcublas -lcublasLt -lnccl $(if $(filter 1,$(CUDNN)),-L$(CUDNN_HOME)/lib64 -lcudnn) -lstdc++ -Wl,-rpath,$(CUDA_HOME)/lib64
else
CU_OBJS   :=
endif

.PHONY: all deps run test test-cuda cuda-check figures clean fuzz fuzz-build check-results
all: $(BUILD)/agoq

deps:
	@bash tools/deps.sh $(if $(filter 1,$(MPI)),--mpi) $(if $(filter 1,$(CUDA)),--cuda=$(NVCC))

$(BUILD)/commit.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
FORCE:

$(BUILD)/harness/provenance.o: CFLAGS += -DAGOQ_GIT_COMMIT='"$(GIT_COMMIT)"'
$(BUILD)/harness/provenance.o: $(BUILD)/commit.stamp

$(BUILD)/%.o: %.c $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# train/: the CPU training path, threaded with OpenMP over output rows (results do not depend on
# the thread count: every sum keeps one order) and -O3 so its GEMM inner loops vectorize.
$(BUILD)/train/%.o: CFLAGS += -O3 -fopenmp
LDFLAGS += -fopenmp

$(BUILD)/%.o: %.cu $(wildcard */*.h */*/*.h) $(wildcard */*.cuh */*/*.cuh)
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
	$(BUILD)/agoq run experiments/default.json --backend auto --out results/default.json
	gnuplot -e "in='results/default.tsv'; out='results/default.png'" plots/default.gp
	@echo "wrote results/default.json results/default.tsv results/default.png"

test: | deps
	@$(MAKE) --no-print-directory $(BUILD)/agoq $(BUILD)/agoq_test
	AGOQ_BIN=$(BUILD)/agoq $(BUILD)/agoq_test

check-results: | deps
	@$(MAKE) --no-print-directory $(BUILD)/agoq $(BUILD)/agoq_test
	AGOQ_CHECK_RESULTS=all AGOQ_BIN=$(BUILD)/agoq $(BUILD)/agoq_test committed_results

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

# Fuzzing: every C source but main.c rebuilt with clang and the sanitizers (CPU backend only) into
# $(BUILD)/fuzz, one binary per target in fuzz/. Corpora start from the repository's own files and
# grow in $(BUILD)/fuzz/corpus/<target>; crashes land in $(BUILD)/fuzz/crashes/.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := experiment model machine cli
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_CFLAGS  := -std=c11 -O1 -g -fno-omit-frame-pointer -ffp-contract=off -D_GNU_SOURCE -I. \
                -DAGOQ_HAVE_CUDA=0 -DAGOQ_HAVE_MPI=0 -DAGOQ_HAVE_CUDNN=0 -Wno-unknown-pragmas \
                -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
FUZZ_OBJS    := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(filter-out harness/main.c,$(C_SRCS)))

.SECONDARY: $(FUZZ_OBJS)
$(FUZZ_DIR)/obj/%.o: %.c $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJS) -o $@ -lcjson -lm -lpthread

fuzz-build:
	@bash tools/deps.sh --fuzz
	@command -v $(FUZZ_CC) >/dev/null || { echo "make fuzz: $(FUZZ_CC) not found (bash tools/deps.sh --fuzz)"; exit 1; }
	@$(MAKE) --no-print-directory $(foreach t,$(FUZZ_TARGETS),$(FUZZ_DIR)/fuzz_$(t))

# One target at a time, FUZZ_SECONDS each; stdin is /dev/null (a fuzzed file name may be
# /dev/stdin), the target's own stdout/stderr are closed (-close_fd_mask=3). Exit 1 on a crash.
# The cli target runs without leak detection: a subcommand returns straight to exit, and its
# usage-error paths do not free the half-built config (the parser targets keep it on).
fuzz: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
	  c=$(FUZZ_DIR)/corpus/$$t; mkdir -p $$c $(FUZZ_DIR)/crashes; \
	  if [ $$t = cli ]; then i=0; while IFS= read -r l; do i=$$((i+1)); printf '%s' "$$l" | tr '\t' '\n' > $$c/seed$$i; done < fuzz/cli_seeds.txt; \
	  else case $$t in experiment) s="experiments/*.json";; model) s="models/*.json";; machine) s="experiments/machines/*.json";; esac; \
	    cp $$s $$c/; fi; \
	  echo "fuzz $$t: $(FUZZ_SECONDS) s"; \
	  leaks=1; [ $$t = cli ] && leaks=0; ASAN_OPTIONS=detect_leaks=$$leaks $(FUZZ_DIR)/fuzz_$$t $$c -detect_leaks=$$leaks -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=4096 -max_len=65536 \
	    -close_fd_mask=3 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/crashes/$$t- < /dev/null 2>$(FUZZ_DIR)/$$t.log \
	    || { echo "fuzz $$t: CRASH (see $(FUZZ_DIR)/$$t.log and $(FUZZ_DIR)/crashes/)"; tail -40 $(FUZZ_DIR)/$$t.log; exit 1; }; \
	  grep -E "stat::number_of_executed_units|Done [0-9]+ runs" $(FUZZ_DIR)/$$t.log | sed "s/^/fuzz $$t: /"; \
	done

clean:
	rm -rf $(BUILD)
