/* TorchScript's prim:: nodes and the aten:: ops on scalars, lists and
 * tuples (len, __getitem__, append, Int, __is__...): control flow runs the
 * builder's blocks, containers are sequence values (see aten-args.h). */
#include <math.h>
#include <string.h>
#include "ir/module-dict.h"
#include "runtime/kernels/aten-args.h"

/* Number of positional arguments a node was called with. */
static guint
n_call_args (GraftKernelContext *ctx)
{
  guint n = ctx->n_inputs;
  for (guint i = 0; i < ctx->node->attributes->len; i++)
    {
      GraftAttribute *a = ctx->node->attributes->pdata[i];
      if (g_str_has_prefix (a->name, "arg"))
        n++;
    }
  return MIN (n, GRAFT_ATEN_MAX_ARGS);
}

static gboolean
set_scalar_i64 (GraftKernelContext *ctx, guint i, gint64 v)
{
  graft_kernel_set_output (ctx, i, graft_rt_tensor_new_scalar_i64 (v));
  return TRUE;
}

static gboolean
set_bool (GraftKernelContext *ctx, guint i, gboolean v)
{
  graft_kernel_set_output (ctx, i, graft_aten_new_bool (v));
  return TRUE;
}

/* aten::ceil / aten::floor. Of a TorchScript number (math.ceil(H / p) in
 * MobileViT: a 0-d float64 not declared a Tensor) an int, as in Python;
 * of a tensor the same dtype, element by element. */
