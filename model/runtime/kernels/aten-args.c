#include "runtime/kernels/aten-args.h"

#include <string.h>

/* "arg<k>" without g_snprintf: every aten kernel call comes here */
static void
arg_key (guint k, char key[16])
{
  char digits[10];
  guint n_digits = 0;
  for (guint rest = k; n_digits == 0 || rest > 0; rest /= 10)
    digits[n_digits++] = '0' + rest % 10;
  memcpy (key, "arg", 3);
  for (guint d = 0; d < n_digits; d++)
    key[3 + d] = digits[n_digits - 1 - d];
  key[3 + n_digits] = '\0';
}

/* The position k of an attribute named "arg<k>" (no leading zero), or -1. */
static gint
arg_position (const char *name)
{
  if (name[0] != 'a' || name[1] != 'r' || name[2] != 'g' || !g_ascii_isdigit (name[3]) ||
      (name[3] == '0' && name[4] != '\0'))
    return -1;
  gint k = 0;
  for (const char *c = name + 3; *c; c++)
    {
      if (!g_ascii_isdigit (*c) || k > 100000)
        return -1;
      k = k * 10 + (*c - '0');
    }
  return k;
}

GraftAttribute **
graft_aten_positional_attributes (GraftNode *node, guint *n)
{
  gint highest = -1;
  *n = 0;
  if (!g_str_has_prefix (node->op, "aten::") && !g_str_has_prefix (node->op, "prim::"))
    return NULL;
  for (guint i = 0; i < node->attributes->len; i++)
    highest = MAX (highest, arg_position (((GraftAttribute *) node->attributes->pdata[i])->name));
  if (highest < 0 || highest > 4096)
    return NULL;
  GraftAttribute **table = g_new0 (GraftAttribute *, highest + 1);
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *a = node->attributes->pdata[i];
      gint k = arg_position (a->name);
      if (k >= 0 && table[k] == NULL)
        table[k] = a;
    }
  *n = highest + 1;
  return table;
}

void
graft_aten_args (GraftKernelContext *ctx, const char *const *names, guint n, GraftAtenArg *args)
{
  guint next_input = 0, n_table = 0;
  GPtrArray *attributes = ctx->node->attributes;
  /* the plan's table of positions, else one pass over the node's
   * attributes (each aten kernel call comes here: a lookup per position
   * cost a tenth of a small transformer's run in string comparisons) */
  GraftAttribute *const *table = graft_kernel_get_positional_attributes (ctx, &n_table);
  for (guint k = 0; k < n; k++)
    args[k].attr = k < n_table ? table[k] : NULL;
  for (guint i = 0; table == NULL && i < attributes->len; i++)
    {
      GraftAttribute *a = attributes->pdata[i];
      gint k = arg_position (a->name);
      if (k >= 0 && (guint) k < n && args[k].attr == NULL)
        args[k].attr = a;
    }
  for (guint k = 0; k < n; k++)
    {
      GraftAttribute *a = args[k].attr;
      if (a == NULL && names && names[k])
        a = args[k].attr = graft_node_get_attribute (ctx->node, names[k]);
      args[k].value = NULL;
      if (a == NULL && next_input < ctx->n_inputs)
        args[k].value = ctx->inputs[next_input++];
    }
}

GraftAttribute *
graft_aten_node_arg (GraftNode *node, guint k, GraftValue **value)
{
  guint next_input = 0;
  GraftAttribute *a = NULL;
  *value = NULL;
  for (guint p = 0; p <= k; p++)
    {
      char key[16];
      arg_key (p, key);
      if ((a = graft_node_get_attribute (node, key)) == NULL && next_input < node->inputs->len)
        {
          if (p == k)
            *value = node->inputs->pdata[next_input];
          next_input++;
        }
    }
  return a;
}

gboolean
graft_arg_is_none (const GraftAtenArg *arg)
{
  if (arg->attr)
    return arg->attr->type == GRAFT_ATTR_NONE;
  return arg->value == NULL || arg->value->kind == GRAFT_RT_NONE;
}

gint64
graft_arg_int (const GraftAtenArg *arg, gint64 fallback)
{
  if (arg->attr)
    switch (arg->attr->type)
      {
      case GRAFT_ATTR_INT:
      case GRAFT_ATTR_BOOL:
        return arg->attr->i;
      case GRAFT_ATTR_FLOAT:
        return (gint64) arg->attr->f;
      case GRAFT_ATTR_INTS:
        return arg->attr->ints->len == 1 ? g_array_index (arg->attr->ints, gint64, 0) : fallback;
      default:
        return fallback;
      }
  if (arg->value && arg->value->kind == GRAFT_RT_TENSOR && arg->value->numel == 1)
    return graft_rt_tensor_get_i64 (arg->value, 0);
  return fallback;
}

