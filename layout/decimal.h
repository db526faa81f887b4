/* Numbers as the SVG and PDF writers put them in their documents: fixed
 * decimals without trailing zeros, the same in every locale (printf would
 * write "12,5" under some), and much faster than printf's "%g", which a
 * picture of 100,000 boxes calls millions of times. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* value rounded to decimals (at most 6) places; not-a-number and infinities as 0. */
void graft_decimal_append (GString *out, double value, guint decimals);

G_END_DECLS