static gboolean
kernel_round_to_integer (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  gboolean up = strcmp (ctx->node->op_type, "ceil") == 0;
  if (x == NULL || x->kind != GRAFT_RT_TENSOR)
    return graft_kernel_fail (error, "%s needs a number or a tensor", ctx->node->op);
  GraftValue *in = ctx->node->inputs->len > 0 ? ctx->node->inputs->pdata[0] : NULL;
  gboolean declared_tensor = in != NULL && in->type_string != NULL && strcmp (in->type_string, "Tensor") == 0;
  if (x->rank == 0 && x->dtype == GRAFT_DTYPE_FLOAT64 && !declared_tensor)
    {
      double v = graft_rt_tensor_get_f64 (x, 0);
      return set_scalar_i64 (ctx, 0, (gint64) (up ? ceil (v) : floor (v)));
    }
  GraftRtTensor *out = graft_rt_tensor_new (x->dtype, x->rank, x->dims, error);
  if (out == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    {
      double v = graft_rt_tensor_get_f64 (x, i);
      graft_rt_tensor_set_f64 (out, i, up ? ceil (v) : floor (v));
    }
  graft_kernel_set_output (ctx, 0, out);
  return TRUE;
}

/* ---- prim ---- */


/* nn.LSTM/GRU/RNN._flat_weights: the module's parameters in PyTorch's
 * order (per layer and direction: weight_ih, weight_hh, bias_ih, bias_hh). */
static gboolean
flat_weights (GraftKernelContext *ctx, const char *name, GError **error)
{
  g_autofree char *module = g_strndup (name, strlen (name) - strlen ("._flat_weights"));
  static const char *const kinds[] = { "weight_ih", "weight_hh", "bias_ih", "bias_hh" };
  GraftRtTensor *list = graft_rt_tensor_new_sequence (GRAFT_DTYPE_FLOAT32);
  for (int layer = 0;; layer++)
    {
      guint before = list->items->len;
      for (int dir = 0; dir < 2; dir++)
        for (guint k = 0; k < G_N_ELEMENTS (kinds); k++)
          {
            g_autofree char *pname = g_strdup_printf ("%s.%s_l%d%s", module, kinds[k], layer, dir ? "_reverse" : "");
            GraftValue *v = graft_graph_resolve_value (ctx->node->graph, pname);
            if (v == NULL || v->initializer == NULL)
              continue;
            GraftRtTensor *t = graft_rt_tensor_new_from_tensor (v->initializer, error);
            if (t == NULL)
              {
                graft_rt_tensor_unref (list);
                return FALSE;
              }
            g_ptr_array_add (list->items, t);
          }
      if (list->items->len == before)
        break;
    }
  if (list->items->len == 0)
    {
      graft_rt_tensor_unref (list);
      return graft_kernel_fail (error, "no parameters found for %s", name);
    }
  graft_kernel_set_output (ctx, 0, list);
  return TRUE;
}

static gboolean
kernel_get_attr (GraftKernelContext *ctx, GError **error)
{
  GHashTable *set = graft_kernel_module_attributes (ctx);
  GraftRtTensor *set_value = set ? g_hash_table_lookup (set, graft_node_attr_string (ctx->node, "name", "")) : NULL;
  if (set_value != NULL)
    {
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (set_value));
      return TRUE;
    }
  GraftAttribute *value = graft_node_get_attribute (ctx->node, "value");
  if (value)
    {
      GraftRtTensor *v = graft_aten_value_from_attr (value, error);
      if (v)
        graft_kernel_set_output (ctx, 0, v);
      return v != NULL;
    }
  GraftModuleDict module_dict;
  if (graft_module_dict_read (ctx->node, &module_dict))
    {
      /* the runtime's dicts are sequences of key, value. Every read of the
       * attribute in a run is the same dict, so that what one fills in
       * (timm's attention_bias_cache) the next finds. */
      GraftRtTensor *dict = graft_rt_tensor_new_sequence (GRAFT_DTYPE_UNDEFINED);
      for (guint k = 0; k < module_dict.n_entries; k++)
        {
          g_ptr_array_add (dict->items, graft_aten_new_string (graft_module_dict_dup_key (&module_dict, k)));
          if (module_dict.values_are_inputs)
            g_ptr_array_add (dict->items, graft_rt_tensor_ref (ctx->inputs[k]));
          else
            g_ptr_array_add (dict->items, graft_aten_new_string (graft_module_dict_dup_string_value (&module_dict, k)));
        }
      if (set != NULL)
        g_hash_table_insert (set, g_strdup (graft_node_attr_string (ctx->node, "name", "")), graft_rt_tensor_ref (dict));
      graft_kernel_set_output (ctx, 0, dict);
      return TRUE;
    }
  const char *name = graft_node_attr_string (ctx->node, "name", "");
  /* The runtime runs models for inference: modules are in eval mode. */
  if (strcmp (name, "training") == 0 || g_str_has_suffix (name, ".training"))
    return set_bool (ctx, 0, FALSE);
  /* Tensor attributes are initializers, so a bias read here is None. */
  if (strcmp (name, "bias") == 0 || g_str_has_suffix (name, ".bias"))
    {
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_new_none (GRAFT_DTYPE_FLOAT32));
      return TRUE;
    }
  if (g_str_has_suffix (name, "._flat_weights"))
    return flat_weights (ctx, name, error);
  return graft_kernel_unsupported (error, "the value of module attribute '%s' is not known", name);
}

/* prim::SetAttr(value) name=ATTRIBUTE arg0=MODULE: later GetAttrs of
 * MODULE.ATTRIBUTE in this run read value (lists shared, as in Python). */
static gboolean
kernel_set_attr (GraftKernelContext *ctx, GError **error)
{
  GHashTable *set = graft_kernel_module_attributes (ctx);
  GraftRtTensor *value = graft_kernel_input (ctx, 0);
  if (set == NULL || value == NULL)
    return graft_kernel_fail (error, "SetAttr needs a value and a run");
  const char *module = graft_node_attr_string (ctx->node, "arg0", ""), *name = graft_node_attr_string (ctx->node, "name", "");
  g_hash_table_replace (set, *module ? g_strdup_printf ("%s.%s", module, name) : g_strdup (name), graft_rt_tensor_ref (value));
  return TRUE;
}

static gboolean
kernel_construct (GraftKernelContext *ctx, GError **error)
{
  guint n = n_call_args (ctx);
  GraftAtenArg args[GRAFT_ATEN_MAX_ARGS];
  graft_aten_args (ctx, NULL, n, args);
  GraftRtTensor *seq = graft_rt_tensor_new_sequence (GRAFT_DTYPE_UNDEFINED);
  for (guint k = 0; k < n; k++)
    {
      GraftRtTensor *v = graft_arg_value (&args[k], error);
      if (v == NULL)
        {
          graft_rt_tensor_unref (seq);
          return FALSE;
        }
      if (k == 0)
        seq->dtype = v->dtype;
      g_ptr_array_add (seq->items, v);
    }
  graft_kernel_set_output (ctx, 0, seq);
  return TRUE;
}

