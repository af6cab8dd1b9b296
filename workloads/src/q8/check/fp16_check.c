/* Exhaustive check of the q8 fp16 helpers (built and run by workloads/tests/test_q8.py on
 * qemu; not part of the workload binaries). Usage: fp16_check IN32 OUT16 OUT32
 *   IN32:  little-endian fp32 bit patterns to encode with fp32_to_fp16 -> OUT16 (uint16)
 *   OUT32: fp16_to_fp32 of all 65536 half bit patterns, as fp32 bits (uint32) */
#include <stdio.h>
#include <stdlib.h>

#include "q8/q8.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: fp16_check IN32 OUT16 OUT32\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "rb"), *o16 = fopen(argv[2], "wb"), *o32 = fopen(argv[3], "wb");
    if (!in || !o16 || !o32) return 2;
    uint32_t b;
    while (fread(&b, sizeof b, 1, in) == 1) {
        uint16_t h = fp32_to_fp16(q8_bits_to_f32(b));
        if (fwrite(&h, sizeof h, 1, o16) != 1) return 2;
    }
    for (uint32_t h = 0; h < 65536; h++) {
        uint32_t f = q8_f32_to_bits(fp16_to_fp32((uint16_t)h));
        if (fwrite(&f, sizeof f, 1, o32) != 1) return 2;
    }
    return (fclose(in) || fclose(o16) || fclose(o32)) ? 2 : 0;
}
