/* Register grouping shared by the vector kernels (ggml-vec and fa-v). */
#if VLSCALE_VECTOR
#include <riscv_vector.h>

#include "attention/attn.h"

int attn_vlmax_e32(int lmul) {
    switch (lmul) {
    case 1: return (int)__riscv_vsetvlmax_e32m1();
    case 2: return (int)__riscv_vsetvlmax_e32m2();
    default: return (int)__riscv_vsetvlmax_e32m4();
    }
}

int attn_auto_lmul(int head_dim) {
    return attn_vlmax_e32(1) >= head_dim ? 1 : attn_vlmax_e32(2) >= head_dim ? 2 : 4;
}
#endif