static GraftRtTensor *
need_sequence (GraftRtTensor *t, GError **error)
{
  if (t == NULL || t->kind != GRAFT_RT_SEQUENCE)
    {
      graft_kernel_fail (error, "expected a list or tuple");
      return NULL;
    }
  return t;
}

/* A dict key (or list item) equal to key: strings by text, numbers by value */
static gboolean
same_key (const GraftRtTensor *item, const GraftRtTensor *key)
{
  if (item->kind != GRAFT_RT_TENSOR || item->numel != 1 || key->kind != GRAFT_RT_TENSOR || key->numel != 1)
    return FALSE;
  if (key->dtype == GRAFT_DTYPE_STRING || item->dtype == GRAFT_DTYPE_STRING)
    return item->dtype == key->dtype &&
           g_strcmp0 (((char **) item->data)[0] ? ((char **) item->data)[0] : "",
                      ((char **) key->data)[0] ? ((char **) key->data)[0] : "") == 0;
  return graft_rt_tensor_get_f64 (item, 0) == graft_rt_tensor_get_f64 (key, 0);
}

/* The position of key's value in a dict (key, value pairs), or -1 */
static gint64
dict_find (const GraftRtTensor *dict, const GraftRtTensor *key)
{
  for (guint i = 0; i + 1 < dict->items->len; i += 2)
    if (same_key (dict->items->pdata[i], key))
      return i + 1;
  return -1;
}

static gboolean
list_index (GraftRtTensor *seq, gint64 i, gint64 *out, GError **error)
{
  gint64 len = seq->items->len;
  if (i < 0)
    i += len;
  if (i < 0 || i >= len)
    return graft_kernel_fail (error, "list index %" G_GINT64_FORMAT " out of range (length %" G_GINT64_FORMAT ")",
                              i, len);
  *out = i;
  return TRUE;
}

/* __getitem__ / TupleIndex on lists and tuples; dicts are sequences of
 * key, value pairs (DictConstruct). */
static gboolean
kernel_getitem (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *seq = need_sequence (args[0].value, error);
  if (seq == NULL)
    return FALSE;
  if (args[1].attr && args[1].attr->type == GRAFT_ATTR_STRING)
    {
      /* dict["key"] */
      g_autofree char *key = graft_attribute_dup_string (graft_node_get_attribute (ctx->node, "arg1"));
      for (guint i = 0; i + 1 < seq->items->len; i += 2)
        {
          GraftRtTensor *k = seq->items->pdata[i];
          if (k->dtype == GRAFT_DTYPE_STRING && g_strcmp0 (((char **) k->data)[0], key) == 0)
            {
              graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (seq->items->pdata[i + 1]));
              return TRUE;
            }
        }
      return graft_kernel_fail (error, "key '%s' is not in the dict", key);
    }
  if (seq->dtype == GRAFT_DTYPE_UNDEFINED && args[1].value && args[1].value->dtype == GRAFT_DTYPE_STRING)
    {
      /* dict[name] with a runtime key */
      gint64 at = dict_find (seq, args[1].value);
      if (at < 0)
        return graft_kernel_fail (error, "key '%s' is not in the dict",
                                  args[1].value->numel ? ((char **) args[1].value->data)[0] : "");
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (seq->items->pdata[at]));
      return TRUE;
    }
  gint64 i = 0;
  if (!list_index (seq, graft_arg_int (&args[1], 0), &i, error))
    return FALSE;
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (seq->items->pdata[i]));
  return TRUE;
}

static gboolean
kernel_dict_construct (GraftKernelContext *ctx, GError **error)
{
  if (!kernel_construct (ctx, error))
    return FALSE;
  /* keys first: a dict is recognised by its untyped pairs */
  ctx->outputs[0]->dtype = GRAFT_DTYPE_UNDEFINED;
  return TRUE;
}