double
graft_arg_double (const GraftAtenArg *arg, double fallback)
{
  if (arg->attr)
    switch (arg->attr->type)
      {
      case GRAFT_ATTR_INT:
      case GRAFT_ATTR_BOOL:
        return (double) arg->attr->i;
      case GRAFT_ATTR_FLOAT:
        return arg->attr->f;
      default:
        return fallback;
      }
  if (arg->value && arg->value->kind == GRAFT_RT_TENSOR && arg->value->numel == 1)
    return graft_rt_tensor_get_f64 (arg->value, 0);
  return fallback;
}

gboolean
graft_arg_ints (const GraftAtenArg *arg, gint64 *values, guint max, guint *n, guint repeat, GError **error)
{
  guint count = 0;
  if (arg->attr && arg->attr->type == GRAFT_ATTR_INTS)
    {
      count = arg->attr->ints->len;
      if (count > max)
        return graft_kernel_fail (error, "an int list of %u entries is too long (at most %u)", count, max);
      for (guint i = 0; i < count; i++)
        values[i] = g_array_index (arg->attr->ints, gint64, i);
    }
  else if (arg->attr && (arg->attr->type == GRAFT_ATTR_INT || arg->attr->type == GRAFT_ATTR_BOOL))
    {
      values[0] = arg->attr->i;
      count = 1;
    }
  else if (arg->value && arg->value->kind == GRAFT_RT_SEQUENCE)
    {
      count = arg->value->items->len;
      if (count > max)
        return graft_kernel_fail (error, "an int list of %u entries is too long (at most %u)", count, max);
      for (guint i = 0; i < count; i++)
        {
          GraftRtTensor *item = arg->value->items->pdata[i];
          if (item->kind != GRAFT_RT_TENSOR || item->numel != 1)
            return graft_kernel_fail (error, "expected a list of ints, item %u is not a number", i);
          values[i] = graft_rt_tensor_get_i64 (item, 0);
        }
    }
  else if (arg->value && arg->value->kind == GRAFT_RT_TENSOR && arg->value->rank <= 1)
    {
      count = (guint) arg->value->numel;
      if (count > max)
        return graft_kernel_fail (error, "an int list of %u entries is too long (at most %u)", count, max);
      for (guint i = 0; i < count; i++)
        values[i] = graft_rt_tensor_get_i64 (arg->value, i);
    }
  else
    return graft_kernel_fail (error, "expected a list of ints");
  if (repeat > 0 && count == 1)
    {
      for (guint i = 1; i < repeat && i < max; i++)
        values[i] = values[0];
      count = MIN (repeat, max);
    }
  *n = count;
  return TRUE;
}

GraftRtTensor *
graft_arg_tensor (const GraftAtenArg *arg)
{
  if (arg->attr || arg->value == NULL || arg->value->kind != GRAFT_RT_TENSOR)
    return NULL;
  return arg->value;
}

GraftRtTensor *
graft_aten_new_bool (gboolean value)
{
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_BOOL, 0, NULL, NULL);
  *(guint8 *) t->data = value ? 1 : 0;
  return t;
}

GraftRtTensor *
graft_aten_new_f64 (double value)
{
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT64, 0, NULL, NULL);
  *(double *) t->data = value;
  return t;
}

GraftRtTensor *
graft_aten_new_string (char *value)
{
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_STRING, 0, NULL, NULL);
  char **slot = t->data;
  g_free (slot[0]);   /* new string tensors hold "" */
  slot[0] = value;
  return t;
}

GraftRtTensor *
graft_aten_value_from_attr (const GraftAttribute *a, GError **error)
{
  switch (a->type)
    {
    case GRAFT_ATTR_INT:
      return graft_rt_tensor_new_scalar_i64 (a->i);
    case GRAFT_ATTR_BOOL:
      return graft_aten_new_bool (a->i != 0);
    case GRAFT_ATTR_FLOAT:
      return graft_aten_new_f64 (a->f);
    case GRAFT_ATTR_NONE:
      return graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED);
    case GRAFT_ATTR_STRING:
      return graft_aten_new_string (a->s ? graft_attribute_dup_string (a) : g_strdup (""));
    case GRAFT_ATTR_INTS:
    case GRAFT_ATTR_FLOATS:
    case GRAFT_ATTR_STRINGS:
      {
        GraftRtTensor *seq = graft_rt_tensor_new_sequence (a->type == GRAFT_ATTR_INTS ? GRAFT_DTYPE_INT64
                                                           : a->type == GRAFT_ATTR_FLOATS ? GRAFT_DTYPE_FLOAT64
                                                           : GRAFT_DTYPE_STRING);
        guint n = a->type == GRAFT_ATTR_INTS ? a->ints->len : a->type == GRAFT_ATTR_FLOATS ? a->floats->len
                  : a->strings->len;
        for (guint i = 0; i < n; i++)
          {
            GraftRtTensor *item;
            if (a->type == GRAFT_ATTR_INTS)
              item = graft_rt_tensor_new_scalar_i64 (g_array_index (a->ints, gint64, i));
            else if (a->type == GRAFT_ATTR_FLOATS)
              item = graft_aten_new_f64 (g_array_index (a->floats, double, i));
            else
              {
                GBytes *b = a->strings->pdata[i];
                gsize len;
                const char *s = g_bytes_get_data (b, &len);
                item = graft_aten_new_string (g_strndup (s, len));
              }
            g_ptr_array_add (seq->items, item);
          }
        return seq;
      }
    case GRAFT_ATTR_TENSOR:
      {
        GraftRtTensor *t = graft_rt_tensor_new_from_tensor (a->t, error);
        return t;
      }
    default:
      graft_kernel_unsupported (error, "constant argument '%s' of type %s", a->name, graft_attr_type_to_string (a->type));
      return NULL;
    }
}

