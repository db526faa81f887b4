#include "ir/shape.h"

#include <string.h>
#include <gio/gio.h>

GraftDim
graft_dim_fixed (gint64 value)
{
  return (GraftDim) { GRAFT_DIM_FIXED, value, NULL };
}

GraftDim
graft_dim_symbolic (const char *symbol)
{
  if (symbol == NULL || *symbol == '\0')
    return graft_dim_unknown ();
  return (GraftDim) { GRAFT_DIM_SYMBOLIC, 0, g_intern_string (symbol) };
}

GraftDim
graft_dim_unknown (void)
{
  return (GraftDim) { GRAFT_DIM_UNKNOWN, 0, NULL };
}

gboolean
graft_dim_equal (const GraftDim *a, const GraftDim *b)
{
  if (a->kind != b->kind)
    return FALSE;
  switch (a->kind)
    {
    case GRAFT_DIM_FIXED:
      return a->value == b->value;
    case GRAFT_DIM_SYMBOLIC:
      return a->symbol == b->symbol; /* interned */
    case GRAFT_DIM_UNKNOWN:
    default:
      return TRUE;
    }
}

void
graft_shape_init (GraftShape *shape, int rank)
{
  shape->rank = rank;
  shape->dims = rank > 0 ? g_new0 (GraftDim, rank) : NULL;
}

void
graft_shape_init_fixed (GraftShape *shape, int rank, const gint64 *dims)
{
  graft_shape_init (shape, rank);
  for (int i = 0; i < rank; i++)
    shape->dims[i] = graft_dim_fixed (dims[i]);
}

void
graft_shape_copy (GraftShape *dest, const GraftShape *src)
{
  dest->rank = src->rank;
  dest->dims = src->rank > 0 ? g_memdup2 (src->dims, sizeof (GraftDim) * src->rank) : NULL;
}

void
graft_shape_clear (GraftShape *shape)
{
  g_clear_pointer (&shape->dims, g_free);
  shape->rank = -1;
}

gboolean
graft_shape_equal (const GraftShape *a, const GraftShape *b)
{
  if (a->rank != b->rank)
    return FALSE;
  for (int i = 0; i < a->rank; i++)
    if (!graft_dim_equal (&a->dims[i], &b->dims[i]))
      return FALSE;
  return TRUE;
}

gboolean
graft_shape_is_fully_fixed (const GraftShape *shape)
{
  if (shape->rank < 0)
    return FALSE;
  for (int i = 0; i < shape->rank; i++)
    if (shape->dims[i].kind != GRAFT_DIM_FIXED)
      return FALSE;
  return TRUE;
}

gboolean
graft_dim_mul_checked (gint64 a, gint64 b, gint64 *result)
{
  gint64 r;

  if (__builtin_mul_overflow (a, b, &r))
    return FALSE;
  *result = r;
  return TRUE;
}

gboolean
graft_dim_add_checked (gint64 a, gint64 b, gint64 *result)
{
  gint64 r;

  if (__builtin_add_overflow (a, b, &r))
    return FALSE;
  *result = r;
  return TRUE;
}

gint64
graft_shape_get_numel (const GraftShape *shape)
{
  gint64 numel = 1;

  if (!graft_shape_is_fully_fixed (shape))
    return -1;
  for (int i = 0; i < shape->rank; i++)
    {
      gint64 d = shape->dims[i].value;
      if (d < 0)
        return -1;
      if (d != 0 && numel > G_MAXINT64 / d)
        return -1;
      numel *= d;
    }
  return numel;
}

char *
graft_shape_to_string (const GraftShape *shape)
{
  GString *out;

  if (shape->rank < 0)
    return g_strdup ("?");
  if (shape->rank == 0)
    return g_strdup ("scalar");
  out = g_string_new (NULL);
  for (int i = 0; i < shape->rank; i++)
    {
      const GraftDim *dim = &shape->dims[i];
      if (i > 0)
        g_string_append (out, "×");
      switch (dim->kind)
        {
        case GRAFT_DIM_FIXED:
          g_string_append_printf (out, "%" G_GINT64_FORMAT, dim->value);
          break;
        case GRAFT_DIM_SYMBOLIC:
          g_string_append (out, dim->symbol);
          break;
        case GRAFT_DIM_UNKNOWN:
        default:
          g_string_append_c (out, '?');
          break;
        }
    }
  return g_string_free (out, FALSE);
}

void
graft_shape_free (GraftShape *shape)
{
  if (shape == NULL)
    return;
  graft_shape_clear (shape);
  g_free (shape);
}

gboolean
graft_shape_parse (const char *text, GraftShape *shape, GError **error)
{
  g_autoptr(GString) normal = g_string_new (NULL);
  g_auto(GStrv) parts = NULL;
  guint n;

  /* One separator: "×" and "," become "x", spaces go. */
  for (const char *p = text != NULL ? text : ""; *p != '\0'; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);

      if (c == 0xD7 || c == ',' || c == 'X')
        g_string_append_c (normal, 'x');
      else if (!g_unichar_isspace (c))
        g_string_append_unichar (normal, c);
    }
  if (normal->len == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "no shape given (for example 1x3x224x224)");
      return FALSE;
    }
  parts = g_strsplit (normal->str, "x", -1);
  n = g_strv_length (parts);
  if (n > 64)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "“%s” has %u dims; at most 64", text, n);
      return FALSE;
    }
  graft_shape_init (shape, n);
  for (guint i = 0; i < n; i++)
    {
      guint64 value;

      if (!g_ascii_string_to_unsigned (parts[i], 10, 1, G_MAXINT32, &value, NULL))
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                       "“%s”: dim %u (“%s”) is not a whole number from 1 to %d", text, i + 1, parts[i], G_MAXINT32);
          graft_shape_clear (shape);
          return FALSE;
        }
      shape->dims[i] = graft_dim_fixed ((gint64) value);
    }
  return TRUE;
}
