/* Instantiate LMUL_IMPL (a header written against rvv_lmul.h's helpers) for LMUL 1, 2
 * and 4: functions get the suffix _m1, _m2, _m4. Define LMUL_IMPL, include, undefine. */
#define LM m1
#define MB 32
#include "attention/rvv_lmul.h"
#include LMUL_IMPL
#undef LM
#undef MB
#define LM m2
#define MB 16
#include "attention/rvv_lmul.h"
#include LMUL_IMPL
#undef LM
#undef MB
#define LM m4
#define MB 8
#include "attention/rvv_lmul.h"
#include LMUL_IMPL
#undef LM
#undef MB
