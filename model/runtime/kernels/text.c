/* String operators of opset 20: StringConcat, StringSplit, RegexFullMatch.
 * (Equal on strings lives with Equal in binary.c.) */
#include <string.h>
#include "runtime/kernels/kernel-util.h"

static const char *
string_at (const GraftRtTensor *t, gint64 i)
{
  const char *s = ((char *const *) t->data)[i];
  return s ? s : "";
}

static void
string_set (GraftRtTensor *t, gint64 i, char *owned)
{
  g_free (((char **) t->data)[i]);
  ((char **) t->data)[i] = owned;
}

static gboolean
check_strings (const GraftRtTensor *t, const char *what, GError **error)
{
  if (t->dtype != GRAFT_DTYPE_STRING)
    return graft_kernel_fail (error, "%s must be a string tensor, not %s", what, graft_dtype_to_string (t->dtype));
  return TRUE;
}

/* ---- StringConcat ---- */

static gboolean
infer_string_concat (GraftInferContext *ctx, GError **error)
{
  GraftShape shape;
  if (!graft_infer_broadcast_inputs (ctx, 0, 2, &shape, error))
    return FALSE;
  graft_infer_set_output (ctx, 0, GRAFT_DTYPE_STRING, &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

static gboolean
kernel_string_concat (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *a = ctx->inputs[0], *b = ctx->inputs[1];
  if (!check_strings (a, "the first input", error) || !check_strings (b, "the second input", error))
    return FALSE;
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  const GraftRtTensor *ins[2] = { a, b };
  GraftBroadcastIter it;
  graft_broadcast_iter_init (&it, out, ins, 2);
  for (gint64 i = 0; i < out->numel; i++, graft_broadcast_iter_next (&it))
    string_set (out, i, g_strconcat (string_at (a, it.offsets[0]), string_at (b, it.offsets[1]), NULL));
  return TRUE;
}

/* ---- StringSplit ---- */

static gboolean
infer_string_split (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  if (x->shape.rank < 0)
    graft_infer_set_output_unknown (ctx, 0, GRAFT_DTYPE_STRING, -1);
  else
    {
      GraftShape shape;
      graft_shape_init (&shape, x->shape.rank + 1);
      for (int d = 0; d < x->shape.rank; d++)
        shape.dims[d] = x->shape.dims[d];
      graft_infer_set_output (ctx, 0, GRAFT_DTYPE_STRING, &shape);
      graft_shape_clear (&shape);
    }
  if (ctx->n_outputs > 1)
    graft_infer_set_output (ctx, 1, GRAFT_DTYPE_INT64, &x->shape);
  return TRUE;
}

/* Python's str.split: on a delimiter every occurrence separates (empty
 * pieces kept); without one, runs of whitespace separate and the ends are
 * trimmed. maxsplit < 0 is unlimited. */
static GPtrArray *
split_string (const char *s, const char *delimiter, gint64 maxsplit)
{
  GPtrArray *pieces = g_ptr_array_new_with_free_func (g_free);
  if (delimiter && *delimiter)
    {
      gsize length = strlen (delimiter);
      const char *found;
      while ((maxsplit < 0 || (gint64) pieces->len < maxsplit) && (found = strstr (s, delimiter)) != NULL)
        {
          g_ptr_array_add (pieces, g_strndup (s, found - s));
          s = found + length;
        }
      g_ptr_array_add (pieces, g_strdup (s));
      return pieces;
    }
  while (TRUE)
    {
      while (*s && g_ascii_isspace (*s))
        s++;
      if (*s == '\0')
        break;
      if (maxsplit >= 0 && (gint64) pieces->len == maxsplit)
        {
          /* the rest, trailing whitespace trimmed */
          const char *end = s + strlen (s);
          while (end > s && g_ascii_isspace (end[-1]))
            end--;
          g_ptr_array_add (pieces, g_strndup (s, end - s));
          break;
        }
      const char *start = s;
      while (*s && !g_ascii_isspace (*s))
        s++;
      g_ptr_array_add (pieces, g_strndup (start, s - start));
    }
  return pieces;
}

static gboolean
kernel_string_split (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  if (!check_strings (x, "X", error))
    return FALSE;
  if (x->rank + 1 > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "X has too many axes");
  const char *delimiter = graft_node_attr_string (ctx->node, "delimiter", "");
  gint64 maxsplit = graft_node_has_attr (ctx->node, "maxsplit") ? graft_node_attr_int (ctx->node, "maxsplit", -1) : -1;
  g_autoptr(GPtrArray) splits = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  gint64 widest = 0;
  for (gint64 i = 0; i < x->numel; i++)
    {
      GPtrArray *pieces = split_string (string_at (x, i), delimiter, maxsplit);
      widest = MAX (widest, (gint64) pieces->len);
      g_ptr_array_add (splits, pieces);
    }
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, x->dims, sizeof (gint64) * x->rank);
  dims[x->rank] = widest;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_STRING, x->rank + 1, dims, error);
  if (y == NULL)
    return FALSE;
  GraftRtTensor *counts = NULL;
  if (ctx->n_outputs > 1 && graft_kernel_wants_output (ctx, 1) && (counts = graft_kernel_output (ctx, 1, error)) == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    {
      GPtrArray *pieces = splits->pdata[i];
      for (gint64 k = 0; k < widest; k++)
        string_set (y, i * widest + k, g_strdup (k < (gint64) pieces->len ? pieces->pdata[k] : ""));
      if (counts)
        graft_rt_tensor_set_i64 (counts, i, pieces->len);
    }
  return TRUE;
}

/* ---- RegexFullMatch ---- */

static gboolean
infer_regex_full_match (GraftInferContext *ctx, GError **error)
{
  graft_infer_set_output (ctx, 0, GRAFT_DTYPE_BOOL, &graft_infer_input (ctx, 0)->shape);
  return TRUE;
}

/* The pattern is RE2 syntax; GRegex (PCRE2) accepts the RE2 subset that
 * has no RE2-only constructs, and is anchored at both ends here. */
static gboolean
kernel_regex_full_match (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  if (!check_strings (x, "X", error))
    return FALSE;
  const char *pattern = graft_node_attr_string (ctx->node, "pattern", NULL);
  if (pattern == NULL)
    return graft_kernel_fail (error, "the pattern attribute is missing");
  g_autofree char *anchored = g_strdup_printf ("(?:%s)\\z", pattern);
  g_autoptr(GError) regex_error = NULL;
  g_autoptr(GRegex) regex = g_regex_new (anchored, G_REGEX_ANCHORED, 0, &regex_error);
  if (regex == NULL)
    return graft_kernel_fail (error, "invalid pattern '%s': %s", pattern, regex_error->message);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    ((guint8 *) y->data)[i] = g_regex_match (regex, string_at (x, i), 0, NULL);
  return TRUE;
}

const GraftOpSchema graft_ops_text[] = {
  { "onnx::StringConcat", 20, 0, infer_string_concat, kernel_string_concat, 0, "X Y", "Z" },
  { "onnx::StringSplit", 20, 0, infer_string_split, kernel_string_split, 0, "X", "Y Z" },
  { "onnx::RegexFullMatch", 20, 0, infer_regex_full_match, kernel_regex_full_match, 0, "X", "Y" },
  { NULL }
};
