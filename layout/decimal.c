#include "layout/decimal.h"

#include <math.h>

void
graft_decimal_append (GString *out, double value, guint decimals)
{
  static const long long powers[] = { 1, 10, 100, 1000, 10000, 100000, 1000000 };
  char digits[32];
  int n = 0;
  long long scaled, whole, fraction, power;

  decimals = MIN (decimals, G_N_ELEMENTS (powers) - 1);
  power = powers[decimals];
  /* Past ±1e12 llround overflows; no picture has such coordinates. */
  if (!isfinite (value) || fabs (value) > 1e12)
    value = 0;
  scaled = llround (value * power);
  if (scaled < 0)
    {
      g_string_append_c (out, '-');
      scaled = -scaled;
    }
  whole = scaled / power;
  fraction = scaled % power;
  do
    {
      digits[n++] = (char) ('0' + whole % 10);
      whole /= 10;
    }
  while (whole > 0);
  while (n > 0)
    g_string_append_c (out, digits[--n]);
  if (fraction != 0)
    {
      g_string_append_c (out, '.');
      for (power /= 10; fraction != 0; power /= 10)
        {
          g_string_append_c (out, (char) ('0' + fraction / power));
          fraction %= power;
        }
    }
}
