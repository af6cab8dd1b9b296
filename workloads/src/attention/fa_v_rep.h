/* REP(X) expands X(0) .. X(NREP-1): the unrolled lanes of a template body (vector values
 * are sizeless types and cannot live in arrays, so each unrolled lane gets its own name). */
#undef REP
#if NREP == 1
#define REP(X) X(0)
#elif NREP == 2
#define REP(X) X(0) X(1)
#elif NREP == 4
#define REP(X) X(0) X(1) X(2) X(3)
#elif NREP == 8
#define REP(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#error "NREP must be 1, 2, 4 or 8"
#endif
