#include "ir/narrow-dtype.h"

#include <math.h>
#include <string.h>

/* The small float formats differ in how they spend their top codes. */
typedef enum {
  SPECIALS_IEEE,     /* the top exponent is infinity and NaNs (E5M2) */
  SPECIALS_FN,       /* only the all-ones code is NaN, no infinity (E4M3FN) */
  SPECIALS_FNUZ,     /* 0x80 ("negative zero") is the only NaN (…FNUZ) */
  SPECIALS_NONE,     /* every code is finite (FLOAT4E2M1) */
} Specials;

typedef struct {
  guint exponent_bits, mantissa_bits;
  int bias;
  Specials specials;
} FloatFormat;

static const FloatFormat *
float_format (GraftDType dtype)
{
  static const FloatFormat e4m3fn = { 4, 3, 7, SPECIALS_FN }, e4m3fnuz = { 4, 3, 8, SPECIALS_FNUZ };
  static const FloatFormat e5m2 = { 5, 2, 15, SPECIALS_IEEE }, e5m2fnuz = { 5, 2, 16, SPECIALS_FNUZ };
  static const FloatFormat e2m1 = { 2, 1, 1, SPECIALS_NONE };
  switch (dtype)
    {
    case GRAFT_DTYPE_FLOAT8E4M3FN: return &e4m3fn;
    case GRAFT_DTYPE_FLOAT8E4M3FNUZ: return &e4m3fnuz;
    case GRAFT_DTYPE_FLOAT8E5M2: return &e5m2;
    case GRAFT_DTYPE_FLOAT8E5M2FNUZ: return &e5m2fnuz;
    case GRAFT_DTYPE_FLOAT4E2M1: return &e2m1;
    default: return NULL;
    }
}

gboolean
graft_narrow_dtype_is_narrow (GraftDType dtype)
{
  return dtype >= GRAFT_DTYPE_FLOAT8E4M3FN && dtype <= GRAFT_DTYPE_INT2;
}

/* Magnitude of a code without its sign bit, ignoring specials. */
static double
magnitude (const FloatFormat *format, guint code)
{
  guint exponent = code >> format->mantissa_bits, mantissa = code & ((1u << format->mantissa_bits) - 1);
  double fraction = (double) mantissa / (1u << format->mantissa_bits);
  if (exponent == 0)
    return ldexp (fraction, 1 - format->bias);
  return ldexp (1 + fraction, (int) exponent - format->bias);
}

static guint
largest_finite_code (const FloatFormat *format)
{
  guint all_ones = (1u << (format->exponent_bits + format->mantissa_bits)) - 1;
  switch (format->specials)
    {
    case SPECIALS_IEEE: return (((1u << format->exponent_bits) - 1) << format->mantissa_bits) - 1;
    case SPECIALS_FN: return all_ones - 1;
    default: return all_ones;
    }
}

static double
decode_float (const FloatFormat *format, guint8 stored)
{
  guint sign_bit = 1u << (format->exponent_bits + format->mantissa_bits);
  guint code = stored & (sign_bit - 1);
  gboolean negative = (stored & sign_bit) != 0;
  if (format->specials == SPECIALS_FNUZ && negative && code == 0)
    return NAN;
  if (format->specials == SPECIALS_FN && code == sign_bit - 1)
    return NAN;
  if (format->specials == SPECIALS_IEEE && code > largest_finite_code (format))
    return code == largest_finite_code (format) + 1 ? (negative ? -INFINITY : INFINITY) : NAN;
  double value = magnitude (format, code);
  return negative ? -value : value;
}

static guint8
encode_float (const FloatFormat *format, double value, gboolean saturate)
{
  guint sign_bit = 1u << (format->exponent_bits + format->mantissa_bits);
  guint largest = largest_finite_code (format);
  /* FLOAT4E2M1 has no NaN: ONNX's reference gives it -0. */
  if (isnan (value))
    return format->specials == SPECIALS_FNUZ || format->specials == SPECIALS_NONE ? sign_bit : sign_bit - 1;
  guint sign = signbit (value) ? sign_bit : 0;
  double a = fabs (value);
  double top = magnitude (format, largest);
  /* Codes ascend with magnitude: find the pair around a, then round to the
   * nearer, ties to the even code. One code past the largest stands for
   * overflow. */
  guint code;
  if (a >= top)
    {
      double overflow = top + (top - magnitude (format, largest - 1));
      gboolean overflows = isinf (a) || a > (top + overflow) / 2 || (a == (top + overflow) / 2 && (largest & 1));
      if (!overflows || saturate || format->specials == SPECIALS_NONE)
        code = largest;
      else if (format->specials == SPECIALS_IEEE)
        code = largest + 1;   /* infinity */
      else
        return format->specials == SPECIALS_FNUZ ? sign_bit : (guint8) (sign | (sign_bit - 1));
    }
  else
    {
      guint low = 0, high = largest;
      while (high - low > 1)
        {
          guint mid = (low + high) / 2;
          if (magnitude (format, mid) <= a)
            low = mid;
          else
            high = mid;
        }
      double below = magnitude (format, low), above = magnitude (format, high);
      if (a - below < above - a)
        code = low;
      else if (a - below > above - a)
        code = high;
      else
        code = low & 1 ? high : low;
    }
  if (code == 0 && format->specials == SPECIALS_FNUZ)
    return 0;   /* no negative zero: its code is NaN */
  return (guint8) (sign | code);
}

/* E8M0 is a bare power-of-two exponent with bias 127; 0xFF is NaN. */
static guint8
encode_e8m0 (double value, gboolean saturate)
{
  float f = (float) value;
  guint32 bits;
  memcpy (&bits, &f, sizeof bits);
  guint exponent = (bits >> 23) & 0xff;
  if (exponent == 0xff)
    return saturate && !isnan (f) ? 0xfe : 0xff;
  if ((bits & 0x7fffff) != 0 && exponent < 0xfe)
    exponent++;
  else if ((bits & 0x7fffff) != 0 && !saturate)
    return 0xff;
  return (guint8) exponent;
}

static void
integer_range (GraftDType dtype, int *lo, int *hi)
{
  switch (dtype)
    {
    case GRAFT_DTYPE_INT4: *lo = -8; *hi = 7; break;
    case GRAFT_DTYPE_UINT4: *lo = 0; *hi = 15; break;
    case GRAFT_DTYPE_INT2: *lo = -2; *hi = 1; break;
    default: *lo = 0; *hi = 3; break;
    }
}

double
graft_narrow_dtype_decode (GraftDType dtype, guint8 stored)
{
  const FloatFormat *format = float_format (dtype);
  if (format)
    return decode_float (format, stored);
  if (dtype == GRAFT_DTYPE_FLOAT8E8M0)
    return stored == 0xff ? NAN : ldexp (1.0, (int) stored - 127);
  if (dtype == GRAFT_DTYPE_INT4 || dtype == GRAFT_DTYPE_INT2)
    return (gint8) stored;
  return stored;
}

guint8
graft_narrow_dtype_encode (GraftDType dtype, double value, gboolean saturate)
{
  const FloatFormat *format = float_format (dtype);
  if (format)
    return encode_float (format, value, saturate);
  if (dtype == GRAFT_DTYPE_FLOAT8E8M0)
    return encode_e8m0 (value, saturate);
  int lo, hi;
  integer_range (dtype, &lo, &hi);
  if (isnan (value) || value < lo || value >= hi + 1)
    return 0;
  return (guint8) (gint8) trunc (value);
}
