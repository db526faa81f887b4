#include "ir/sym-dim.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  gint64 coefficient;
  GPtrArray *factors;   /* interned char*, sorted */
} Monomial;

static int
compare_factors (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char **) a, *(const char **) b);
}

static gboolean
monomial_from_dim (GraftDim dim, Monomial *m)
{
  m->coefficient = 1;
  m->factors = g_ptr_array_new ();
  if (dim.kind == GRAFT_DIM_FIXED)
    {
      m->coefficient = dim.value;
      return TRUE;
    }
  if (dim.kind != GRAFT_DIM_SYMBOLIC || dim.symbol == NULL)
    return FALSE;

  g_auto(GStrv) parts = g_strsplit (dim.symbol, "*", -1);
  for (guint i = 0; parts[i] != NULL; i++)
    {
      char *end = NULL;
      gint64 n;

      g_strstrip (parts[i]);
      if (parts[i][0] == '\0')
        return FALSE;
      n = g_ascii_strtoll (parts[i], &end, 10);
      if (end != parts[i] && *end == '\0')
        {
          if (n <= 0 || m->coefficient > G_MAXINT32)
            return FALSE;
          m->coefficient *= n;
        }
      else
        g_ptr_array_add (m->factors, (gpointer) g_intern_string (parts[i]));
    }
  g_ptr_array_sort (m->factors, compare_factors);
  return TRUE;
}

static GraftDim
monomial_to_dim (Monomial *m)
{
  GString *text;

  if (m->factors->len == 0)
    return graft_dim_fixed (m->coefficient);
  text = g_string_new (NULL);
  for (guint i = 0; i < m->factors->len; i++)
    {
      if (i > 0)
        g_string_append_c (text, '*');
      g_string_append (text, g_ptr_array_index (m->factors, i));
    }
  if (m->coefficient != 1)
    g_string_append_printf (text, "*%" G_GINT64_FORMAT, m->coefficient);
  {
    GraftDim dim = graft_dim_symbolic (text->str);
    g_string_free (text, TRUE);
    return dim;
  }
}

static void
monomial_clear (Monomial *m)
{
  g_clear_pointer (&m->factors, g_ptr_array_unref);
}

GraftDim
graft_dim_multiply (GraftDim a, GraftDim b)
{
  Monomial ma, mb;
  GraftDim result = graft_dim_unknown ();

  if (a.kind == GRAFT_DIM_FIXED && b.kind == GRAFT_DIM_FIXED)
    {
      gint64 product;
      /* A product past gint64 is no size any tensor can have. */
      return graft_dim_mul_checked (a.value, b.value, &product) ? graft_dim_fixed (product) : graft_dim_unknown ();
    }
  if (monomial_from_dim (a, &ma) & monomial_from_dim (b, &mb))
    {
      if (ma.coefficient == 0 || mb.coefficient == 0)
        result = graft_dim_fixed (0);
      else if (graft_dim_mul_checked (ma.coefficient, mb.coefficient, &ma.coefficient))
        {
          g_ptr_array_extend (ma.factors, mb.factors, NULL, NULL);
          g_ptr_array_sort (ma.factors, compare_factors);
          result = monomial_to_dim (&ma);
        }
    }
  monomial_clear (&ma);
  monomial_clear (&mb);
  return result;
}

GraftDim
graft_dim_add (GraftDim a, GraftDim b)
{
  Monomial ma, mb;
  GraftDim result = graft_dim_unknown ();

  if (a.kind == GRAFT_DIM_FIXED && b.kind == GRAFT_DIM_FIXED)
    {
      gint64 sum;
      return graft_dim_add_checked (a.value, b.value, &sum) ? graft_dim_fixed (sum) : graft_dim_unknown ();
    }
  if ((monomial_from_dim (a, &ma) & monomial_from_dim (b, &mb)) && ma.factors->len > 0
      && ma.factors->len == mb.factors->len)
    {
      gboolean alike = TRUE;

      for (guint i = 0; i < ma.factors->len && alike; i++)
        alike = g_ptr_array_index (ma.factors, i) == g_ptr_array_index (mb.factors, i);
      if (alike && graft_dim_add_checked (ma.coefficient, mb.coefficient, &ma.coefficient))
        result = monomial_to_dim (&ma);
    }
  monomial_clear (&ma);
  monomial_clear (&mb);
  return result;
}

GraftDim
graft_dim_divide (GraftDim a, GraftDim b)
{
  Monomial ma, mb;
  GraftDim result = graft_dim_unknown ();

  if (a.kind == GRAFT_DIM_FIXED && b.kind == GRAFT_DIM_FIXED)
    return b.value != 0 && a.value % b.value == 0 ? graft_dim_fixed (a.value / b.value) : graft_dim_unknown ();
  if ((monomial_from_dim (a, &ma) & monomial_from_dim (b, &mb))
      && mb.coefficient != 0 && ma.coefficient % mb.coefficient == 0)
    {
      gboolean divides = TRUE;

      ma.coefficient /= mb.coefficient;
      for (guint i = 0; i < mb.factors->len && divides; i++)
        divides = g_ptr_array_remove (ma.factors, g_ptr_array_index (mb.factors, i));
      if (divides)
        result = monomial_to_dim (&ma);
    }
  monomial_clear (&ma);
  monomial_clear (&mb);
  return result;
}

GraftDim
graft_shape_get_dim_product (const GraftShape *shape, int start, int end)
{
  GraftDim product = graft_dim_fixed (1);

  if (shape->rank < 0)
    return graft_dim_unknown ();
  for (int i = MAX (start, 0); i < MIN (end, shape->rank); i++)
    product = graft_dim_multiply (product, shape->dims[i]);
  return product;
}

gboolean
graft_dim_evaluate (GraftDim dim, GHashTable *values, gint64 *size)
{
  Monomial m;
  gboolean known;

  if (!monomial_from_dim (dim, &m))
    {
      g_ptr_array_unref (m.factors);
      return FALSE;
    }
  known = TRUE;
  *size = m.coefficient;
  for (guint i = 0; known && i < m.factors->len; i++)
    {
      gint64 *value = g_hash_table_lookup (values, g_ptr_array_index (m.factors, i));
      known = value != NULL && graft_dim_mul_checked (*size, *value, size);
    }
  g_ptr_array_unref (m.factors);
  return known;
}
