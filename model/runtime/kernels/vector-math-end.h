/* Ends one variant of vector-math-body.h: forgets its V_* operations so
 * that the next variant can define its own. No include guard on purpose. */
#undef V
#undef VW
#undef VM_SUFFIX
#undef V_SET1
#undef V_LOAD
#undef V_STORE
#undef V_ADD
#undef V_SUB
#undef V_MUL
#undef V_DIV
#undef V_FMA
#undef V_MIN
#undef V_MAX
#undef V_ABS
#undef V_ROUND
#undef V_POW2I
#undef V_POW2_LOW_BITS
#undef VM_SHORT_CHAINS
#undef V_COPYSIGN
#undef V_OR_SIGN
#undef V_SELECT_LT
#undef V_KEEP_NAN
#undef V_LOAD_PARTIAL
#undef V_STORE_PARTIAL
#undef V_HMAX
#undef V_HSUM_DOUBLE