/* dict() → an empty dict; dict(other) → a copy of its pairs */
static gboolean
kernel_dict (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *other = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
  if (other == NULL)
    return kernel_dict_construct (ctx, error);
  if (other->kind != GRAFT_RT_SEQUENCE)
    return graft_kernel_unsupported (error, "dict() of anything but a dict");
  GraftRtTensor *copy = graft_rt_tensor_new_sequence (GRAFT_DTYPE_UNDEFINED);
  for (guint i = 0; i < other->items->len; i++)
    g_ptr_array_add (copy->items, graft_rt_tensor_ref (other->items->pdata[i]));
  graft_kernel_set_output (ctx, 0, copy);
  return TRUE;
}

static gboolean
kernel_num_to_tensor (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  if (x == NULL || x->kind != GRAFT_RT_TENSOR || x->numel != 1)
    return graft_kernel_fail (error, "expected a number");
  GraftRtTensor *copy = graft_rt_tensor_reshape (x, 0, NULL, error);
  if (copy == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, copy);
  return TRUE;
}

static gboolean
kernel_pass_through (GraftKernelContext *ctx, GError **error)
{
  for (guint i = 0; i < ctx->n_outputs && i < ctx->n_inputs; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (ctx->inputs[i]));
  return TRUE;
}

static gboolean
kernel_uninitialized (GraftKernelContext *ctx, GError **error)
{
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED));
  return TRUE;
}

static gboolean
kernel_raise (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  g_autofree char *message = NULL, *kind = NULL;
  if (args[0].attr && args[0].attr->type == GRAFT_ATTR_STRING)
    message = graft_attribute_dup_string (args[0].attr);
  else if (args[0].value && args[0].value->dtype == GRAFT_DTYPE_STRING && args[0].value->numel == 1)
    message = g_strdup (((char **) args[0].value->data)[0]);
  if (args[1].attr && args[1].attr->type == GRAFT_ATTR_STRING)
    kind = graft_attribute_dup_string (args[1].attr);
  return graft_kernel_fail (error, "the model raised %s: %s", kind ? kind : "an exception",
                            message ? message : "");
}


/* prim::Loop: [max_trip_count], [cond], carried... (the first two are
 * attributes when constant); the body takes (trip, carried...) and returns
 * (cond, carried...). */

/* ---- aten on scalars and lists ---- */

static gboolean
kernel_to_number (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  if (x == NULL || x->kind != GRAFT_RT_TENSOR || x->numel != 1)
    return graft_kernel_fail (error, "only one-element tensors can be converted to numbers");
  const char *op = ctx->node->op_type;
  if (strcmp (op, "Int") == 0)
    return set_scalar_i64 (ctx, 0, graft_rt_tensor_get_i64 (x, 0));
  if (strcmp (op, "Bool") == 0)
    return set_bool (ctx, 0, graft_rt_tensor_get_f64 (x, 0) != 0);
  if (strcmp (op, "Float") == 0)
    {
      graft_kernel_set_output (ctx, 0, graft_aten_new_f64 (graft_rt_tensor_get_f64 (x, 0)));
      return TRUE;
    }
  /* item / ScalarImplicit: keep the category */
  if (graft_dtype_is_float (x->dtype))
    graft_kernel_set_output (ctx, 0, graft_aten_new_f64 (graft_rt_tensor_get_f64 (x, 0)));
  else if (x->dtype == GRAFT_DTYPE_BOOL)
    return set_bool (ctx, 0, graft_rt_tensor_get_i64 (x, 0) != 0);
  else
    return set_scalar_i64 (ctx, 0, graft_rt_tensor_get_i64 (x, 0));
  return TRUE;
}

static gboolean
kernel_is (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  gboolean same;
  gboolean na = graft_arg_is_none (&args[0]), nb = graft_arg_is_none (&args[1]);
  if (na || nb)
    same = na && nb;
  else
    same = args[0].value && args[0].value == args[1].value;
  return set_bool (ctx, 0, strcmp (ctx->node->op_type, "__is__") == 0 ? same : !same);
}

/* Python's `not`; and / or / xor are aten-elementwise.c's kernel_logical */
static gboolean
kernel_not (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[1];
  graft_aten_args (ctx, NULL, 1, args);
  return set_bool (ctx, 0, graft_arg_int (&args[0], 0) == 0);
}

