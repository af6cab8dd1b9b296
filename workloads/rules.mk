# Cross-compile the RVV workloads: static, vector-length agnostic (no VLEN compiled in).
CC_RV      ?= clang-19
WL_DIR     := workloads
WL_BUILD   := $(WL_DIR)/build
RV_COMMON  := --target=riscv64-linux-gnu -static -fuse-ld=lld -O3 -std=c11 -Wall -Wextra \
              -Werror=implicit-function-declaration -I$(WL_DIR)/src -I$(WL_BUILD)
# Kernels are measured as written: no auto-vectorisation of our own loops.
RV_NOAUTO  := -fno-vectorize -fno-slp-vectorize
MARCH_V    := -march=rv64gcv
MARCH_S    := -march=rv64gc

COMMON_SRC := $(wildcard $(WL_DIR)/src/common/*.c)
COMMON_HDR := $(wildcard $(WL_DIR)/src/common/*.h) $(WL_BUILD)/models.h
ATTN_SRC   := $(wildcard $(WL_DIR)/src/attention/*.c)
ATTN_HDR   := $(wildcard $(WL_DIR)/src/attention/*.h)
Q8_SRC     := $(wildcard $(WL_DIR)/src/q8/*.c)
Q8_HDR     := $(wildcard $(WL_DIR)/src/q8/*.h)
VB_SRC     := $(wildcard $(WL_DIR)/src/vbench/*.c)

WL_BINS := $(WL_BUILD)/attention $(WL_BUILD)/attention-scalar $(WL_BUILD)/attention-fa-v \
           $(WL_BUILD)/attention-ggml-vec $(WL_BUILD)/q8 $(WL_BUILD)/q8-scalar
ifneq ($(VB_SRC),)
WL_BINS += $(WL_BUILD)/vbench
endif

workloads: $(WL_BINS)

$(WL_BUILD)/models.h: $(WL_DIR)/models.yaml $(WL_DIR)/gen_models.py $(WL_DIR)/models.py
	@mkdir -p $(WL_BUILD)
	$(PYTHON) -m workloads.gen_models $< $@

# Sources of one attention kernel family: its own file, plus what every family shares.
ATTN_MAIN  := $(WL_DIR)/src/attention/main.c $(WL_DIR)/src/attention/lmul.c \
              $(WL_DIR)/src/attention/reference.c
ATTN_FAV   := $(WL_DIR)/src/attention/fa_v.c
ATTN_GVEC  := $(WL_DIR)/src/attention/ggml_vec.c
ATTN_GSCAL := $(WL_DIR)/src/attention/ggml_scalar.c
ONLY       = -DATTN_HAS_FAV=$(1) -DATTN_HAS_GGML_VEC=$(2) -DATTN_HAS_GGML_SCALAR=$(3) \
             -DATTN_BINARY='"$(notdir $@)"'

# Every vector kernel in one binary: for use by hand and in the tests.
$(WL_BUILD)/attention: $(ATTN_SRC) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(ATTN_SRC) $(COMMON_SRC) -o $@ -lm

# One binary per kernel family for sweeps: a run's id hashes its binary, so a change to
# fa-v leaves the ids (and stored results) of ggml-vec and ggml-scalar runs as they are.
$(WL_BUILD)/attention-fa-v: $(ATTN_MAIN) $(ATTN_FAV) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(call ONLY,1,0,0) \
	  $(ATTN_MAIN) $(ATTN_FAV) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/attention-ggml-vec: $(ATTN_MAIN) $(ATTN_GVEC) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(call ONLY,0,1,0) \
	  $(ATTN_MAIN) $(ATTN_GVEC) $(COMMON_SRC) -o $@ -lm

# Scalar binary: rv64gc, so no vector instruction can appear at all (ggml-scalar's family).
$(WL_BUILD)/attention-scalar: $(ATTN_MAIN) $(ATTN_GSCAL) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_S) -DVLSCALE_VECTOR=0 $(call ONLY,0,0,1) \
	  $(ATTN_MAIN) $(ATTN_GSCAL) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/q8: $(Q8_SRC) $(Q8_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(Q8_SRC) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/q8-scalar: $(Q8_SRC) $(Q8_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_S) -DVLSCALE_VECTOR=0 $(Q8_SRC) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/vbench: $(VB_SRC) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(VB_SRC) $(COMMON_SRC) -o $@ -lm