GraftRtTensor *
graft_arg_value (const GraftAtenArg *arg, GError **error)
{
  if (arg->attr)
    return graft_aten_value_from_attr (arg->attr, error);
  if (arg->value == NULL)
    return graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED);
  return graft_rt_tensor_ref (arg->value);
}

gboolean
graft_aten_truth (const GraftRtTensor *value, gboolean *out, GError **error)
{
  if (value == NULL || value->kind != GRAFT_RT_TENSOR || value->numel != 1)
    {
      g_autofree char *d = value ? graft_rt_tensor_describe (value) : g_strdup ("nothing");
      return graft_kernel_fail (error, "a condition must be a bool or a one-element tensor, got %s", d);
    }
  *out = graft_rt_tensor_get_f64 (value, 0) != 0;
  return TRUE;
}

GraftRtTensor *
graft_aten_need_tensor (const GraftAtenArg *arg, guint position, GError **error)
{
  GraftRtTensor *t = graft_arg_tensor (arg);
  if (t == NULL)
    graft_kernel_fail (error, "argument %u must be a tensor", position);
  return t;
}

GraftRtTensor *
graft_aten_as_dtype (GraftRtTensor *t, GraftDType dtype, GError **error)
{
  if (t->dtype == dtype)
    return graft_rt_tensor_ref (t);
  return graft_rt_tensor_cast (t, dtype, error);
}

GraftRtTensor *
graft_aten_constant_tensor (GraftAttribute *attr, GError **error)
{
  GraftRtTensor *t = NULL;
  switch (attr->type)
    {
    case GRAFT_ATTR_INT:
      return graft_rt_tensor_new_scalar_i64 (attr->i);
    case GRAFT_ATTR_FLOAT:
      t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT64, 0, NULL, error);
      *(double *) t->data = attr->f;
      return t;
    case GRAFT_ATTR_BOOL:
      t = graft_rt_tensor_new (GRAFT_DTYPE_BOOL, 0, NULL, error);
      *(guint8 *) t->data = attr->i != 0;
      return t;
    case GRAFT_ATTR_TENSOR:
      return attr->t ? graft_rt_tensor_new_from_tensor (attr->t, error) : NULL;
    case GRAFT_ATTR_NONE:
      return graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED);
    case GRAFT_ATTR_STRING:
      t = graft_rt_tensor_new (GRAFT_DTYPE_STRING, 0, NULL, error);
      g_free (((char **) t->data)[0]);
      ((char **) t->data)[0] = graft_attribute_dup_string (attr);
      return t;
    case GRAFT_ATTR_INTS:
      {
        gint64 n = attr->ints ? attr->ints->len : 0;
        t = graft_rt_tensor_new (GRAFT_DTYPE_INT64, 1, &n, error);
        if (t && n)
          memcpy (t->data, attr->ints->data, sizeof (gint64) * n);
        return t;
      }
    case GRAFT_ATTR_FLOATS:
      {
        gint64 n = attr->floats ? attr->floats->len : 0;
        t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT64, 1, &n, error);
        if (t && n)
          memcpy (t->data, attr->floats->data, sizeof (double) * n);
        return t;
      }
    default:
      graft_kernel_unsupported (error, "constant of attribute type %s", graft_attr_type_to_string (attr->type));
      return NULL;
    }
}

const char *
graft_arg_string (const GraftAtenArg *arg, char **owned)
{
  if (arg->attr && arg->attr->type == GRAFT_ATTR_STRING)
    return *owned = arg->attr->s ? graft_attribute_dup_string (arg->attr) : g_strdup ("");
  if (arg->value && arg->value->kind == GRAFT_RT_TENSOR && arg->value->dtype == GRAFT_DTYPE_STRING &&
      arg->value->numel == 1)
    return ((char **) arg->value->data)[0] ? ((char **) arg->value->data)[0] : "";
  return NULL;
}