static gboolean
kernel_len (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  if (x && x->kind == GRAFT_RT_SEQUENCE)
    return set_scalar_i64 (ctx, 0, x->items->len);
  if (x && x->kind == GRAFT_RT_TENSOR && x->dtype == GRAFT_DTYPE_STRING && x->rank == 0)
    {
      /* an empty constant string may be stored as NULL */
      const char *str = ((char **) x->data)[0];
      return set_scalar_i64 (ctx, 0, str ? strlen (str) : 0);
    }
  if (x && x->kind == GRAFT_RT_TENSOR && x->rank > 0)
    return set_scalar_i64 (ctx, 0, x->dims[0]);
  return graft_kernel_fail (error, "len() of a value without length");
}

/* What TorchScript makes of `for i in range(lo, hi, step)`:
 * __range_length(lo, hi, step), the trip count, and
 * __derive_index(index, start, step) = start + index·step, the loop
 * variable. */
static gboolean
kernel_range_length (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  gint64 lo = graft_arg_int (&args[0], 0), hi = graft_arg_int (&args[1], 0), step = graft_arg_int (&args[2], 1);
  if (step == 0)
    return graft_kernel_fail (error, "range() arg 3 must not be zero");
  gint64 n = step > 0 ? (lo < hi ? (hi - lo - 1) / step + 1 : 0) : (lo > hi ? (lo - hi - 1) / -step + 1 : 0);
  return set_scalar_i64 (ctx, 0, n);
}

static gboolean
kernel_derive_index (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  return set_scalar_i64 (ctx, 0, graft_arg_int (&args[1], 0) + graft_arg_int (&args[0], 0) * graft_arg_int (&args[2], 1));
}

static gboolean
kernel_append (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *list = need_sequence (args[0].value, error);
  if (list == NULL)
    return FALSE;
  /* the item may be a folded constant (torch 2.x appends len({}) + len({})) */
  GraftRtTensor *item = args[1].attr || args[1].value ? graft_arg_value (&args[1], error) : NULL;
  if (item == NULL)
    return error && *error ? FALSE : graft_kernel_fail (error, "append() needs a value");
  /* In place: everyone holding the list sees the new item. */
  if (list->items->len == 0)
    list->dtype = item->dtype;
  g_ptr_array_add (list->items, item);
  if (ctx->n_outputs > 0)
    graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (list));
  return TRUE;
}

static gboolean
kernel_list (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = need_sequence (ctx->inputs[0], error);
  if (x == NULL)
    return FALSE;
  GraftRtTensor *copy = graft_rt_tensor_copy (x, error);
  if (copy == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, copy);
  return TRUE;
}

static gboolean
kernel_size (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return FALSE;
  if (!graft_arg_is_none (&args[1]))
    {
      gint64 d = graft_arg_int (&args[1], 0);
      if (!graft_normalize_axis (&d, x->rank, error))
        return FALSE;
      return set_scalar_i64 (ctx, 0, x->dims[d]);
    }
  GraftRtTensor *seq = graft_rt_tensor_new_sequence (GRAFT_DTYPE_INT64);
  for (int d = 0; d < x->rank; d++)
    g_ptr_array_add (seq->items, graft_rt_tensor_new_scalar_i64 (x->dims[d]));
  graft_kernel_set_output (ctx, 0, seq);
  return TRUE;
}

static gboolean
kernel_dim (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  if (x == NULL || x->kind != GRAFT_RT_TENSOR)
    return graft_kernel_fail (error, "dim() needs a tensor");
  return set_scalar_i64 (ctx, 0, x->rank);
}

static gboolean
kernel_warn (GraftKernelContext *ctx, GError **error)
{
  for (guint i = 0; i < ctx->n_outputs; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED));
  return TRUE;
}

/* A float as Python's repr writes it: the fewest digits that read back
 * as the same double, and ".0" after an integral value (1.0, 1e+16). */
