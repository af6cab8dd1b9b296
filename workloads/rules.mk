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

WL_BINS := $(WL_BUILD)/attention $(WL_BUILD)/attention-scalar $(WL_BUILD)/q8 $(WL_BUILD)/q8-scalar
ifneq ($(VB_SRC),)
WL_BINS += $(WL_BUILD)/vbench
endif

workloads: $(WL_BINS)

$(WL_BUILD)/models.h: $(WL_DIR)/models.yaml $(WL_DIR)/gen_models.py
	@mkdir -p $(WL_BUILD)
	$(PYTHON) $(WL_DIR)/gen_models.py $< $@

# Vector binary: every kernel of the family (VLSCALE_VECTOR selects the vector kernels in).
$(WL_BUILD)/attention: $(ATTN_SRC) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(ATTN_SRC) $(COMMON_SRC) -o $@ -lm

# Scalar binary: rv64gc, so no vector instruction can appear at all.
$(WL_BUILD)/attention-scalar: $(ATTN_SRC) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_S) -DVLSCALE_VECTOR=0 $(ATTN_SRC) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/q8: $(Q8_SRC) $(Q8_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(Q8_SRC) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/q8-scalar: $(Q8_SRC) $(Q8_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_S) -DVLSCALE_VECTOR=0 $(Q8_SRC) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/vbench: $(VB_SRC) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(VB_SRC) $(COMMON_SRC) -o $@ -lm
