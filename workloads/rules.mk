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
MARCH_VH   := -march=rv64gcv_zvfh

COMMON_SRC := $(wildcard $(WL_DIR)/src/common/*.c)
COMMON_HDR := $(wildcard $(WL_DIR)/src/common/*.h) $(WL_BUILD)/models.h
ATTN_SRC   := $(wildcard $(WL_DIR)/src/attention/*.c)
ATTN_HDR   := $(wildcard $(WL_DIR)/src/attention/*.h)
Q8_SRC     := $(wildcard $(WL_DIR)/src/q8/*.c)
Q8_HDR     := $(wildcard $(WL_DIR)/src/q8/*.h)
VB_SRC     := $(wildcard $(WL_DIR)/src/vbench/*.c)

WL_BINS := $(WL_BUILD)/attention $(WL_BUILD)/attention-scalar $(WL_BUILD)/attention-fa-v \
           $(WL_BUILD)/attention-ggml-vec $(WL_BUILD)/attention-scalar-fp16 \
           $(WL_BUILD)/attention-ggml-vec-fp16 $(WL_BUILD)/attention-fa-v-fp16 \
           $(WL_BUILD)/q8 $(WL_BUILD)/q8-scalar $(WL_BUILD)/layer $(WL_BUILD)/layer-scalar \
           $(WL_BUILD)/layer-fp16
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
# fp16 kernels (Zvfh for the vector ones); fa-v's is in `attention` by -DATTN_HAS_FAV_F16=1
ATTN_FAV16   := $(WL_DIR)/src/attention/fa_v_f16.c
ATTN_GVEC16  := $(WL_DIR)/src/attention/ggml_vec_f16.c
ATTN_GSCAL16 := $(WL_DIR)/src/attention/ggml_scalar_f16.c
ONLY       = -DATTN_HAS_FAV=$(1) -DATTN_HAS_GGML_VEC=$(2) -DATTN_HAS_GGML_SCALAR=$(3) \
             -DATTN_BINARY='"$(notdir $@)"'
FP16_ONLY  := -DATTN_HAS_FP32=0 -DATTN_HAS_FP16=1

# Every vector kernel, both precisions, in one binary: for use by hand and in the tests.
$(WL_BUILD)/attention: $(ATTN_SRC) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_VH) -DVLSCALE_VECTOR=1 -DATTN_HAS_FP16=1 \
	  -DATTN_HAS_FAV_F16=1 -DFAV_KCACHE=1 $(ATTN_SRC) $(COMMON_SRC) -o $@ -lm

# One binary per kernel family for sweeps: a run's id hashes its binary, so a change to
# fa-v leaves the ids (and stored results) of ggml-vec and ggml-scalar runs as they are.
$(WL_BUILD)/attention-fa-v: $(ATTN_MAIN) $(ATTN_FAV) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(call ONLY,1,0,0) \
	  -DFAV_KCACHE=1 $(ATTN_MAIN) $(ATTN_FAV) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/attention-ggml-vec: $(ATTN_MAIN) $(ATTN_GVEC) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(call ONLY,0,1,0) \
	  $(ATTN_MAIN) $(ATTN_GVEC) $(COMMON_SRC) -o $@ -lm

# Scalar binary: rv64gc, so no vector instruction can appear at all (ggml-scalar's family).
$(WL_BUILD)/attention-scalar: $(ATTN_MAIN) $(ATTN_GSCAL) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_S) -DVLSCALE_VECTOR=0 $(call ONLY,0,0,1) \
	  $(ATTN_MAIN) $(ATTN_GSCAL) $(COMMON_SRC) -o $@ -lm

# The fp16 families: their own binaries, so fp16 code never changes an fp32 run's id.
$(WL_BUILD)/attention-ggml-vec-fp16: $(ATTN_MAIN) $(ATTN_GVEC16) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_VH) -DVLSCALE_VECTOR=1 $(call ONLY,0,1,0) \
	  $(FP16_ONLY) $(ATTN_MAIN) $(ATTN_GVEC16) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/attention-fa-v-fp16: $(ATTN_MAIN) $(ATTN_FAV16) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_VH) -DVLSCALE_VECTOR=1 $(call ONLY,1,0,0) \
	  $(FP16_ONLY) -DATTN_HAS_FAV_F16=1 -DFAV_KCACHE=1 $(ATTN_MAIN) $(ATTN_FAV16) $(COMMON_SRC) \
	  -o $@ -lm

$(WL_BUILD)/attention-scalar-fp16: $(ATTN_MAIN) $(ATTN_GSCAL16) $(ATTN_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_S) -DVLSCALE_VECTOR=0 $(call ONLY,0,0,1) \
	  $(FP16_ONLY) $(ATTN_MAIN) $(ATTN_GSCAL16) $(COMMON_SRC) -o $@ -lm

# q8 with Zvfh (and the Zfhmin it implies) for --fp16 zvfh; q8-scalar is rv64gc, without
# the Zvfh kernels (q8_zvfh.c)
Q8_SRC_S   := $(filter-out %/q8_zvfh.c,$(Q8_SRC))
$(WL_BUILD)/q8: $(Q8_SRC) $(Q8_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_VH) -DVLSCALE_VECTOR=1 $(Q8_SRC) $(COMMON_SRC) -o $@ -lm

$(WL_BUILD)/q8-scalar: $(Q8_SRC_S) $(Q8_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_S) -DVLSCALE_VECTOR=0 $(Q8_SRC_S) $(COMMON_SRC) -o $@ -lm

# One decoder layer (src/layer): links the q8 kernels and the fp32 attention kernels
# themselves (their sources, not their workloads' mains); the model's layer parameters come
# from a header of their own, so models.h and the other binaries do not change with them.
$(WL_BUILD)/layer_models.h: $(WL_DIR)/models.yaml $(WL_DIR)/gen_models.py $(WL_DIR)/models.py
	@mkdir -p $(WL_BUILD)
	$(PYTHON) -m workloads.gen_models --layer $< $@

LAYER_SRC  := $(wildcard $(WL_DIR)/src/layer/*.c)
LAYER_HDR  := $(wildcard $(WL_DIR)/src/layer/*.h) $(WL_BUILD)/layer_models.h $(ATTN_HDR) $(Q8_HDR)
LAYER_Q8   := $(WL_DIR)/src/q8/q8_kernels.c $(WL_DIR)/src/q8/q8_data.c

$(WL_BUILD)/layer: $(LAYER_SRC) $(LAYER_Q8) $(ATTN_GSCAL) $(ATTN_GVEC) $(ATTN_FAV) $(WL_DIR)/src/attention/lmul.c $(LAYER_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 -DFAV_KCACHE=1 $(filter %.c,$^) -o $@ -lm

# The layer with an F16 KV cache and the fp16 attention kernels (Zvfh): a binary of its own,
# so the fp32 layer binaries (and their runs' ids) do not change with it.
$(WL_BUILD)/layer-fp16: $(LAYER_SRC) $(LAYER_Q8) $(ATTN_GSCAL16) $(ATTN_GVEC16) $(ATTN_FAV16) $(WL_DIR)/src/attention/lmul.c $(LAYER_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_VH) -DVLSCALE_VECTOR=1 -DFAV_KCACHE=1 -DLAYER_FP16=1 \
	  $(filter %.c,$^) -o $@ -lm

$(WL_BUILD)/layer-scalar: $(LAYER_SRC) $(LAYER_Q8) $(ATTN_GSCAL) $(LAYER_HDR) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_S) -DVLSCALE_VECTOR=0 $(filter %.c,$^) -o $@ -lm

$(WL_BUILD)/vbench: $(VB_SRC) $(COMMON_SRC) $(COMMON_HDR)
	$(CC_RV) $(RV_COMMON) $(RV_NOAUTO) $(MARCH_V) -DVLSCALE_VECTOR=1 $(VB_SRC) $(COMMON_SRC) -o $@ -lm

# ggml's own libraries (workloads/ggml/build_ggml.py builds ggml-base and ggml-cpu from the
# llama-cpp-python sdist into the user cache and copies them to $(GGML_OUT)); `make setup`
# runs it, and so does the first build that needs it.
GGML_OUT   := $(WL_BUILD)/ggml
GGML_STAMP := $(GGML_OUT)/STAMP
GGML_JOBS  ?= 2

.PHONY: setup-ggml
setup-ggml: setup-apt
	$(PYTHON) $(WL_DIR)/ggml/build_ggml.py --jobs $(GGML_JOBS) $(GGML_OUT)

$(GGML_STAMP): $(WL_DIR)/ggml/build_ggml.py $(WL_DIR)/ggml/CMakeLists.txt
	$(PYTHON) $(WL_DIR)/ggml/build_ggml.py --jobs $(GGML_JOBS) $(GGML_OUT)
	@touch $@
workloads: $(GGML_STAMP)

# Workloads on ggml's own kernels (workloads/src/ggml): our harness, inputs and check around
# ggml_flash_attn_ext and ggml_mul_mat, linked with the ggml build of their -march.
GGML_GLUE  := $(WL_DIR)/src/ggml/vsggml.c
GGML_ATTN  := $(WL_DIR)/src/ggml/ggml_attn.c $(WL_DIR)/src/ggml/attn_ref.c
GGML_Q8    := $(WL_DIR)/src/ggml/ggml_q8.c $(WL_DIR)/src/ggml/q8_ref.c $(WL_DIR)/src/q8/q8_data.c
GGML_HDR   := $(wildcard $(WL_DIR)/src/ggml/*.h) $(WL_DIR)/src/attention/attn.h $(Q8_HDR)
# $(1): the ggml build (rv64gcv, rv64gc); our own code is compiled as usual.
GGML_CC    = $(CC_RV) $(RV_COMMON) $(RV_NOAUTO) -I$(GGML_OUT)/include -I$(GGML_OUT)/$(1)
GGML_LINK  = -L$(GGML_OUT)/$(1) -lggml-cpu -lggml-base -lstdc++ -lm
GGML_BINS  := $(WL_BUILD)/attention-ggml-lib $(WL_BUILD)/attention-ggml-lib-scalar \
              $(WL_BUILD)/q8-ggml-lib $(WL_BUILD)/q8-ggml-lib-scalar
workloads: $(GGML_BINS)

$(WL_BUILD)/attention-ggml-lib: $(GGML_ATTN) $(GGML_GLUE) $(GGML_HDR) $(COMMON_SRC) $(COMMON_HDR) $(GGML_STAMP)
	$(call GGML_CC,rv64gcv) $(MARCH_V) -DVLSCALE_VECTOR=1 $(filter %.c,$^) -o $@ $(call GGML_LINK,rv64gcv)

$(WL_BUILD)/attention-ggml-lib-scalar: $(GGML_ATTN) $(GGML_GLUE) $(GGML_HDR) $(COMMON_SRC) $(COMMON_HDR) $(GGML_STAMP)
	$(call GGML_CC,rv64gc) $(MARCH_S) -DVLSCALE_VECTOR=0 $(filter %.c,$^) -o $@ $(call GGML_LINK,rv64gc)

$(WL_BUILD)/q8-ggml-lib: $(GGML_Q8) $(GGML_GLUE) $(GGML_HDR) $(COMMON_SRC) $(COMMON_HDR) $(GGML_STAMP)
	$(call GGML_CC,rv64gcv) $(MARCH_V) -DVLSCALE_VECTOR=1 $(filter %.c,$^) -o $@ $(call GGML_LINK,rv64gcv)

$(WL_BUILD)/q8-ggml-lib-scalar: $(GGML_Q8) $(GGML_GLUE) $(GGML_HDR) $(COMMON_SRC) $(COMMON_HDR) $(GGML_STAMP)
	$(call GGML_CC,rv64gc) $(MARCH_S) -DVLSCALE_VECTOR=0 $(filter %.c,$^) -o $@ $(call GGML_LINK,rv64gc)