static void
append_python_float (GString *s, double x)
{
  char buffer[G_ASCII_DTOSTR_BUF_SIZE], format[8];
  if (!isfinite (x))
    {
      g_string_append (s, isnan (x) ? "nan" : x > 0 ? "inf" : "-inf");
      return;
    }
  int digits = 1;
  for (; digits < 17; digits++)
    {
      g_snprintf (format, sizeof format, "%%.%de", digits - 1);
      g_ascii_formatd (buffer, sizeof buffer, format, x);
      if (g_ascii_strtod (buffer, NULL) == x)
        break;
    }
  /* (fixed notation for exponents -4 to 15, as repr) */
  g_snprintf (format, sizeof format, "%%.%de", digits - 1);
  g_ascii_formatd (buffer, sizeof buffer, format, x);
  int exponent = atoi (strchr (buffer, 'e') + 1);
  if (exponent >= -4 && exponent < 16)
    {
      g_snprintf (format, sizeof format, "%%.%df", MAX (digits - 1 - exponent, 0));
      g_ascii_formatd (buffer, sizeof buffer, format, x);
    }
  g_string_append (s, buffer);
  if (strpbrk (buffer, ".e") == NULL)
    g_string_append (s, ".0");
}

/* v as Python's str() writes it where scripted code formats a message:
 * ints, floats, bools, None, strings (quoted inside a list) and lists of
 * them ([1, 4, 1, 1]); a tensor by its dtype and shape. */
static void
append_python_value (GString *s, const GraftRtTensor *v, gboolean in_list)
{
  if (v->kind == GRAFT_RT_NONE)
    g_string_append (s, "None");
  else if (v->kind == GRAFT_RT_SEQUENCE)
    {
      g_string_append_c (s, '[');
      for (guint i = 0; i < v->items->len; i++)
        {
          if (i > 0)
            g_string_append (s, ", ");
          append_python_value (s, v->items->pdata[i], TRUE);
        }
      g_string_append_c (s, ']');
    }
  else if (v->kind == GRAFT_RT_TENSOR && v->rank == 0 && v->dtype == GRAFT_DTYPE_STRING)
    g_string_append_printf (s, in_list ? "'%s'" : "%s", ((char **) v->data)[0]);
  else if (v->kind == GRAFT_RT_TENSOR && v->rank == 0 && v->dtype == GRAFT_DTYPE_BOOL)
    g_string_append (s, graft_rt_tensor_get_f64 (v, 0) != 0 ? "True" : "False");
  else if (v->kind == GRAFT_RT_TENSOR && v->rank == 0 && graft_dtype_is_float (v->dtype))
    append_python_float (s, graft_rt_tensor_get_f64 (v, 0));
  else if (v->kind == GRAFT_RT_TENSOR && v->rank == 0)
    g_string_append_printf (s, "%" G_GINT64_FORMAT, graft_rt_tensor_get_i64 (v, 0));
  else
    {
      g_autofree char *d = graft_rt_tensor_describe (v);
      g_string_append (s, d);
    }
}

/* format: the message only feeds exceptions; "{}" get the values as
 * Python writes them, so that a scripted check's message reads as
 * torch's ("... got input size [1, 4, 1, 1]"). */
static gboolean
kernel_format (GraftKernelContext *ctx, GError **error)
{
  guint n = n_call_args (ctx);
  GraftAtenArg args[GRAFT_ATEN_MAX_ARGS];
  graft_aten_args (ctx, NULL, n, args);
  g_autofree char *fmt = args[0].attr ? graft_attribute_dup_string (args[0].attr) : g_strdup ("");
  GString *s = g_string_new (NULL);
  guint k = 1;
  for (const char *p = fmt ? fmt : ""; *p; p++)
    if (p[0] == '{' && p[1] == '}')
      {
        if (k < n)
          {
            g_autoptr(GraftRtTensor) v = graft_arg_value (&args[k++], NULL);
            if (v)
              append_python_value (s, v, FALSE);
          }
        p++;
      }
    else
      g_string_append_c (s, *p);
  GraftRtTensor *t = graft_aten_new_string (g_string_free (s, FALSE));
  graft_kernel_set_output (ctx, 0, t);
  return TRUE;
}

/* prim::min / prim::max of an int list */
static gboolean
kernel_list_minmax (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = need_sequence (ctx->inputs[0], error);
  if (x == NULL || x->items->len == 0)
    return x ? graft_kernel_fail (error, "min()/max() of an empty list") : FALSE;
  gboolean is_min = strcmp (ctx->node->op_type, "min") == 0;
  double best = 0;
  GraftRtTensor *pick = NULL;
  for (guint i = 0; i < x->items->len; i++)
    {
      double v = graft_rt_tensor_get_f64 (x->items->pdata[i], 0);
      if (pick == NULL || (is_min ? v < best : v > best))
        {
          best = v;
          pick = x->items->pdata[i];
        }
    }
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (pick));
  return TRUE;
}

/* prim::dtype (a ScalarType code) and prim::device (always "cpu") */
static gboolean
kernel_tensor_info (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  if (x == NULL || x->kind != GRAFT_RT_TENSOR)
    return graft_kernel_fail (error, "%s needs a tensor", ctx->node->op);
  if (strcmp (ctx->node->op_type, "dtype") == 0)
    {
      gint64 code = graft_dtype_to_torch_scalar_type (x->dtype);
      if (code >= 0)
        return set_scalar_i64 (ctx, 0, code);
      return graft_kernel_unsupported (error, "no TorchScript dtype for %s", graft_dtype_to_string (x->dtype));
    }
  graft_kernel_set_output (ctx, 0, graft_aten_new_string (g_strdup ("cpu")));
  return TRUE;
}

/* Questions a CPU inference run answers the same way every time: no
 * nested tensors, no CUDA, no autograd, no autocast. */
static gboolean
kernel_false (GraftKernelContext *ctx, GError **error)
{
  return set_bool (ctx, 0, FALSE);
}

static gboolean
kernel_str (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  char *text;
  if (x && x->kind == GRAFT_RT_TENSOR && x->dtype == GRAFT_DTYPE_STRING && x->numel == 1)
    text = g_strdup (((char **) x->data)[0] ? ((char **) x->data)[0] : "");
  else if (x && x->kind == GRAFT_RT_TENSOR && x->numel == 1 && graft_dtype_is_float (x->dtype))
    text = g_strdup_printf ("%g", graft_rt_tensor_get_f64 (x, 0));
  else if (x && x->kind == GRAFT_RT_TENSOR && x->numel == 1)
    text = g_strdup_printf ("%" G_GINT64_FORMAT, graft_rt_tensor_get_i64 (x, 0));
  else
    text = x ? graft_rt_tensor_describe (x) : g_strdup ("None");
  GraftRtTensor *t = graft_aten_new_string (text);
  graft_kernel_set_output (ctx, 0, t);
  return TRUE;
}

/* str.find(sub, start=0, end=len): index or -1 */
static gboolean
kernel_find (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[4];
  graft_aten_args (ctx, NULL, 4, args);
  g_autofree char *own_s = NULL, *own_sub = NULL;
  const char *s = graft_arg_string (&args[0], &own_s), *sub = graft_arg_string (&args[1], &own_sub);
  if (s == NULL || sub == NULL)
    return graft_kernel_fail (error, "find() needs two strings");
  gint64 len = strlen (s);
  gint64 start = graft_arg_int (&args[2], 0), end = graft_arg_is_none (&args[3]) ? len : graft_arg_int (&args[3], len);
  start = start < 0 ? MAX (start + len, 0) : MIN (start, len);
  end = end < 0 ? MAX (end + len, 0) : MIN (end, len);
  gint64 sublen = strlen (sub);
  for (gint64 i = start; i + sublen <= end; i++)
    if (strncmp (s + i, sub, sublen) == 0)
      return set_scalar_i64 (ctx, 0, i);
  return set_scalar_i64 (ctx, 0, -1);
}

/* _set_item(dict, key, value) / _set_item(list, index, value): in place,
 * as every holder of the dict or list sees it */
static gboolean
kernel_set_item (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *seq = need_sequence (args[0].value, error);
  if (seq == NULL)
    return FALSE;
  g_autoptr(GraftRtTensor) key = graft_arg_value (&args[1], error);
  if (key == NULL)
    return FALSE;
  GraftRtTensor *value = graft_arg_value (&args[2], error);
  if (value == NULL)
    return FALSE;
  for (guint k = 0; k < ctx->n_outputs; k++)
    graft_kernel_set_output (ctx, k, graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED));
  if (seq->dtype == GRAFT_DTYPE_UNDEFINED)
    {
      gint64 at = dict_find (seq, key);
      if (at >= 0)
        {
          graft_rt_tensor_unref (seq->items->pdata[at]);
          seq->items->pdata[at] = value;
        }
      else
        {
          g_ptr_array_add (seq->items, g_steal_pointer (&key));
          g_ptr_array_add (seq->items, value);
        }
      return TRUE;
    }
  gint64 i = 0;
  if (!list_index (seq, graft_rt_tensor_get_i64 (key, 0), &i, error))
    {
      graft_rt_tensor_unref (value);
      return FALSE;
    }
  graft_rt_tensor_unref (seq->items->pdata[i]);
  seq->items->pdata[i] = value;
  return TRUE;
}

/* x in list / key in dict (dicts are key, value pairs) */
static gboolean
kernel_contains (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  g_autoptr(GraftRtTensor) container = graft_arg_value (&args[0], error);
  if (container == NULL)
    return FALSE;
  g_autoptr(GraftRtTensor) key = graft_arg_value (&args[1], error);
  if (key == NULL)
    return FALSE;
  if (container->kind != GRAFT_RT_SEQUENCE || key->kind != GRAFT_RT_TENSOR || key->numel != 1)
    return graft_kernel_fail (error, "'in' needs a list or dict and a number or string");
  gboolean is_dict = container->dtype == GRAFT_DTYPE_UNDEFINED && strcmp (ctx->node->op_type, "__contains__") == 0 &&
                     container->items->len % 2 == 0 && container->items->len > 0 &&
                     ((GraftRtTensor *) container->items->pdata[0])->dtype == key->dtype;
  gboolean found = FALSE;
  for (guint i = 0; !found && i < container->items->len; i += is_dict ? 2 : 1)
    found = same_key (container->items->pdata[i], key);
  return set_bool (ctx, 0, found);
}

#define OP(name, kernel) { name, 0, 0, NULL, kernel, 0 }

const GraftOpSchema graft_ops_aten_prim[] = {
  OP ("prim::GetAttr", kernel_get_attr),
  OP ("prim::SetAttr", kernel_set_attr),
  OP ("prim::DictConstruct", kernel_dict_construct), OP ("aten::dict", kernel_dict),
  OP ("prim::TupleIndex", kernel_getitem),
  OP ("prim::NumToTensor", kernel_num_to_tensor),
  OP ("prim::unchecked_cast", kernel_pass_through),
  OP ("prim::Uninitialized", kernel_uninitialized),
  OP ("prim::RaiseException", kernel_raise),
  OP ("prim::dtype", kernel_tensor_info),
  OP ("prim::device", kernel_tensor_info),
  OP ("prim::type", kernel_pass_through),   /* of a device: Graft's devices are their type, "cpu" */
  OP ("prim::is_nested", kernel_false),
  OP ("prim::is_cuda", kernel_false),
  OP ("prim::requires_grad", kernel_false),
  OP ("aten::is_autocast_enabled", kernel_false),
  OP ("aten::is_grad_enabled", kernel_false),
  OP ("aten::str", kernel_str),
  OP ("aten::find", kernel_find),
  OP ("prim::min", kernel_list_minmax),
  OP ("prim::max", kernel_list_minmax),
  OP ("aten::__getitem__", kernel_getitem),
  OP ("aten::ScalarImplicit", kernel_to_number),
  OP ("aten::item", kernel_to_number),
  OP ("aten::__is__", kernel_is),
  OP ("aten::__isnot__", kernel_is),
  OP ("aten::__not__", kernel_not),
  OP ("aten::len", kernel_len),
  OP ("aten::__range_length", kernel_range_length),
  OP ("aten::__derive_index", kernel_derive_index),
  OP ("aten::__contains__", kernel_contains),
  OP ("aten::append", kernel_append),
  OP ("aten::_set_item", kernel_set_item),
  OP ("aten::list", kernel_list),
  OP ("aten::ceil", kernel_round_to_integer),
  OP ("aten::floor", kernel_round_to_integer),
  OP ("aten::size", kernel_size),
  OP ("aten::dim", kernel_dim),
  OP ("aten::warn", kernel_warn),
  OP ("aten::format", kernel_format),
  { NULL }
};
