#include "migrate/torchscript-to-pt2.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "ir/fixed-branch.h"
#include "ir/model-error.h"
#include "ir/module-dict.h"
#include "lower/lower.h"
#include "pt2/exported-program.h"
#include "pt2/exported-program-private.h"
#include "runtime/inputs.h"
#include "runtime/runtime.h"
#include "pytorch/aten-schemas.h"
#include "torchscript/script-builder.h"

/* torch 2.13 writes schema 8.20 and the aten opset 10. */
#define SCHEMA_MINOR 20
#define ATEN_OPSET 10
#define TORCH_VERSION "2.13.0"
/* Sizes of a dynamic dim the runs try besides the export size. */
#define N_PROBES 2

/* ------------------------------------------------------------------ observations */

/* What one run saw of a value. */
typedef struct {
  gboolean is_sequence;
  GraftDType dtype;
  int rank;
  gint64 dims[GRAFT_RT_MAX_RANK];
  gboolean has_scalar;     /* one element: its value */
  double scalar;
  GPtrArray *items;        /* Observation* of a sequence's items */
} Observation;

static void
observation_free (Observation *observation)
{
  if (observation->items)
    g_ptr_array_unref (observation->items);
  g_free (observation);
}

static Observation *
observe (GraftRtTensor *tensor)
{
  Observation *observation = g_new0 (Observation, 1);
  observation->dtype = tensor->dtype;
  if (tensor->kind == GRAFT_RT_SEQUENCE)
    {
      observation->is_sequence = TRUE;
      observation->items = g_ptr_array_new_with_free_func ((GDestroyNotify) observation_free);
      for (guint i = 0; tensor->items && i < tensor->items->len; i++)
        g_ptr_array_add (observation->items, observe (g_ptr_array_index (tensor->items, i)));
      return observation;
    }
  if (tensor->kind != GRAFT_RT_TENSOR)
    {
      observation->rank = -1;
      return observation;
    }
  observation->rank = tensor->rank;
  memcpy (observation->dims, tensor->dims, sizeof (gint64) * tensor->rank);
  if (tensor->numel == 1 && tensor->dtype != GRAFT_DTYPE_STRING)
    {
      observation->has_scalar = TRUE;
      observation->scalar = graft_rt_tensor_get_f64 (tensor, 0);
    }
  return observation;
}

typedef struct {
  GHashTable *seen;        /* GraftValue* → GPtrArray* of Observation*, one per time a node computed it (loops) */
  gint64 *sizes;           /* per symbol: its size in this run */
} Run;

static void
seen_add (Run *run, GraftValue *value, Observation *observation)
{
  GPtrArray *times = g_hash_table_lookup (run->seen, value);
  if (times == NULL)
    {
      times = g_ptr_array_new_with_free_func ((GDestroyNotify) observation_free);
      g_hash_table_insert (run->seen, value, times);
    }
  g_ptr_array_add (times, observation);
}

static void
record_observation (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  Run *run = user_data;
  if (value != NULL && tensor != NULL)
    seen_add (run, value, observe (tensor));
}

/* ------------------------------------------------------------------ arguments */

typedef enum {
  ARG_TENSOR,   /* name */
  ARG_SYM,      /* name: a SymInt node output */
  ARG_CONST,    /* constant */
  ARG_LIST,     /* items */
  ARG_DATA,     /* name: the node that read a number out of tensor data */
  ARG_UNCONVERTED, /* name: why its node could not be converted, refused where it is used */
  ARG_DICT,     /* items: key (a string constant), value, key, value… */
} ArgKind;

typedef struct {
  ArgKind kind;
  char *name;
  const GraftAttribute *constant;   /* borrowed from the source node or Converter.owned */
  GPtrArray *items;                 /* Arg*, borrowed from Converter.args or owned by it */
  gboolean is_tuple;                /* ARG_LIST from a TupleConstruct */
} Arg;

typedef struct {
  GraftModel *model;
  GraftGraph *graph;
  const GraftPt2ConvertOptions *options;
  GError **error;

  /* symbols */
  GPtrArray *symbols;          /* char*, interned */
  GArray *base_sizes;          /* gint64 per symbol */
  GPtrArray *runs;             /* Run*: 0 at the export size, then N_PROBES per symbol */

  /* translation */
  GArray *ranges;              /* gint64 min, max per symbol (max < 0: unbounded) */
  GHashTable *args;            /* GraftValue* → Arg* */
  GPtrArray *owned_args;       /* Arg* made here */
  GPtrArray *owned_attributes; /* GraftAttribute* made here */
  GHashTable *used_names;      /* FX names given */
  GHashTable *weight_names;    /* GraftValue* (initializer) → placeholder name */
  JsonArray *nodes;
  JsonObject *tensor_values;
  JsonObject *sym_int_values;
  GPtrArray *module_paths;     /* group paths in first-use order, char* */
  GHashTable *module_seen;
  GHashTable *buffers;         /* fqn → TRUE */
  GHashTable *dict_attributes; /* module attribute path → its ARG_DICT as the program stands */
  GHashTable *attributes_set;  /* module attribute path → Arg* a prim::SetAttr gave it */
  /* Loops are unrolled: the k-th conversion of a node in a body reads
   * what the runs saw the k-th time it ran. */
  GHashTable *conversions;     /* GraftValue* → times its node was converted */
  GHashTable *observed_as;     /* GraftValue* (a body's input) → ObservedAs* */
  GPtrArray *owned_aliases;
  guint unrolled;              /* iterations unrolled so far */
  GHashTable *input_dependent; /* GraftValue* → whether it follows the inputs */
} Converter;

/* A loop body's input at one iteration: what the runs saw of the value
 * that feeds it, the index-th time. */
typedef struct {
  GraftValue *value;
  guint index;
} ObservedAs;

static gboolean
refuse_node (Converter *c, GraftNode *node, const char *format, ...) G_GNUC_PRINTF (3, 4);

static gboolean
refuse_node (Converter *c, GraftNode *node, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (c->error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
               "cannot convert to torch.export: node %s (%s%s%s): %s", node->name, node->op,
               node->group && *node->group->path ? " in " : "", node->group ? node->group->path : "", message);
  return FALSE;
}

/* An argument whose node could not be converted: its refusal, now that
 * something uses it. */
static gboolean
refuse_unconverted (Converter *c, const Arg *arg)
{
  g_set_error_literal (c->error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED, arg->name);
  return FALSE;
}

static Arg *
arg_new (Converter *c, ArgKind kind, const char *name)
{
  Arg *arg = g_new0 (Arg, 1);
  arg->kind = kind;
  arg->name = g_strdup (name);
  g_ptr_array_add (c->owned_args, arg);
  return arg;
}

static void
arg_free (gpointer data)
{
  Arg *arg = data;
  g_free (arg->name);
  if (arg->items)
    g_ptr_array_unref (arg->items);
  g_free (arg);
}

static Arg *
const_arg (Converter *c, const GraftAttribute *constant)
{
  Arg *arg = arg_new (c, ARG_CONST, NULL);
  arg->constant = constant;
  return arg;
}

static Arg *
int_arg (Converter *c, gint64 value)
{
  GraftAttribute *constant = graft_attribute_new_int ("", value);
  g_ptr_array_add (c->owned_attributes, constant);
  return const_arg (c, constant);
}

/* ------------------------------------------------------------------ names */

static gboolean
is_python_reserved (const char *name)
{
  static const char *const reserved[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "abs", "all", "any", "bool", "bytes",
    "callable", "chr", "dict", "dir", "divmod", "enumerate", "eval", "exec", "filter", "float", "format", "getattr",
    "globals", "hash", "help", "hex", "id", "input", "int", "isinstance", "iter", "len", "list", "locals", "map",
    "max", "min", "next", "object", "open", "ord", "pow", "print", "range", "repr", "round", "set", "slice",
    "sorted", "str", "sum", "super", "tuple", "type", "vars", "zip", "self", "torch", "operator", "math",
  };
  for (guint i = 0; i < G_N_ELEMENTS (reserved); i++)
    if (strcmp (name, reserved[i]) == 0)
      return TRUE;
  return FALSE;
}

/* A unique Python identifier from hint ("input.1" → "input_1"), as FX
 * names the nodes of the program's code. */
static const char *
unique_name (Converter *c, const char *hint)
{
  GString *name = g_string_new (NULL);
  for (const char *p = hint; p && *p; p++)
    g_string_append_c (name, g_ascii_isalnum (*p) ? *p : '_');
  if (name->len == 0 || g_ascii_isdigit (name->str[0]))
    g_string_prepend (name, "v_");
  if (is_python_reserved (name->str))
    g_string_append (name, "_1");
  g_autofree char *base = g_strdup (name->str);
  for (guint n = 1; g_hash_table_contains (c->used_names, name->str); n++)
    {
      g_string_assign (name, base);
      g_string_append_printf (name, "_%u", n);
    }
  char *owned = g_string_free (name, FALSE);
  g_hash_table_add (c->used_names, owned);
  return owned;
}

/* ------------------------------------------------------------------ JSON helpers */

static JsonNode *
union_of (const char *field, JsonNode *value)
{
  JsonObject *object = json_object_new ();
  json_object_set_member (object, field, value);
  return json_node_init_object (json_node_alloc (), object);
}

static JsonNode *
int_node (gint64 value)
{
  return json_node_init_int (json_node_alloc (), value);
}

static JsonNode *
named_node (const char *key, const char *name)
{
  JsonObject *object = json_object_new ();
  json_object_set_string_member (object, key, name);
  return json_node_init_object (json_node_alloc (), object);
}

static JsonNode *
tensor_argument (const char *name)
{
  return union_of ("as_tensor", named_node ("name", name));
}

static JsonNode *
sym_int_argument (const char *name)
{
  return union_of ("as_sym_int", named_node ("as_name", name));
}

static JsonNode *
symint_node (const char *expr, gint64 hint)
{
  if (expr == NULL)
    return union_of ("as_int", int_node (hint));
  JsonObject *object = json_object_new ();
  json_object_set_string_member (object, "expr_str", expr);
  json_object_set_member (object, "hint", union_of ("as_int", int_node (hint)));
  return union_of ("as_expr", json_node_init_object (json_node_alloc (), object));
}

/* ------------------------------------------------------------------ sizes as functions of the symbols */

/* Which time of value the conversion is at. */
static ObservedAs
observed_as (Converter *c, GraftValue *value)
{
  ObservedAs *alias = g_hash_table_lookup (c->observed_as, value);
  if (alias != NULL)
    return *alias;
  guint conversions = GPOINTER_TO_UINT (g_hash_table_lookup (c->conversions, value));
  return (ObservedAs) { value, conversions > 0 ? conversions - 1 : 0 };
}

static Observation *
observation_in (Converter *c, guint run, GraftValue *value)
{
  Run *r = g_ptr_array_index (c->runs, run);
  ObservedAs at = observed_as (c, value);
  GPtrArray *times = g_hash_table_lookup (r->seen, at.value);
  if (times == NULL || times->len == 0)
    return NULL;
  return g_ptr_array_index (times, MIN (at.index, times->len - 1));
}

static gint64
run_size (Converter *c, guint run, guint symbol)
{
  Run *r = g_ptr_array_index (c->runs, run);
  return r->sizes[symbol];
}

/* The expression of a size seen as values[run] (one per run): NULL and
 * *fixed when it never changes; else "batch", "2*batch + 1",
 * "batch*seq"; NULL without *fixed when it is none of those. */
static char *
size_expression (Converter *c, const gint64 *values, gboolean *fixed)
{
  gint64 base = values[0];
  *fixed = FALSE;
  g_autoptr(GArray) varying = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint s = 0; s < c->symbols->len; s++)
    for (guint k = 0; k < N_PROBES; k++)
      if (values[1 + s * N_PROBES + k] != base)
        {
          g_array_append_val (varying, s);
          break;
        }
  if (varying->len == 0)
    {
      *fixed = TRUE;
      return NULL;
    }
  if (varying->len == 1)
    {
      guint s = g_array_index (varying, guint, 0);
      const char *symbol = g_ptr_array_index (c->symbols, s);
      gint64 s0 = g_array_index (c->base_sizes, gint64, s);
      gint64 s1 = run_size (c, 1 + s * N_PROBES, s), v1 = values[1 + s * N_PROBES];
      if ((v1 - base) % (s1 - s0) != 0)
        return NULL;
      gint64 slope = (v1 - base) / (s1 - s0), offset = base - slope * s0;
      for (guint k = 0; k < N_PROBES; k++)
        if (values[1 + s * N_PROBES + k] != slope * run_size (c, 1 + s * N_PROBES + k, s) + offset)
          return NULL;
      GString *expr = g_string_new (NULL);
      if (slope == -1)
        g_string_append_printf (expr, "-%s", symbol);
      else if (slope != 1)
        g_string_append_printf (expr, "%" G_GINT64_FORMAT "*%s", slope, symbol);
      else
        g_string_append (expr, symbol);
      if (offset != 0)
        g_string_append_printf (expr, " %c %" G_GINT64_FORMAT, offset > 0 ? '+' : '-', ABS (offset));
      return g_string_free (expr, FALSE);
    }
  /* A product of the symbols that move it (batch × seq after a merge). */
  gint64 product = 1;
  for (guint i = 0; i < varying->len; i++)
    product *= g_array_index (c->base_sizes, gint64, g_array_index (varying, guint, i));
  if (product == 0 || base % product != 0)
    return NULL;
  gint64 factor = base / product;
  for (guint run = 1; run < c->runs->len; run++)
    {
      gint64 expected = factor;
      for (guint i = 0; i < varying->len; i++)
        expected *= run_size (c, run, g_array_index (varying, guint, i));
      if (values[run] != expected)
        return NULL;
    }
  GString *expr = g_string_new (NULL);
  if (factor != 1)
    g_string_append_printf (expr, "%" G_GINT64_FORMAT, factor);
  for (guint i = 0; i < varying->len; i++)
    g_string_append_printf (expr, "%s%s", expr->len ? "*" : "",
                            (char *) g_ptr_array_index (c->symbols, g_array_index (varying, guint, i)));
  return g_string_free (expr, FALSE);
}

/* The observations of value in every run, or FALSE (naming the node) when
 * a run did not compute it. */
static gboolean
all_observations (Converter *c, GraftNode *node, GraftValue *value, Observation **seen)
{
  for (guint run = 0; run < c->runs->len; run++)
    if ((seen[run] = observation_in (c, run, value)) == NULL)
      return refuse_node (c, node, "Graft's runtime did not compute %s, so its shape is unknown", value->name);
  return TRUE;
}

/* TensorMeta of a tensor value from the runs. */
static JsonNode *
tensor_meta (Converter *c, GraftNode *node, const char *what, Observation **seen, gboolean requires_grad)
{
  Observation *base = seen[0];
  gint64 code = _graft_exported_dtype_to_schema (base->dtype);
  if (code < 0)
    {
      refuse_node (c, node, "%s is a %s, which torch.export has no dtype for", what,
                   graft_dtype_to_string (base->dtype));
      return NULL;
    }
  g_autofree gint64 *values = g_new (gint64, c->runs->len);
  JsonArray *sizes = json_array_new ();
  JsonArray *strides = json_array_new ();
  g_autoptr(GPtrArray) exprs = g_ptr_array_new_with_free_func (g_free);
  for (int d = 0; d < base->rank; d++)
    {
      for (guint run = 0; run < c->runs->len; run++)
        {
          if (seen[run]->rank != base->rank)
            {
              json_array_unref (sizes);
              json_array_unref (strides);
              refuse_node (c, node, "%s has rank %d at one size and %d at another", what, base->rank, seen[run]->rank);
              return NULL;
            }
          values[run] = seen[run]->dims[d];
        }
      gboolean fixed;
      char *expr = size_expression (c, values, &fixed);
      if (expr == NULL && !fixed)
        {
          json_array_unref (sizes);
          json_array_unref (strides);
          GString *seen_text = g_string_new (NULL);
          for (guint run = 0; run < c->runs->len; run++)
            g_string_append_printf (seen_text, "%s%" G_GINT64_FORMAT, run ? ", " : "", values[run]);
          refuse_node (c, node, "dim %d of %s (%s at the sizes tried) is not a multiple of the dynamic dims plus a "
                       "constant", d, what, seen_text->str);
          g_string_free (seen_text, TRUE);
          return NULL;
        }
      json_array_add_element (sizes, symint_node (expr, base->dims[d]));
      g_ptr_array_add (exprs, expr);
    }
  /* Row-major strides, as a product of the sizes after each dim. */
  g_autoptr(GPtrArray) reversed = g_ptr_array_new_with_free_func ((GDestroyNotify) json_node_unref);
  gint64 fixed_product = 1, hint = 1;
  g_autoptr(GString) symbolic = g_string_new (NULL);
  for (int d = base->rank - 1; d >= 0; d--)
    {
      if (symbolic->len == 0)
        g_ptr_array_add (reversed, symint_node (NULL, fixed_product));
      else
        {
          g_autofree char *expr = fixed_product == 1 ? g_strdup (symbolic->str)
                                  : g_strdup_printf ("%" G_GINT64_FORMAT "*%s", fixed_product, symbolic->str);
          g_ptr_array_add (reversed, symint_node (expr, hint));
        }
      const char *expr = g_ptr_array_index (exprs, d);
      if (expr == NULL)
        fixed_product *= base->dims[d];
      else
        g_string_append_printf (symbolic, "%s(%s)", symbolic->len ? "*" : "", expr);
      hint *= base->dims[d];
    }
  for (guint i = reversed->len; i > 0; i--)
    json_array_add_element (strides, json_node_ref (g_ptr_array_index (reversed, i - 1)));
  return _graft_exported_tensor_meta (code, sizes, json_node_init_array (json_node_alloc (), strides), requires_grad);
}

/* Declares a tensor value of the program (tensor_values[name]). */
static gboolean
declare_tensor (Converter *c, GraftNode *node, const char *name, Observation **seen, gboolean requires_grad)
{
  JsonNode *meta = tensor_meta (c, node, name, seen, requires_grad);
  if (meta == NULL)
    return FALSE;
  json_object_set_member (c->tensor_values, name, meta);
  return TRUE;
}

/* ------------------------------------------------------------------ module stack */

static char *
module_stack (Converter *c, GraftGroup *group)
{
  g_autoptr(GPtrArray) chain = g_ptr_array_new ();
  for (GraftGroup *g = group; g != NULL; g = g->parent)
    g_ptr_array_insert (chain, 0, g);
  GString *stack = g_string_new (NULL);
  for (guint i = 0; i < chain->len; i++)
    {
      GraftGroup *g = g_ptr_array_index (chain, i);
      g_autofree char *key = g_strdup_printf ("L__self__%s%s", *g->path ? "_" : "", g->path);
      g_strdelimit (key, ".", '_');
      g_string_append_printf (stack, "%s%s,%s,%s", stack->len ? ";" : "", key, g->path,
                              g->class_name ? g->class_name : "torch.nn.modules.module.Module");
      if (*g->path && !g_hash_table_contains (c->module_seen, g->path))
        {
          g_hash_table_add (c->module_seen, g->path);
          g_ptr_array_add (c->module_paths, g->path);
        }
    }
  return g_string_free (stack, FALSE);
}

static JsonObject *
node_object (Converter *c, GraftNode *source, const char *target, const char *name)
{
  JsonObject *node = json_object_new ();
  json_object_set_string_member (node, "target", target);
  json_object_set_array_member (node, "inputs", json_array_new ());
  json_object_set_array_member (node, "outputs", json_array_new ());
  JsonObject *metadata = json_object_new ();
  if (source->group != NULL)
    {
      g_autofree char *stack = module_stack (c, source->group);
      json_object_set_string_member (metadata, "nn_module_stack", stack);
    }
  if (source->python_source != NULL)
    {
      const char *colon = strrchr (source->python_source, ':');
      g_autofree char *file = colon ? g_strndup (source->python_source, colon - source->python_source)
                                    : g_strdup (source->python_source);
      g_autofree char *trace = g_strdup_printf ("File \"%s\", line %s, in forward", file, colon ? colon + 1 : "0");
      json_object_set_string_member (metadata, "stack_trace", trace);
    }
  json_object_set_object_member (node, "metadata", metadata);
  json_object_set_null_member (node, "is_hop_single_tensor_return");
  json_object_set_string_member (node, "name", name);
  json_array_add_object_element (c->nodes, node);
  return node;
}

static void
add_input (JsonObject *node, const char *name, JsonNode *argument, gboolean keyword)
{
  JsonObject *named = json_object_new ();
  json_object_set_string_member (named, "name", name);
  json_object_set_member (named, "arg", argument);
  json_object_set_int_member (named, "kind", keyword ? 2 : 1);
  json_array_add_object_element (json_object_get_array_member (node, "inputs"), named);
}

/* ------------------------------------------------------------------ sizes (SymInts) */

/* Int-valued values that only depend on sizes: x.size(d), the traced
 * NumToTensor/Int around it, and int arithmetic on those. */
static const char *const size_passthrough_ops[] = {
  "prim::NumToTensor", "aten::Int", "aten::ScalarImplicit", "aten::IntImplicit",
};
static const struct {
  const char *op;
  const char *python;     /* the _operator function torch.export writes */
} size_arithmetic[] = {
  { "aten::add", "add" }, { "aten::sub", "sub" }, { "aten::mul", "mul" }, { "aten::floordiv", "floordiv" },
  { "aten::floor_divide", "floordiv" }, { "aten::__floordiv__", "floordiv" }, { "aten::remainder", "mod" },
  { "aten::div", NULL }, { "aten::neg", "neg" }, { "aten::rsub", NULL },
};

static gboolean
op_in (const char *op, const char *const *ops, guint n)
{
  for (guint i = 0; i < n; i++)
    if (strcmp (op, ops[i]) == 0)
      return TRUE;
  return FALSE;
}

/* A value the runs saw as one number: its value in each run. */
static gboolean
scalar_values (Converter *c, GraftValue *value, double *values)
{
  for (guint run = 0; run < c->runs->len; run++)
    {
      Observation *seen = observation_in (c, run, value);
      if (seen == NULL || !seen->has_scalar || seen->rank != 0 || seen->is_sequence)
        return FALSE;
      values[run] = seen->scalar;
    }
  return TRUE;
}

/* A 0-d integer initializer (a traced graph's captured size constant). */
static gboolean
is_scalar_constant (GraftValue *value, gint64 *out)
{
  GraftTensor *tensor = value ? value->initializer : NULL;
  if (tensor == NULL || graft_tensor_get_numel (tensor) != 1 || tensor->rank != 0 || !graft_dtype_is_integer (tensor->dtype))
    return FALSE;
  *out = (gint64) graft_tensor_get_element_as_double (tensor, 0);
  return TRUE;
}

static gboolean
is_size_value (Converter *c, GraftValue *value)
{
  Arg *arg = value ? g_hash_table_lookup (c->args, value) : NULL;
  gint64 ignored;
  return (arg != NULL && (arg->kind == ARG_SYM || (arg->kind == ARG_CONST && arg->constant->type == GRAFT_ATTR_INT)))
         || is_scalar_constant (value, &ignored);
}

static Arg *
size_operand (Converter *c, GraftValue *value)
{
  gint64 constant;
  if (is_scalar_constant (value, &constant))
    return int_arg (c, constant);
  return g_hash_table_lookup (c->args, value);
}

/* A SymInt node output named after value, declared with its expression. */
static const char *
declare_sym (Converter *c, GraftNode *node, GraftValue *value, const char *hint_name)
{
  double values[64];
  gint64 ints[64];
  g_assert (c->runs->len <= G_N_ELEMENTS (values));
  if (!scalar_values (c, value, values))
    {
      refuse_node (c, node, "Graft's runtime did not compute the size %s", value->name);
      return NULL;
    }
  for (guint run = 0; run < c->runs->len; run++)
    ints[run] = (gint64) values[run];
  gboolean fixed;
  g_autofree char *expr = size_expression (c, ints, &fixed);
  if (expr == NULL)
    {
      refuse_node (c, node, "the size %s is not a multiple of the dynamic dims plus a constant", value->name);
      return NULL;
    }
  const char *name = unique_name (c, hint_name);
  json_object_set_member (c->sym_int_values, name, symint_node (expr, ints[0]));
  return name;
}

static JsonNode *
size_argument (const Arg *arg)
{
  if (arg->kind == ARG_SYM)
    return sym_int_argument (arg->name);
  return union_of ("as_int", int_node (arg->constant->i));
}

/* x.size() of a scripted module: a list of its dims, each a constant or,
 * where it follows a dynamic dim, a sym_size node. */
static gboolean
convert_size_list (Converter *c, GraftNode *node)
{
  GraftValue *tensor_value = node->inputs->pdata[0];
  Arg *tensor = g_hash_table_lookup (c->args, tensor_value);
  Observation *seen[64];
  if (tensor != NULL && tensor->kind == ARG_UNCONVERTED)
    return refuse_unconverted (c, tensor);
  if (tensor == NULL || tensor->kind != ARG_TENSOR)
    return refuse_node (c, node, "it takes the size of no tensor Graft converted");
  if (!all_observations (c, node, tensor_value, seen))
    return FALSE;
  Arg *list = arg_new (c, ARG_LIST, NULL);
  list->items = g_ptr_array_new ();
  for (int d = 0; d < seen[0]->rank; d++)
    {
      gint64 values[64];
      for (guint run = 0; run < c->runs->len; run++)
        values[run] = seen[run]->rank == seen[0]->rank ? seen[run]->dims[d] : -1;
      gboolean fixed;
      g_autofree char *expr = size_expression (c, values, &fixed);
      if (fixed)
        {
          g_ptr_array_add (list->items, int_arg (c, values[0]));
          continue;
        }
      if (expr == NULL)
        return refuse_node (c, node, "dim %d of %s is not a multiple of the dynamic dims plus a constant", d,
                            tensor_value->name);
      const char *name = unique_name (c, "sym_size_int");
      json_object_set_member (c->sym_int_values, name, symint_node (expr, values[0]));
      JsonObject *json = node_object (c, node, "torch.ops.aten.sym_size.int", name);
      add_input (json, "self", tensor_argument (tensor->name), FALSE);
      add_input (json, "dim", union_of ("as_int", int_node (d)), FALSE);
      json_array_add_element (json_object_get_array_member (json, "outputs"), sym_int_argument (name));
      g_ptr_array_add (list->items, arg_new (c, ARG_SYM, name));
    }
  g_hash_table_insert (c->args, node->outputs->pdata[0], list);
  return TRUE;
}

/* Handles node if it computes a size; *handled FALSE if it does not. */
static gboolean
convert_size_node (Converter *c, GraftNode *node, gboolean *handled)
{
  *handled = FALSE;
  if (strcmp (node->op, "aten::size") == 0 && node->inputs->len == 1 && node->attributes->len == 0
      && node->outputs->len == 1)
    {
      *handled = TRUE;
      return convert_size_list (c, node);
    }
  GraftValue *output = node->outputs->len == 1 ? g_ptr_array_index (node->outputs, 0) : NULL;
  double values[64];
  if (output == NULL || !scalar_values (c, output, values))
    return TRUE;
  gboolean is_size = strcmp (node->op, "aten::size") == 0 && node->inputs->len == 1;
  gboolean is_passthrough = op_in (node->op, size_passthrough_ops, G_N_ELEMENTS (size_passthrough_ops))
                            && node->inputs->len == 1 && is_size_value (c, node->inputs->pdata[0]);
  gint arithmetic = -1;
  for (guint i = 0; !is_size && !is_passthrough && i < G_N_ELEMENTS (size_arithmetic); i++)
    if (strcmp (node->op, size_arithmetic[i].op) == 0 && node->inputs->len >= 1)
      {
        gboolean all_sizes = TRUE;
        for (guint k = 0; k < node->inputs->len; k++)
          all_sizes &= is_size_value (c, node->inputs->pdata[k]);
        for (guint k = 0; k < node->attributes->len; k++)
          {
            GraftAttribute *attribute = g_ptr_array_index (node->attributes, k);
            all_sizes &= attribute->type == GRAFT_ATTR_INT || strcmp (attribute->name, "rounding_mode") == 0;
          }
        if (all_sizes)
          arithmetic = i;
      }
  if (!is_size && !is_passthrough && arithmetic < 0)
    return TRUE;
  *handled = TRUE;

  gboolean constant = TRUE, integral = TRUE;
  for (guint run = 0; run < c->runs->len; run++)
    {
      constant &= values[run] == values[0];
      integral &= values[run] == (double) (gint64) values[run];
    }
  /* What does not move with the dynamic dims is a constant, as torch
   * specialises it. */
  if (constant)
    {
      GraftAttribute *attribute = integral ? graft_attribute_new_int ("", (gint64) values[0])
                                           : graft_attribute_new_float ("", values[0]);
      g_ptr_array_add (c->owned_attributes, attribute);
      g_hash_table_insert (c->args, output, const_arg (c, attribute));
      return TRUE;
    }
  if (!integral)
    return refuse_node (c, node, "it computes a fraction of a dynamic size, which torch.export's SymInts cannot hold");
  if (is_passthrough)
    {
      g_hash_table_insert (c->args, output, g_hash_table_lookup (c->args, node->inputs->pdata[0]));
      return TRUE;
    }
  if (is_size)
    {
      GraftAttribute *dim = graft_node_get_attribute (node, "arg1");
      Arg *tensor = g_hash_table_lookup (c->args, node->inputs->pdata[0]);
      if (dim == NULL || dim->type != GRAFT_ATTR_INT || tensor == NULL || tensor->kind != ARG_TENSOR)
        return refuse_node (c, node, "the size of a dynamic dim is taken of no tensor Graft could place");
      const char *name = declare_sym (c, node, output, "sym_size_int");
      if (name == NULL)
        return FALSE;
      JsonObject *json = node_object (c, node, "torch.ops.aten.sym_size.int", name);
      add_input (json, "self", tensor_argument (tensor->name), FALSE);
      add_input (json, "dim", union_of ("as_int", int_node (dim->i)), FALSE);
      json_array_add_element (json_object_get_array_member (json, "outputs"), sym_int_argument (name));
      g_hash_table_insert (c->args, output, arg_new (c, ARG_SYM, name));
      return TRUE;
    }
  const char *python = size_arithmetic[arithmetic].python;
  /* x.size(0) // 2 as traced: div(…, rounding_mode="trunc"), which is
   * floor division on sizes (never negative). */
  GraftAttribute *rounding = graft_node_get_attribute (node, "rounding_mode");
  g_autofree char *rounding_mode = rounding ? graft_attribute_dup_string (rounding) : NULL;
  if (python == NULL && (g_strcmp0 (rounding_mode, "trunc") == 0 || g_strcmp0 (rounding_mode, "floor") == 0))
    python = "floordiv";
  if (python == NULL)
    return refuse_node (c, node, "it divides a dynamic size into a float, which torch.export's SymInts cannot hold");
  const char *name = declare_sym (c, node, output, python);
  if (name == NULL)
    return FALSE;
  g_autofree char *target = g_strdup_printf ("_operator.%s", python);
  JsonObject *json = node_object (c, node, target, name);
  /* Operands in call order: inputs and "argN" constants interleaved. */
  guint n_operands = node->inputs->len + node->attributes->len, next_input = 0;
  for (guint k = 0; k < n_operands && k < 2; k++)
    {
      g_autofree char *attribute_name = g_strdup_printf ("arg%u", k);
      GraftAttribute *attribute = graft_node_get_attribute (node, attribute_name);
      Arg *operand = attribute ? const_arg (c, attribute) : size_operand (c, node->inputs->pdata[next_input++]);
      if (operand == NULL)
        return refuse_node (c, node, "an operand of a dynamic size is no size Graft could place");
      add_input (json, k == 0 ? "a" : "b", size_argument (operand), FALSE);
    }
  json_array_add_element (json_object_get_array_member (json, "outputs"), sym_int_argument (name));
  g_hash_table_insert (c->args, output, arg_new (c, ARG_SYM, name));
  return TRUE;
}

/* ------------------------------------------------------------------ calls */

/* The arguments of a call in order: inputs and "argN" constants
 * interleaved by position, then keyword constants. */
typedef struct {
  GPtrArray *args;        /* Arg* */
  GPtrArray *keywords;    /* const char* or NULL, parallel */
} Call;

static void
call_clear (Call *call)
{
  g_clear_pointer (&call->args, g_ptr_array_unref);
  g_clear_pointer (&call->keywords, g_ptr_array_unref);
}

static gboolean
is_keyword_only (const char *op, const char *name)
{
  GPtrArray *overloads = graft_aten_schema_list (op);
  for (guint i = 0; overloads != NULL && i < overloads->len; i++)
    {
      const GraftAtenSchema *schema = g_ptr_array_index (overloads, i);
      for (guint a = 0; a < schema->n_arguments; a++)
        if (schema->arguments[a].kwarg_only && strcmp (schema->arguments[a].name, name) == 0)
          return TRUE;
    }
  return FALSE;
}

static gboolean
gather_call (Converter *c, GraftNode *node, Call *call)
{
  call->args = g_ptr_array_new ();
  call->keywords = g_ptr_array_new ();
  guint n_positional = node->inputs->len, next_input = 0;
  for (guint k = 0; k < node->attributes->len; k++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, k);
      n_positional += graft_aten_argument_position (attribute->name) >= 0;
    }
  for (guint k = 0; k < n_positional; k++)
    {
      g_autofree char *attribute_name = g_strdup_printf ("arg%u", k);
      GraftAttribute *attribute = graft_node_get_attribute (node, attribute_name);
      Arg *arg;
      if (attribute != NULL)
        arg = const_arg (c, attribute);
      else
        {
          /* TorchScript passes values by position, but for keyword-only
           * arguments (arange's device=); the names the builder records
           * beside the others are the schema's, for the labels. */
          GraftValue *value = next_input < node->inputs->len ? node->inputs->pdata[next_input] : NULL;
          const char *keyword = graft_node_get_input_argument_name (node, next_input);
          if (keyword != NULL && !is_keyword_only (node->op, keyword))
            keyword = NULL;
          next_input++;
          arg = value ? g_hash_table_lookup (c->args, value) : NULL;
          if (arg == NULL)
            return refuse_node (c, node, "its argument %s comes from no value Graft converted",
                                value ? value->name : "(none)");
          if (arg->kind == ARG_DATA)
            return refuse_node (c, node, "its argument %s is a number read out of tensor values (by %s), which "
                                "torch.export cannot specialise", value->name, arg->name);
          if (arg->kind == ARG_UNCONVERTED)
            return refuse_unconverted (c, arg);
          g_ptr_array_add (call->args, arg);
          g_ptr_array_add (call->keywords, (gpointer) keyword);
          continue;
        }
      g_ptr_array_add (call->args, arg);
      g_ptr_array_add (call->keywords, NULL);
    }
  for (guint k = 0; k < node->attributes->len; k++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, k);
      if (graft_aten_argument_position (attribute->name) >= 0)
        continue;
      g_ptr_array_add (call->args, const_arg (c, attribute));
      g_ptr_array_add (call->keywords, attribute->name);
    }
  return TRUE;
}

static char *
strip_optional (const char *type)
{
  if (g_str_has_prefix (type, "Optional[") && g_str_has_suffix (type, "]"))
    return g_strndup (type + strlen ("Optional["), strlen (type) - strlen ("Optional[") - 1);
  return g_strdup (type);
}

static gboolean
is_list_of_kind (const Arg *arg, ArgKind kind)
{
  if (arg->kind != ARG_LIST)
    return FALSE;
  for (guint i = 0; i < arg->items->len; i++)
    {
      const Arg *item = g_ptr_array_index (arg->items, i);
      if (item->kind != kind && !(kind == ARG_SYM && item->kind == ARG_CONST && item->constant->type == GRAFT_ATTR_INT))
        return FALSE;
    }
  return TRUE;
}

/* How well arg fits a schema type: 2 exactly, 1 by conversion, 0 not. */
static int
argument_fit (const Arg *arg, const char *schema_type, const char *name)
{
  g_autofree char *type = strip_optional (schema_type);
  gboolean optional = strcmp (type, schema_type) != 0;
  GraftAttrType constant = arg->kind == ARG_CONST ? arg->constant->type : GRAFT_ATTR_UNDEFINED;
  if (constant == GRAFT_ATTR_NONE)
    return optional ? 2 : 0;
  if (strcmp (type, "Tensor") == 0)
    return arg->kind == ARG_TENSOR ? 2 : 0;
  if (strcmp (type, "int") == 0)
    {
      /* dtype, layout, memory_format: ints in TorchScript's schema */
      if (arg->kind == ARG_SYM || constant == GRAFT_ATTR_INT)
        return 2;
      return constant == GRAFT_ATTR_BOOL ? 1 : 0;
    }
  if (strcmp (type, "float") == 0)
    return constant == GRAFT_ATTR_FLOAT ? 2 : constant == GRAFT_ATTR_INT || arg->kind == ARG_SYM ? 1 : 0;
  if (strcmp (type, "number") == 0)
    return constant == GRAFT_ATTR_FLOAT || constant == GRAFT_ATTR_INT || constant == GRAFT_ATTR_BOOL
           || arg->kind == ARG_SYM ? 2 : 0;
  if (strcmp (type, "bool") == 0)
    return constant == GRAFT_ATTR_BOOL ? 2 : constant == GRAFT_ATTR_INT ? 1 : 0;
  if (strcmp (type, "str") == 0)
    return constant == GRAFT_ATTR_STRING && strcmp (name, "device") != 0 ? 2 : 0;
  if (strcmp (type, "Device") == 0)
    return constant == GRAFT_ATTR_STRING ? 2 : 0;
  if (strcmp (type, "List[int]") == 0)
    return constant == GRAFT_ATTR_INTS ? 2 : constant == GRAFT_ATTR_INT ? 1 : is_list_of_kind (arg, ARG_SYM) ? 2 : 0;
  if (strcmp (type, "List[float]") == 0)
    return constant == GRAFT_ATTR_FLOATS ? 2 : 0;
  if (strcmp (type, "List[bool]") == 0)
    return constant == GRAFT_ATTR_INTS ? 1 : 0;
  if (strcmp (type, "List[Tensor]") == 0)
    return is_list_of_kind (arg, ARG_TENSOR) ? 2 : 0;
  if (strcmp (type, "List[Optional[Tensor]]") == 0)
    {
      if (arg->kind != ARG_LIST)
        return 0;
      for (guint i = 0; i < arg->items->len; i++)
        {
          const Arg *item = g_ptr_array_index (arg->items, i);
          if (item->kind != ARG_TENSOR && !(item->kind == ARG_CONST && item->constant->type == GRAFT_ATTR_NONE))
            return 0;
        }
      return 2;
    }
  return 0;
}

/* The overload of node's op that takes the call best, every argument
 * fitting its type (graft_aten_schema_find only tells tensors from
 * constants: aten::to has six overloads of three arguments). */
static const GraftAtenSchema *
find_overload (GraftNode *node, const Call *call, guint *argument_index)
{
  GPtrArray *overloads = graft_aten_schema_list (node->op);
  const GraftAtenSchema *best = NULL;
  int best_score = -1;
  g_autofree guint *index = g_new0 (guint, MAX (call->args->len, 1));
  for (guint i = 0; overloads != NULL && i < overloads->len; i++)
    {
      const GraftAtenSchema *schema = g_ptr_array_index (overloads, i);
      g_autofree gboolean *given = g_new0 (gboolean, MAX (schema->n_arguments, 1));
      int score = 0;
      guint positional = 0;
      for (guint k = 0; k < call->args->len && score >= 0; k++)
        {
          const char *keyword = g_ptr_array_index (call->keywords, k);
          int j = -1;
          if (keyword != NULL)
            {
              for (guint a = 0; a < schema->n_arguments; a++)
                if (strcmp (schema->arguments[a].name, keyword) == 0)
                  j = a;
            }
          else
            j = positional < schema->n_arguments ? (int) positional++ : -1;
          int fit = j >= 0 && !given[j] ? argument_fit (g_ptr_array_index (call->args, k), schema->arguments[j].type,
                                                        schema->arguments[j].name) : 0;
          if (fit == 0)
            score = -1;
          else
            {
              given[j] = TRUE;
              index[k] = j;
              score += fit;
            }
        }
      for (guint a = 0; a < schema->n_arguments && score >= 0; a++)
        if (!given[a] && !schema->arguments[a].has_default)
          score = -1;
      /* Ties go to the default overload, then to the fewest arguments. */
      if (score > best_score || (score == best_score && score >= 0 &&
                                 ((*schema->overload == '\0' && *best->overload != '\0') ||
                                  schema->n_arguments < best->n_arguments)))
        {
          best = schema;
          best_score = score;
          memcpy (argument_index, index, sizeof (guint) * call->args->len);
        }
    }
  return best_score >= 0 ? best : NULL;
}

static JsonNode *
serialize_argument (const Arg *arg, const GraftAtenArgument *schema)
{
  g_autofree char *type = strip_optional (schema->type);
  const GraftAttribute *constant = arg->kind == ARG_CONST ? arg->constant : NULL;
  if (constant && constant->type == GRAFT_ATTR_NONE)
    return union_of ("as_none", json_node_init_boolean (json_node_alloc (), TRUE));
  if (strcmp (type, "Tensor") == 0)
    return tensor_argument (arg->name);
  if (arg->kind == ARG_SYM)
    return sym_int_argument (arg->name);
  if (strcmp (type, "int") == 0)
    {
      gint64 value = constant->i;
      if (strcmp (schema->name, "dtype") == 0)
        return union_of ("as_scalar_type", int_node (_graft_exported_c10_scalar_type_to_schema (value)));
      if (strcmp (schema->name, "layout") == 0)
        return union_of ("as_layout", int_node (value == 0 ? 7 : value));   /* torch.strided */
      if (strcmp (schema->name, "memory_format") == 0)
        return union_of ("as_memory_format", int_node (value + 1));
      return union_of ("as_int", int_node (value));
    }
  if (strcmp (type, "float") == 0)
    return union_of ("as_float", json_node_init_double (json_node_alloc (),
                                                        constant->type == GRAFT_ATTR_FLOAT ? constant->f : constant->i));
  if (strcmp (type, "number") == 0)
    {
      if (constant->type == GRAFT_ATTR_FLOAT)
        return union_of ("as_float", json_node_init_double (json_node_alloc (), constant->f));
      if (constant->type == GRAFT_ATTR_BOOL)
        return union_of ("as_bool", json_node_init_boolean (json_node_alloc (), constant->i != 0));
      return union_of ("as_int", int_node (constant->i));
    }
  if (strcmp (type, "bool") == 0)
    return union_of ("as_bool", json_node_init_boolean (json_node_alloc (), constant->i != 0));
  if (strcmp (type, "str") == 0 || strcmp (type, "Device") == 0)
    {
      g_autofree char *text = graft_attribute_dup_string (constant);
      if (strcmp (type, "str") == 0)
        return union_of ("as_string", json_node_init_string (json_node_alloc (), text));
      JsonObject *device = json_object_new ();
      const char *colon = strchr (text, ':');
      g_autofree char *device_type = colon ? g_strndup (text, colon - text) : g_strdup (text);
      json_object_set_string_member (device, "type", device_type);
      if (colon)
        json_object_set_int_member (device, "index", g_ascii_strtoll (colon + 1, NULL, 10));
      else
        json_object_set_null_member (device, "index");
      return union_of ("as_device", json_node_init_object (json_node_alloc (), device));
    }
  JsonArray *items = json_array_new ();
  if (strcmp (type, "List[int]") == 0 && arg->kind == ARG_LIST)
    {
      gboolean symbolic = FALSE;
      for (guint i = 0; i < arg->items->len; i++)
        symbolic |= ((Arg *) g_ptr_array_index (arg->items, i))->kind == ARG_SYM;
      for (guint i = 0; i < arg->items->len; i++)
        {
          const Arg *item = g_ptr_array_index (arg->items, i);
          if (symbolic)
            json_array_add_element (items, item->kind == ARG_SYM ? named_node ("as_name", item->name)
                                                                  : union_of ("as_int", int_node (item->constant->i)));
          else
            json_array_add_int_element (items, item->constant->i);
        }
      return union_of (symbolic ? "as_sym_ints" : "as_ints", json_node_init_array (json_node_alloc (), items));
    }
  if (strcmp (type, "List[int]") == 0 || strcmp (type, "List[bool]") == 0)
    {
      gboolean bools = strcmp (type, "List[bool]") == 0;
      if (constant->type == GRAFT_ATTR_INT)
        json_array_add_int_element (items, constant->i);
      for (guint i = 0; constant->type == GRAFT_ATTR_INTS && i < constant->ints->len; i++)
        {
          gint64 value = g_array_index (constant->ints, gint64, i);
          if (bools)
            json_array_add_boolean_element (items, value != 0);
          else
            json_array_add_int_element (items, value);
        }
      return union_of (bools ? "as_bools" : "as_ints", json_node_init_array (json_node_alloc (), items));
    }
  if (strcmp (type, "List[float]") == 0)
    {
      for (guint i = 0; i < constant->floats->len; i++)
        json_array_add_double_element (items, g_array_index (constant->floats, double, i));
      return union_of ("as_floats", json_node_init_array (json_node_alloc (), items));
    }
  if (strcmp (type, "List[Tensor]") == 0)
    {
      for (guint i = 0; i < arg->items->len; i++)
        json_array_add_element (items, named_node ("name", ((Arg *) g_ptr_array_index (arg->items, i))->name));
      return union_of ("as_tensors", json_node_init_array (json_node_alloc (), items));
    }
  /* List[Optional[Tensor]] */
  for (guint i = 0; i < arg->items->len; i++)
    {
      const Arg *item = g_ptr_array_index (arg->items, i);
      json_array_add_element (items, item->kind == ARG_TENSOR
                                     ? tensor_argument (item->name)
                                     : union_of ("as_none", json_node_init_boolean (json_node_alloc (), TRUE)));
    }
  return union_of ("as_optional_tensors", json_node_init_array (json_node_alloc (), items));
}

/* prim::ListConstruct / TupleConstruct: a list argument of later calls. */
static gboolean
convert_list (Converter *c, GraftNode *node)
{
  Call call = { 0 };
  gboolean ok = gather_call (c, node, &call);
  if (ok)
    {
      Arg *list = arg_new (c, ARG_LIST, NULL);
      list->items = g_ptr_array_ref (call.args);
      list->is_tuple = strcmp (node->op, "prim::TupleConstruct") == 0;
      g_hash_table_insert (c->args, node->outputs->pdata[0], list);
    }
  call_clear (&call);
  return ok;
}

static gboolean
convert_unpack (Converter *c, GraftNode *node)
{
  Arg *list = node->inputs->len == 1 ? g_hash_table_lookup (c->args, node->inputs->pdata[0]) : NULL;
  if (list != NULL && list->kind == ARG_UNCONVERTED)
    return refuse_unconverted (c, list);
  /* a constant tuple of ints (a module's shape attribute) */
  if (list != NULL && list->kind == ARG_CONST && list->constant->type == GRAFT_ATTR_INTS
      && list->constant->ints->len == node->outputs->len)
    {
      for (guint i = 0; i < node->outputs->len; i++)
        if (node->outputs->pdata[i] != NULL)
          g_hash_table_insert (c->args, node->outputs->pdata[i],
                               int_arg (c, g_array_index (list->constant->ints, gint64, i)));
      return TRUE;
    }
  if (list == NULL || list->kind != ARG_LIST || list->items->len != node->outputs->len)
    return refuse_node (c, node, "it unpacks a list Graft could not follow");
  for (guint i = 0; i < node->outputs->len; i++)
    if (node->outputs->pdata[i] != NULL)
      g_hash_table_insert (c->args, node->outputs->pdata[i], g_ptr_array_index (list->items, i));
  return TRUE;
}

/* In-place ops on a weight or an input are mutations torch.export
 * records in the signature; Graft does not write those. */
static gboolean
mutates_state (Converter *c, GraftNode *node)
{
  const char *op = node->op_type;
  gsize len = strlen (op);
  if (len < 2 || op[len - 1] != '_' || op[len - 2] == '_' || node->inputs->len == 0)
    return FALSE;
  GraftValue *target = node->inputs->pdata[0];
  return target != NULL && (target->initializer != NULL || target->is_graph_input);
}


static const GraftAttribute *observed_constant (Converter *c, GraftValue *value);

/* Whether value follows the program's inputs (else it is computed from
 * weights and constants alone, the same whatever the inputs). */
static gboolean
depends_on_inputs (Converter *c, GraftValue *value, guint depth)
{
  if (value == NULL || value->initializer != NULL)
    return FALSE;
  if (value->producer == NULL || depth > 64)
    return TRUE;
  gpointer known;
  if (g_hash_table_lookup_extended (c->input_dependent, value, NULL, &known))
    return GPOINTER_TO_INT (known);
  gboolean depends = FALSE;
  for (guint i = 0; i < value->producer->inputs->len && !depends; i++)
    depends = depends_on_inputs (c, value->producer->inputs->pdata[i], depth + 1);
  g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (value->producer);
  depends |= bodies->len > 0;
  g_hash_table_insert (c->input_dependent, value, GINT_TO_POINTER (depends));
  return depends;
}

/* Output i of node with what each run saw of it, or NULL with the error. */
static GraftValue *
observed_output (Converter *c, GraftNode *node, guint i, Observation **seen)
{
  GraftValue *output = node->outputs->pdata[i];
  if (output == NULL)
    {
      refuse_node (c, node, "output %u is missing", i);
      return NULL;
    }
  return all_observations (c, node, output, seen) ? output : NULL;
}

static gboolean
convert_call (Converter *c, GraftNode *node)
{
  Call call = { 0 };
  /* A number read out of a constant tensor (YOLO's stride) is that
   * number, as torch.export specialises it. */
  if (graft_node_reads_tensor_data (node) && node->outputs->len == 1 &&
      node->outputs->pdata[0] != NULL && node->inputs->len == 1 && !depends_on_inputs (c, node->inputs->pdata[0], 0))
    {
      const GraftAttribute *constant = observed_constant (c, node->outputs->pdata[0]);
      if (constant != NULL)
        {
          g_hash_table_insert (c->args, node->outputs->pdata[0], const_arg (c, constant));
          return TRUE;
        }
    }
  /* Refused where it is used: the If it decides is what to name. */
  if (graft_node_reads_tensor_data (node))
    {
      for (guint i = 0; i < node->outputs->len; i++)
        if (node->outputs->pdata[i] != NULL)
          g_hash_table_insert (c->args, node->outputs->pdata[i], arg_new (c, ARG_DATA, node->name));
      return TRUE;
    }
  if (!gather_call (c, node, &call))
    return FALSE;
  g_autofree guint *index = g_new0 (guint, MAX (call.args->len, 1));
  const GraftAtenSchema *schema = g_str_has_prefix (node->op, "aten::") ? find_overload (node, &call, index) : NULL;
  if (schema == NULL)
    {
      call_clear (&call);
      return refuse_node (c, node, "torch has no aten overload of %s for these arguments", node->op);
    }
  if (mutates_state (c, node))
    {
      call_clear (&call);
      return refuse_node (c, node, "it updates %s in place, which torch.export records as a mutation Graft does not "
                          "write", ((GraftValue *) node->inputs->pdata[0])->name);
    }
  /* FX names a node of one tensor after it; a node of several (or of a
   * list) has its own name beside its outputs' getitem nodes. */
  GraftValue *first = node->outputs->len > 0 ? node->outputs->pdata[0] : NULL;
  Observation *first_seen = first ? observation_in (c, 0, first) : NULL;
  gboolean single = node->outputs->len == 1 && first_seen != NULL && !first_seen->is_sequence;
  const char *name = unique_name (c, single ? first->name : node->op_type);
  g_autofree char *target = g_strdup_printf ("torch.ops.aten.%s.%s", node->op_type,
                                             *schema->overload ? schema->overload : "default");
  JsonObject *json = node_object (c, node, target, name);
  /* In schema order, as torch serializes them. */
  for (guint a = 0; a < schema->n_arguments; a++)
    for (guint k = 0; k < call.args->len; k++)
      if (index[k] == a)
        add_input (json, schema->arguments[a].name, serialize_argument (call.args->pdata[k], &schema->arguments[a]),
                   schema->arguments[a].kwarg_only);
  call_clear (&call);

  JsonArray *outputs = json_object_get_array_member (json, "outputs");
  for (guint i = 0; i < node->outputs->len; i++)
    {
      Observation *seen[64];
      GraftValue *output = observed_output (c, node, i, seen);
      if (output == NULL)
        return FALSE;
      const char *output_name = single ? name : unique_name (c, output->name);
      if (seen[0]->is_sequence)
        {
          /* Tensor[]: items named name_0…, which unpacking and list
           * arguments refer to. */
          JsonArray *items = json_array_new ();
          Arg *list = arg_new (c, ARG_LIST, NULL);
          list->items = g_ptr_array_new ();
          for (guint k = 0; k < seen[0]->items->len; k++)
            {
              Observation *item_seen[64];
              for (guint run = 0; run < c->runs->len; run++)
                {
                  if (seen[run]->items == NULL || seen[run]->items->len != seen[0]->items->len)
                    {
                      json_array_unref (items);
                      return refuse_node (c, node, "it returns a different number of tensors at other sizes");
                    }
                  item_seen[run] = g_ptr_array_index (seen[run]->items, k);
                }
              g_autofree char *item_hint = g_strdup_printf ("%s_%u", output_name, k);
              const char *item_name = unique_name (c, item_hint);
              if (!declare_tensor (c, node, item_name, item_seen, FALSE))
                {
                  json_array_unref (items);
                  return FALSE;
                }
              json_array_add_element (items, named_node ("name", item_name));
              g_ptr_array_add (list->items, arg_new (c, ARG_TENSOR, item_name));
            }
          json_array_add_element (outputs, union_of ("as_tensors", json_node_init_array (json_node_alloc (), items)));
          g_hash_table_insert (c->args, output, list);
          continue;
        }
      if (seen[0]->rank < 0)
        return refuse_node (c, node, "output %s is not a tensor", output->name);
      if (!declare_tensor (c, node, output_name, seen, FALSE))
        return FALSE;
      json_array_add_element (outputs, tensor_argument (output_name));
      g_hash_table_insert (c->args, output, arg_new (c, ARG_TENSOR, output_name));
    }
  return TRUE;
}

/* Ops that make a tensor from numbers alone: calls, not numbers to fold. */
static const char *const tensor_factories[] = {
  "aten::arange", "aten::zeros", "aten::ones", "aten::full", "aten::empty", "aten::tensor", "aten::scalar_tensor",
  "aten::linspace", "aten::logspace", "aten::eye", "aten::as_tensor", "aten::rand", "aten::randn", "aten::randint",
  "aten::empty_strided", "aten::randperm", "aten::normal", "aten::tril_indices", "aten::triu_indices",
};
/* Ops that ask a tensor a question whose answer is a number or a list. */
static const char *const tensor_queries[] = {
  "aten::dim", "aten::len", "aten::numel", "prim::dtype", "prim::device", "aten::is_floating_point", "prim::layout",
  "aten::size", "aten::__is__", "aten::__isnot__", "prim::is_cuda", "aten::is_contiguous",
};

static gboolean
takes_tensors (Converter *c, GraftNode *node)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      Arg *arg = node->inputs->pdata[i] ? g_hash_table_lookup (c->args, node->inputs->pdata[i]) : NULL;
      if (arg == NULL || arg->kind == ARG_TENSOR)
        return TRUE;
      for (guint k = 0; arg->kind == ARG_LIST && k < arg->items->len; k++)
        if (((Arg *) g_ptr_array_index (arg->items, k))->kind == ARG_TENSOR)
          return TRUE;
    }
  return FALSE;
}

/* A number or list of numbers the runs saw the same each time: a
 * constant of the observed type, or NULL. */
static const GraftAttribute *
observed_constant (Converter *c, GraftValue *value)
{
  Observation *base = observation_in (c, 0, value);
  if (base == NULL || base->is_sequence || base->rank < 0 || base->rank > 1 || base->dtype == GRAFT_DTYPE_STRING)
    return NULL;
  if (base->rank == 1 && (!graft_dtype_is_integer (base->dtype) || base->dims[0] > 64))
    return NULL;
  for (guint run = 0; run < c->runs->len; run++)
    {
      Observation *seen = observation_in (c, run, value);
      if (seen == NULL || seen->rank != base->rank || (base->rank == 1 && seen->dims[0] != base->dims[0]))
        return NULL;
      if (base->rank == 0 && (!seen->has_scalar || seen->scalar != base->scalar))
        return NULL;
    }
  GraftAttribute *constant;
  if (base->rank == 1)
    {
      /* The list's items are not kept by the observation: only an empty
       * or a one-item list is known. */
      if (base->dims[0] > 1 || (base->dims[0] == 1 && !base->has_scalar))
        return NULL;
      gint64 item = (gint64) base->scalar;
      constant = graft_attribute_new_ints ("", &item, (guint) base->dims[0]);
    }
  else if (base->dtype == GRAFT_DTYPE_BOOL)
    {
      constant = graft_attribute_new ("", GRAFT_ATTR_BOOL);
      constant->i = base->scalar != 0;
    }
  else if (graft_dtype_is_integer (base->dtype))
    constant = graft_attribute_new_int ("", (gint64) base->scalar);
  else
    constant = graft_attribute_new_float ("", base->scalar);
  g_ptr_array_add (c->owned_attributes, constant);
  return constant;
}

/* Numbers a scripted module computes about its inputs (x.dim() == 4,
 * len(x.size()), self.training): what the runs saw, when it never
 * changes, as torch.export specialises it. *handled FALSE for other
 * nodes. */
static gboolean
convert_number_node (Converter *c, GraftNode *node, gboolean *handled)
{
  *handled = FALSE;
  gboolean query = op_in (node->op, tensor_queries, G_N_ELEMENTS (tensor_queries));
  if (node->outputs->len == 0 || op_in (node->op, tensor_factories, G_N_ELEMENTS (tensor_factories)) ||
      (!query && takes_tensors (c, node)))
    return TRUE;
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *output = node->outputs->pdata[i];
      Observation *base = output ? observation_in (c, 0, output) : NULL;
      /* a list only from a question asked of a tensor; else it is one */
      if (base == NULL || base->is_sequence || base->rank > (query ? 1 : 0))
        return TRUE;
    }
  *handled = TRUE;
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *output = node->outputs->pdata[i];
      const GraftAttribute *constant = observed_constant (c, output);
      if (constant == NULL)
        return refuse_node (c, node, "%s is a number that changes with the inputs (or a list of them), which Graft "
                            "does not write as SymInts yet", output->name);
      g_hash_table_insert (c->args, output, const_arg (c, constant));
    }
  return TRUE;
}

static gboolean convert_node (Converter *c, GraftNode *node);
static GraftDType input_dtype (Converter *c, GraftValue *input);


/* The tensor and sym-int names a graph's nodes read, in first-use order,
 * into names (a nested cond's graphs list what they read as operands). */
static void
collect_read_names (JsonNode *argument, GPtrArray *names, GHashTable *seen)
{
  if (argument == NULL)
    return;
  if (JSON_NODE_HOLDS_ARRAY (argument))
    {
      JsonArray *items = json_node_get_array (argument);
      for (guint i = 0; i < json_array_get_length (items); i++)
        collect_read_names (json_array_get_element (items, i), names, seen);
      return;
    }
  if (!JSON_NODE_HOLDS_OBJECT (argument))
    return;
  JsonObject *object = json_node_get_object (argument);
  if (json_object_has_member (object, "as_graph"))
    return;
  const char *keys[] = { "as_tensor", "as_sym_int" };
  for (guint k = 0; k < G_N_ELEMENTS (keys); k++)
    if (json_object_has_member (object, keys[k]))
      {
        JsonNode *inner = json_object_get_member (object, keys[k]);
        if (JSON_NODE_HOLDS_OBJECT (inner))
          {
            JsonObject *named = json_node_get_object (inner);
            const char *name = json_object_has_member (named, "name") ? json_object_get_string_member (named, "name")
                               : json_object_has_member (named, "as_name")
                               ? json_object_get_string_member (named, "as_name") : NULL;
            if (name != NULL && g_hash_table_add (seen, (gpointer) name))
              g_ptr_array_add (names, (gpointer) name);
            return;
          }
      }
  GList *members = json_object_get_values (object);
  for (GList *l = members; l; l = l->next)
    collect_read_names (l->data, names, seen);
  g_list_free (members);
}

/* node's first n outputs as tensors of json (a higher-order op's), named
 * after them and declared with what the runs saw. */
static gboolean
declare_outputs (Converter *c, GraftNode *node, JsonObject *json, guint n)
{
  JsonArray *outputs = json_object_get_array_member (json, "outputs");
  for (guint i = 0; i < n; i++)
    {
      Observation *seen[64];
      GraftValue *output = observed_output (c, node, i, seen);
      if (output == NULL)
        return FALSE;
      const char *output_name = unique_name (c, output->name);
      if (!declare_tensor (c, node, output_name, seen, FALSE))
        return FALSE;
      json_array_add_element (outputs, tensor_argument (output_name));
      g_hash_table_insert (c->args, output, arg_new (c, ARG_TENSOR, output_name));
    }
  return TRUE;
}

/* The members of a subgraph's JSON that torch's schema has and Graft
 * leaves empty. */
static void
finish_subgraph (JsonObject *graph, gboolean single_tensor_return)
{
  json_object_set_object_member (graph, "sym_bool_values", json_object_new ());
  json_object_set_object_member (graph, "sym_float_values", json_object_new ());
  json_object_set_object_member (graph, "custom_obj_values", json_object_new ());
  json_object_set_boolean_member (graph, "is_single_tensor_return", single_tensor_return);
}

/* name = aten.clone(source), for a subgraph's nodes (transfer full): a
 * subgraph may not hand back its input. */
static JsonObject *
clone_node (Converter *c, GraftNode *node, const char *source, const char *name)
{
  JsonObject *clone = node_object (c, node, "torch.ops.aten.clone.default", name);
  add_input (clone, "self", tensor_argument (source), FALSE);
  json_array_add_element (json_object_get_array_member (clone, "outputs"), tensor_argument (name));
  /* node_object added it to the graph being written: take it back */
  json_object_ref (clone);
  json_array_remove_element (c->nodes, json_array_get_length (c->nodes) - 1);
  return clone;
}

/* The tensor a number was read out of (aten::Bool(t) deciding an If or
 * a while), or NULL. */
static Arg *
read_tensor (Converter *c, GraftValue *number)
{
  GraftNode *reader = number ? number->producer : NULL;
  Arg *tensor = reader && reader->inputs->len == 1 ? g_hash_table_lookup (c->args, reader->inputs->pdata[0]) : NULL;
  return tensor != NULL && tensor->kind == ARG_TENSOR ? tensor : NULL;
}

/* A torch.cond branch or a while_loop body: branch's nodes converted into
 * a graph of their own, returning branch's outputs (tensors; the first,
 * when condition_first, a number read out of a tensor: that tensor) and
 * reading what it uses from outside as operands; formal (transfer full,
 * may be NULL) describes the tensors the caller bound the branch's own
 * inputs to. Returns the graph's JSON (names read from outside appended
 * to operands) and its outputs' names, or NULL with the error. */
static JsonObject *
convert_subgraph (Converter *c, GraftNode *node, GraftGraph *branch, JsonObject *formal, gboolean condition_first,
                  GPtrArray *operands, GPtrArray *outputs)
{
  JsonArray *outer_nodes = c->nodes;
  JsonObject *outer_tensors = c->tensor_values, *outer_syms = c->sym_int_values;
  c->nodes = json_array_new ();
  c->tensor_values = formal ? formal : json_object_new ();
  c->sym_int_values = json_object_new ();
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < branch->nodes->len; i++)
    ok = convert_node (c, g_ptr_array_index (branch->nodes, i));
  JsonArray *nodes = c->nodes;
  JsonObject *tensors = c->tensor_values, *syms = c->sym_int_values;
  c->nodes = outer_nodes;
  c->tensor_values = outer_tensors;
  c->sym_int_values = outer_syms;
  JsonObject *graph = json_object_new ();
  json_object_set_array_member (graph, "nodes", nodes);
  json_object_set_object_member (graph, "tensor_values", tensors);
  json_object_set_object_member (graph, "sym_int_values", syms);
  if (!ok)
    {
      json_object_unref (graph);
      return NULL;
    }
  /* what it returns: tensors; one it does not compute is copied, as a
   * branch may not hand back its operand */
  JsonArray *graph_outputs = json_array_new ();
  json_object_set_array_member (graph, "outputs", graph_outputs);
  for (guint i = 0; i < branch->outputs->len; i++)
    {
      Arg *arg = g_hash_table_lookup (c->args, branch->outputs->pdata[i]);
      if (i == 0 && condition_first && arg != NULL && arg->kind == ARG_DATA)
        arg = read_tensor (c, branch->outputs->pdata[0]);
      if (arg != NULL && arg->kind == ARG_UNCONVERTED)
        {
          refuse_unconverted (c, arg);
          json_object_unref (graph);
          return NULL;
        }
      if (arg == NULL || arg->kind != ARG_TENSOR)
        {
          json_object_unref (graph);
          refuse_node (c, node, "a branch returns %s, where torch.cond and while_loop return tensors",
                       arg == NULL ? "a value Graft did not convert" : "something other than a tensor");
          return NULL;
        }
      const char *name = arg->name;
      if (!json_object_has_member (tensors, name))
        {
          name = unique_name (c, "clone");
          json_array_add_object_element (nodes, clone_node (c, node, arg->name, name));
          if (json_object_has_member (c->tensor_values, arg->name))
            json_object_set_member (tensors, name,
                                    json_node_copy (json_object_get_member (c->tensor_values, arg->name)));
        }
      json_array_add_element (graph_outputs, tensor_argument (name));
      g_ptr_array_add (outputs, (gpointer) name);
    }
  /* what it reads from outside: the cond's operands, in one order for
   * both branches */
  g_autoptr(GPtrArray) read = g_ptr_array_new ();
  g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < json_array_get_length (nodes); i++)
    collect_read_names (json_object_get_member (json_array_get_object_element (nodes, i), "inputs"), read, seen);
  for (guint i = 0; i < json_array_get_length (graph_outputs); i++)
    collect_read_names (json_array_get_element (graph_outputs, i), read, seen);
  for (guint i = 0; i < read->len; i++)
    {
      const char *name = read->pdata[i];
      if (json_object_has_member (tensors, name) || json_object_has_member (syms, name))
        continue;
      if (!json_object_has_member (c->tensor_values, name))
        {
          json_object_unref (graph);
          refuse_node (c, node, "a branch reads %s, a size computed outside it, which Graft does not pass to "
                       "torch.cond", name);
          return NULL;
        }
      json_object_set_member (tensors, name, json_node_copy (json_object_get_member (c->tensor_values, name)));
      gboolean known = FALSE;
      for (guint k = 0; k < operands->len && !known; k++)
        known = strcmp (operands->pdata[k], name) == 0;
      if (!known)
        g_ptr_array_add (operands, (gpointer) name);
    }
  return graph;
}

/* if on tensor values (if x.sum() > 0:), where both branches return
 * tensors of the same shapes: torch.cond, both branches graphs of their
 * own that read what they use from outside as operands. */
static gboolean
convert_cond (Converter *c, GraftNode *node, GraftGraph *then_branch, GraftGraph *else_branch)
{
  Arg *pred = read_tensor (c, node->inputs->pdata[0]);
  if (pred == NULL)
    return refuse_node (c, node, "it branches on a number read out of a tensor Graft did not convert; Graft does not "
                        "write torch.cond for it");
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *output = node->outputs->pdata[i];
      for (guint b = 0; output != NULL && b < 2; b++)
        {
          GraftGraph *branch = b ? else_branch : then_branch;
          GraftValue *result = i < branch->outputs->len ? branch->outputs->pdata[i] : NULL;
          for (guint run = 0; run < c->runs->len; run++)
            {
              Observation *seen = observation_in (c, run, output);
              Observation *other = result ? observation_in (c, run, result) : NULL;
              if (seen == NULL || other == NULL || seen->is_sequence || other->is_sequence || seen->rank < 0)
                return refuse_node (c, node, "Graft's runs could not measure what its %s branch returns, which "
                                    "torch.cond needs", b ? "else" : "then");
              if (seen->rank != other->rank || seen->dtype != other->dtype ||
                  memcmp (seen->dims, other->dims, sizeof (gint64) * seen->rank) != 0)
                return refuse_node (c, node, "its branches return tensors of different shapes or types, which "
                                    "torch.cond does not allow");
            }
        }
    }
  g_autoptr(GPtrArray) operands = g_ptr_array_new ();
  g_autoptr(GPtrArray) then_outputs = g_ptr_array_new ();
  g_autoptr(GPtrArray) else_outputs = g_ptr_array_new ();
  JsonObject *then_graph = convert_subgraph (c, node, then_branch, NULL, FALSE, operands, then_outputs);
  if (then_graph == NULL)
    return FALSE;
  JsonObject *else_graph = convert_subgraph (c, node, else_branch, NULL, FALSE, operands, else_outputs);
  if (else_graph == NULL)
    {
      json_object_unref (then_graph);
      return FALSE;
    }
  /* every operand is an input of both graphs, in one order */
  JsonObject *graphs[] = { then_graph, else_graph };
  for (guint b = 0; b < 2; b++)
    {
      JsonArray *inputs = json_array_new ();
      JsonObject *tensors = json_object_get_object_member (graphs[b], "tensor_values");
      for (guint k = 0; k < operands->len; k++)
        {
          json_array_add_element (inputs, tensor_argument (operands->pdata[k]));
          if (!json_object_has_member (tensors, operands->pdata[k]))
            json_object_set_member (tensors, operands->pdata[k],
                                    json_node_copy (json_object_get_member (c->tensor_values, operands->pdata[k])));
        }
      json_object_set_array_member (graphs[b], "inputs", inputs);
      finish_subgraph (graphs[b], FALSE);
    }
  const char *name = unique_name (c, "cond");
  JsonObject *json = node_object (c, node, "torch.ops.higher_order.cond", name);
  add_input (json, "", tensor_argument (pred->name), FALSE);
  const char *graph_names[] = { "true_graph", "false_graph" };
  for (guint b = 0; b < 2; b++)
    {
      JsonObject *argument = json_object_new ();
      json_object_set_string_member (argument, "name", unique_name (c, graph_names[b]));
      json_object_set_object_member (argument, "graph", graphs[b]);
      add_input (json, "", union_of ("as_graph", json_node_init_object (json_node_alloc (), argument)), FALSE);
    }
  JsonArray *operand_names = json_array_new ();
  for (guint k = 0; k < operands->len; k++)
    json_array_add_element (operand_names, named_node ("name", operands->pdata[k]));
  add_input (json, "", union_of ("as_tensors", json_node_init_array (json_node_alloc (), operand_names)), FALSE);
  return declare_outputs (c, node, json, node->outputs->len);
}

/* A prim::If whose condition is the same in every run (self.training,
 * x.dim() != 4): its branch inline, as torch.export specialises it. */
static gboolean
convert_if (Converter *c, GraftNode *node)
{
  GraftAttribute *then_attribute = graft_node_get_attribute (node, "then_branch");
  GraftAttribute *else_attribute = graft_node_get_attribute (node, "else_branch");
  GraftAttribute *cond_attribute = graft_node_get_attribute (node, "cond");
  if (then_attribute == NULL || else_attribute == NULL)
    return refuse_node (c, node, "an If without both branches");
  GraftGraph *branch = graft_if_get_fixed_branch (node);
  if (branch == NULL && cond_attribute != NULL)
    branch = cond_attribute->i ? then_attribute->g : else_attribute->g;
  /* Only a condition made of constants and sizes (never of tensor data,
   * which other inputs could flip whatever the runs saw) is folded. */
  if (branch == NULL && node->inputs->len > 0)
    {
      Arg *cond = g_hash_table_lookup (c->args, node->inputs->pdata[0]);
      if (cond != NULL && cond->kind == ARG_CONST
          && (cond->constant->type == GRAFT_ATTR_BOOL || cond->constant->type == GRAFT_ATTR_INT))
        branch = cond->constant->i ? then_attribute->g : else_attribute->g;
    }
  if (branch == NULL)
    {
      Arg *cond = node->inputs->len ? g_hash_table_lookup (c->args, node->inputs->pdata[0]) : NULL;
      if (cond != NULL && cond->kind == ARG_UNCONVERTED)
        return refuse_unconverted (c, cond);
      if (cond != NULL && cond->kind == ARG_DATA)
        return convert_cond (c, node, then_attribute->g, else_attribute->g);
      return refuse_node (c, node, "it branches on %s%s%s%s, which depends on the input's values; Graft does not "
                          "write torch.cond yet", node->inputs->len ? ((GraftValue *) node->inputs->pdata[0])->name : "?",
                          cond && cond->kind == ARG_DATA ? " (read out of tensor values by " : "",
                          cond && cond->kind == ARG_DATA ? cond->name : "", cond && cond->kind == ARG_DATA ? ")" : "");
    }
  for (guint i = 0; i < branch->nodes->len; i++)
    if (!convert_node (c, g_ptr_array_index (branch->nodes, i)))
      return FALSE;
  if (branch->outputs->len != node->outputs->len)
    return refuse_node (c, node, "its branch returns %u values for %u outputs", branch->outputs->len,
                        node->outputs->len);
  for (guint i = 0; i < node->outputs->len; i++)
    {
      Arg *arg = g_hash_table_lookup (c->args, branch->outputs->pdata[i]);
      if (arg == NULL)
        return refuse_node (c, node, "output %u of its branch comes from no value Graft converted", i);
      if (node->outputs->pdata[i] != NULL)
        g_hash_table_insert (c->args, node->outputs->pdata[i], arg);
    }
  return TRUE;
}

/* list[index] of a list Graft follows (a split's tensors, x.size()). */
static gboolean
convert_getitem (Converter *c, GraftNode *node, gboolean *handled)
{
  *handled = FALSE;
  Arg *list = node->inputs->len >= 1 ? g_hash_table_lookup (c->args, node->inputs->pdata[0]) : NULL;
  if (list == NULL || list->kind != ARG_LIST || node->outputs->len != 1)
    return TRUE;
  Call call = { 0 };
  if (!gather_call (c, node, &call))
    return FALSE;
  Arg *index = call.args->len == 2 ? g_ptr_array_index (call.args, 1) : NULL;
  call_clear (&call);
  if (index == NULL || index->kind != ARG_CONST || index->constant->type != GRAFT_ATTR_INT)
    return TRUE;
  gint64 i = index->constant->i < 0 ? index->constant->i + list->items->len : index->constant->i;
  if (i < 0 || i >= list->items->len)
    return refuse_node (c, node, "index %" G_GINT64_FORMAT " is outside its list of %u", index->constant->i,
                        list->items->len);
  *handled = TRUE;
  g_hash_table_insert (c->args, node->outputs->pdata[0], g_ptr_array_index (list->items, i));
  return TRUE;
}

/* ------------------------------------------------------------------ dicts */

static Arg *
dict_new (Converter *c)
{
  Arg *dict = arg_new (c, ARG_DICT, NULL);
  dict->items = g_ptr_array_new ();
  return dict;
}

static Arg *
string_arg (Converter *c, const char *text)
{
  GraftAttribute *constant = graft_attribute_new_string ("", text);
  g_ptr_array_add (c->owned_attributes, constant);
  return const_arg (c, constant);
}

static gboolean
is_string_arg (const Arg *arg)
{
  return arg != NULL && arg->kind == ARG_CONST && arg->constant->type == GRAFT_ATTR_STRING;
}

/* The index of key's value in dict's items, or -1. */
static int
dict_find (const Arg *dict, const Arg *key)
{
  g_autofree char *wanted = graft_attribute_dup_string (key->constant);
  for (guint i = 0; i + 1 < dict->items->len; i += 2)
    {
      g_autofree char *text = graft_attribute_dup_string (((Arg *) dict->items->pdata[i])->constant);
      if (g_strcmp0 (text, wanted) == 0)
        return (int) i + 1;
    }
  return -1;
}

/* A module's dict attribute: IntermediateLayerGetter's return_layers
 * (strings, alternating in dict_items) or a Dict[str, Tensor] that
 * torch.jit.save kept filled (LeViT's attention_bias_cache: keys in
 * dict_keys, tensors as the node's inputs). Every read of the attribute
 * sees what the program put into it before, as in TorchScript. */
static Arg *
dict_attribute (Converter *c, GraftNode *node)
{
  GraftModuleDict module_dict;
  if (!graft_module_dict_read (node, &module_dict))
    return NULL;
  GraftAttribute *name = graft_node_get_attribute (node, "name");
  g_autofree char *path = name ? graft_attribute_dup_string (name) : g_strdup (node->name);
  Arg *dict = g_hash_table_lookup (c->dict_attributes, path);
  if (dict != NULL)
    return dict;
  dict = dict_new (c);
  for (guint i = 0; i < module_dict.n_entries; i++)
    {
      g_autofree char *key = graft_module_dict_dup_key (&module_dict, i);
      g_ptr_array_add (dict->items, string_arg (c, key));
      Arg *value;
      if (module_dict.values_are_inputs)
        value = g_hash_table_lookup (c->args, node->inputs->pdata[i]);
      else
        {
          g_autofree char *text = graft_module_dict_dup_string_value (&module_dict, i);
          value = string_arg (c, text);
        }
      if (value == NULL)
        return NULL;
      g_ptr_array_add (dict->items, value);
    }
  g_hash_table_insert (c->dict_attributes, g_steal_pointer (&path), dict);
  return dict;
}

/* Dict operations on a dict Graft follows: made by dict(), read from a
 * module attribute, filled by d[k] = v in straight-line code (loops are
 * refused). *handled FALSE for other nodes. */
static gboolean
convert_dict_node (Converter *c, GraftNode *node, gboolean *handled)
{
  *handled = FALSE;
  GraftValue *output = node->outputs->len == 1 ? node->outputs->pdata[0] : NULL;
  if (strcmp (node->op, "prim::GetAttr") == 0)
    {
      Arg *dict = output ? dict_attribute (c, node) : NULL;
      if (dict != NULL)
        {
          *handled = TRUE;
          g_hash_table_insert (c->args, output, dict);
        }
      return TRUE;
    }
  if (strcmp (node->op, "aten::dict") == 0 && node->inputs->len == 0 && output != NULL)
    {
      *handled = TRUE;
      g_hash_table_insert (c->args, output, dict_new (c));
      return TRUE;
    }
  /* str(x.device): the program runs on the CPU */
  if (strcmp (node->op, "aten::str") == 0 && node->inputs->len == 1 && output != NULL)
    {
      Arg *text = g_hash_table_lookup (c->args, node->inputs->pdata[0]);
      if (is_string_arg (text))
        {
          *handled = TRUE;
          g_hash_table_insert (c->args, output, text);
        }
      return TRUE;
    }
  gboolean contains = strcmp (node->op, "aten::__contains__") == 0;
  gboolean get = strcmp (node->op, "aten::__getitem__") == 0;
  gboolean set = strcmp (node->op, "aten::_set_item") == 0 || strcmp (node->op, "aten::__setitem__") == 0;
  if (!contains && !get && !set)
    return TRUE;
  Arg *dict = node->inputs->len >= 1 && node->inputs->pdata[0] ? g_hash_table_lookup (c->args, node->inputs->pdata[0])
                                                                : NULL;
  if (dict == NULL || dict->kind != ARG_DICT)
    return TRUE;
  *handled = TRUE;
  Call call = { 0 };
  if (!gather_call (c, node, &call))
    return FALSE;
  Arg *key = call.args->len >= 2 ? g_ptr_array_index (call.args, 1) : NULL;
  Arg *value = set && call.args->len == 3 ? g_ptr_array_index (call.args, 2) : NULL;
  call_clear (&call);
  if (!is_string_arg (key))
    return refuse_node (c, node, "its dict key is not a string Graft knows before the program runs");
  int at = dict_find (dict, key);
  if (contains)
    {
      GraftAttribute *answer = graft_attribute_new ("", GRAFT_ATTR_BOOL);
      answer->i = at >= 0;
      g_ptr_array_add (c->owned_attributes, answer);
      if (output != NULL)
        g_hash_table_insert (c->args, output, const_arg (c, answer));
      return TRUE;
    }
  if (get)
    {
      if (at < 0)
        {
          g_autofree char *text = graft_attribute_dup_string (key->constant);
          return refuse_node (c, node, "the dict has no key '%s' when the program reads it", text);
        }
      if (output != NULL)
        g_hash_table_insert (c->args, output, g_ptr_array_index (dict->items, at));
      return TRUE;
    }
  if (value == NULL)
    return refuse_node (c, node, "it sets a dict item without a value");
  if (at >= 0)
    dict->items->pdata[at] = value;
  else
    {
      g_ptr_array_add (dict->items, key);
      g_ptr_array_add (dict->items, value);
    }
  return TRUE;
}

/* l[i] = v on a list Graft follows (Swin's shift_size[0] = 0 on a copy):
 * the list changes where it is, as Python's does. */
static gboolean
convert_list_set_item (Converter *c, GraftNode *node, Arg *list)
{
  Call call = { 0 };
  if (!gather_call (c, node, &call))
    return FALSE;
  Arg *index = call.args->len == 3 ? g_ptr_array_index (call.args, 1) : NULL;
  Arg *value = call.args->len == 3 ? g_ptr_array_index (call.args, 2) : NULL;
  call_clear (&call);
  if (index == NULL || index->kind != ARG_CONST || index->constant->type != GRAFT_ATTR_INT)
    return refuse_node (c, node, "it sets a list item at an index Graft does not know before the program runs");
  gint64 at = index->constant->i < 0 ? index->constant->i + list->items->len : index->constant->i;
  if (at < 0 || at >= list->items->len)
    return refuse_node (c, node, "index %" G_GINT64_FORMAT " is outside its list of %u", index->constant->i,
                        list->items->len);
  list->items->pdata[at] = value;
  if (node->outputs->len == 1 && node->outputs->pdata[0] != NULL)
    g_hash_table_insert (c->args, node->outputs->pdata[0], list);
  return TRUE;
}

/* A list Graft follows, or a constant list of ints as one (a module's
 * window_size), for the ops that copy it or, bound to the value from then
 * on (in_place), change it. */
static Arg *
list_arg (Converter *c, GraftValue *value, gboolean in_place)
{
  Arg *arg = value ? g_hash_table_lookup (c->args, value) : NULL;
  if (arg != NULL && arg->kind == ARG_CONST && arg->constant->type == GRAFT_ATTR_INTS)
    {
      Arg *list = arg_new (c, ARG_LIST, NULL);
      list->items = g_ptr_array_new ();
      for (guint k = 0; k < arg->constant->ints->len; k++)
        g_ptr_array_add (list->items, int_arg (c, g_array_index (arg->constant->ints, gint64, k)));
      if (in_place)
        g_hash_table_insert (c->args, value, list);
      return list;
    }
  return arg != NULL && arg->kind == ARG_LIST ? arg : NULL;
}

/* list[start:end:step], list(l) and l.copy() of a list Graft follows (a
 * size's x.shape[-2:]): a new list of the same items; l[i] = v. *handled
 * FALSE for other nodes. */
static gboolean
convert_list_slice (Converter *c, GraftNode *node, gboolean *handled)
{
  *handled = FALSE;
  gboolean slice = strcmp (node->op, "aten::slice") == 0;
  gboolean copy = strcmp (node->op, "aten::list") == 0 || strcmp (node->op, "aten::copy") == 0;
  gboolean set = strcmp (node->op, "aten::_set_item") == 0 || strcmp (node->op, "aten::__setitem__") == 0;
  if ((!slice && !copy && !set) || node->inputs->len == 0)
    return TRUE;
  Arg *list = list_arg (c, node->inputs->pdata[0], set);
  if (list == NULL || (node->outputs->len != 1 && !set))
    return TRUE;
  if (set)
    {
      *handled = TRUE;
      return convert_list_set_item (c, node, list);
    }
  Call call = { 0 };
  if (!gather_call (c, node, &call))
    return FALSE;
  /* Python's slice: start, end, step, each None or an int */
  gint64 n = list->items->len, bounds[3] = { 0, 0, 1 };
  gboolean given[3] = { FALSE, FALSE, FALSE }, known = TRUE;
  for (guint k = 1; k < call.args->len && k < 4; k++)
    {
      Arg *bound = g_ptr_array_index (call.args, k);
      if (bound->kind == ARG_CONST && bound->constant->type == GRAFT_ATTR_NONE)
        continue;
      if (bound->kind != ARG_CONST || bound->constant->type != GRAFT_ATTR_INT)
        known = FALSE;
      else
        {
          bounds[k - 1] = bound->constant->i;
          given[k - 1] = TRUE;
        }
    }
  gboolean extra = call.args->len > (copy ? 1 : 4);
  call_clear (&call);
  gint64 step = bounds[2];
  if (!known || extra || step == 0)
    return refuse_node (c, node, "it slices a list by bounds Graft does not know before the program runs");
  *handled = TRUE;
  /* clamped to [0, n] going forward, to [-1, n - 1] going back */
  gint64 low = step > 0 ? 0 : -1, high = step > 0 ? n : n - 1;
  gint64 start = given[0] ? CLAMP (bounds[0] < 0 ? bounds[0] + n : bounds[0], low, high) : step > 0 ? 0 : n - 1;
  gint64 end = given[1] ? CLAMP (bounds[1] < 0 ? bounds[1] + n : bounds[1], low, high) : step > 0 ? n : -1;
  Arg *part = arg_new (c, ARG_LIST, NULL);
  part->items = g_ptr_array_new ();
  part->is_tuple = list->is_tuple;
  for (gint64 i = start; step > 0 ? i < end : i > end; i += step)
    g_ptr_array_add (part->items, g_ptr_array_index (list->items, i));
  g_hash_table_insert (c->args, node->outputs->pdata[0], part);
  return TRUE;
}

/* Unrolled iterations at most, over all loops of a program. */
#define MAX_UNROLLED 4096

/* A bound the program knows before it runs: an int constant. */
static gboolean
loop_bound (Converter *c, GraftNode *node, const char *attribute_name, guint *next_input, gint64 *value)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, attribute_name);
  if (attribute != NULL)
    {
      *value = attribute->i;
      return TRUE;
    }
  if (*next_input >= node->inputs->len)
    return FALSE;
  Arg *arg = g_hash_table_lookup (c->args, node->inputs->pdata[(*next_input)++]);
  if (arg != NULL && arg->kind == ARG_CONST && (arg->constant->type == GRAFT_ATTR_INT || arg->constant->type == GRAFT_ATTR_BOOL))
    {
      *value = arg->constant->i;
      return TRUE;
    }
  return FALSE;
}

static void
bind_body_input (Converter *c, GraftValue *input, Arg *arg, GraftValue *source)
{
  g_hash_table_insert (c->args, input, arg);
  if (source == NULL)
    return;
  ObservedAs *alias = g_new (ObservedAs, 1);
  *alias = observed_as (c, source);
  g_ptr_array_add (c->owned_aliases, alias);
  g_hash_table_insert (c->observed_as, input, alias);
}

/* The graph JSON's tensor_values entry for name, copied from the graph
 * being written (the outer one while a subgraph's nodes are converted). */
static void
copy_tensor_meta (JsonObject *to, JsonObject *from, const char *from_name, const char *to_name)
{
  if (json_object_has_member (from, from_name))
    json_object_set_member (to, to_name, json_node_copy (json_object_get_member (from, from_name)));
}

/* Whether every time the runs computed value it had the shape and type
 * seen of initial: while_loop's carried values keep theirs. */
static gboolean
same_every_time (Converter *c, GraftValue *value, GraftValue *initial, gboolean *entered)
{
  for (guint run = 0; run < c->runs->len; run++)
    {
      Run *r = g_ptr_array_index (c->runs, run);
      GPtrArray *times = g_hash_table_lookup (r->seen, value);
      Observation *first = observation_in (c, run, initial);
      if (times == NULL || times->len == 0)
        {
          *entered = FALSE;
          return FALSE;
        }
      for (guint t = 0; t < times->len; t++)
        {
          Observation *seen = g_ptr_array_index (times, t);
          if (first == NULL || seen->is_sequence || seen->rank != first->rank || seen->dtype != first->dtype ||
              memcmp (seen->dims, first->dims, sizeof (gint64) * MAX (seen->rank, 0)) != 0)
            return FALSE;
        }
    }
  return TRUE;
}

/* while t.sum() < 10: … (a loop without a counter, whose condition is
 * read out of a tensor): torch.ops.higher_order.while_loop carrying the
 * condition's tensor beside the loop's values, as PyTorch writes a
 * while_loop whose body computes its own condition — the cond graph
 * hands the carried condition back, the body returns the next one. The
 * body is a graph of its own that reads weights and other outer tensors
 * as additional inputs. */
static gboolean
convert_while_loop (Converter *c, GraftNode *node, GraftValue *cond_value, guint first_carried, GraftGraph *body)
{
  guint n_carried = node->inputs->len - first_carried;
  if (body->inputs->len != 1 + n_carried || body->outputs->len != 1 + n_carried)
    return refuse_node (c, node, "its body takes %u values and returns %u for %u carried", body->inputs->len,
                        body->outputs->len, n_carried);
  if (((GraftValue *) body->inputs->pdata[0])->consumers->len > 0)
    return refuse_node (c, node, "its condition follows the input's values and its body reads the iteration count, "
                        "which torch.export's while_loop does not carry");
  Arg *pred = read_tensor (c, cond_value);
  if (pred == NULL)
    return refuse_node (c, node, "its condition follows the input's values but is read out of no tensor Graft "
                        "converted, which torch.export's while_loop needs");
  JsonObject *formal = json_object_new ();
  const char *cond_name = unique_name (c, "cond_in");
  copy_tensor_meta (formal, c->tensor_values, pred->name, cond_name);
  g_autoptr(GPtrArray) carried_names = g_ptr_array_new ();
  g_autoptr(GPtrArray) initial_names = g_ptr_array_new ();
  for (guint k = 0; k < n_carried; k++)
    {
      GraftValue *initial = node->inputs->pdata[first_carried + k];
      GraftValue *input = body->inputs->pdata[1 + k];
      Arg *arg = initial ? g_hash_table_lookup (c->args, initial) : NULL;
      gboolean entered = TRUE;
      if (arg == NULL || arg->kind != ARG_TENSOR)
        {
          json_object_unref (formal);
          return refuse_node (c, node, "it carries %s, which is no tensor (while_loop carries tensors)",
                              initial ? initial->name : "a missing value");
        }
      if (!same_every_time (c, body->outputs->pdata[1 + k], initial, &entered))
        {
          json_object_unref (formal);
          return refuse_node (c, node, entered ? "%s changes shape or type between iterations, which while_loop does "
                              "not allow" : "Graft's runs never entered the loop, so the sizes of %s in it are not "
                              "known", initial->name);
        }
      const char *name = unique_name (c, input->name);
      copy_tensor_meta (formal, c->tensor_values, arg->name, name);
      bind_body_input (c, input, arg_new (c, ARG_TENSOR, name), initial);
      g_ptr_array_add (carried_names, (gpointer) name);
      g_ptr_array_add (initial_names, arg->name);
    }
  g_autoptr(GPtrArray) operands = g_ptr_array_new ();
  g_autoptr(GPtrArray) results = g_ptr_array_new ();
  JsonObject *body_graph = convert_subgraph (c, node, body, formal, TRUE, operands, results);
  if (body_graph == NULL)
    return FALSE;
  /* both graphs take (condition, carried…, additional…) */
  JsonObject *body_tensors = json_object_get_object_member (body_graph, "tensor_values");
  JsonArray *inputs[2] = { json_array_new (), json_array_new () };
  JsonObject *cond_tensors = json_object_new ();
  for (guint g = 0; g < 2; g++)
    {
      json_array_add_element (inputs[g], tensor_argument (cond_name));
      for (guint k = 0; k < carried_names->len; k++)
        json_array_add_element (inputs[g], tensor_argument (carried_names->pdata[k]));
      for (guint k = 0; k < operands->len; k++)
        json_array_add_element (inputs[g], tensor_argument (operands->pdata[k]));
    }
  copy_tensor_meta (cond_tensors, body_tensors, cond_name, cond_name);
  for (guint k = 0; k < carried_names->len; k++)
    copy_tensor_meta (cond_tensors, body_tensors, carried_names->pdata[k], carried_names->pdata[k]);
  for (guint k = 0; k < operands->len; k++)
    copy_tensor_meta (cond_tensors, body_tensors, operands->pdata[k], operands->pdata[k]);
  /* the cond graph: the carried condition, copied (a graph may not hand
   * back its input) */
  JsonObject *cond_graph = json_object_new ();
  JsonArray *cond_nodes = json_array_new ();
  const char *clone_name = unique_name (c, "clone");
  json_array_add_object_element (cond_nodes, clone_node (c, node, cond_name, clone_name));
  copy_tensor_meta (cond_tensors, body_tensors, cond_name, clone_name);
  JsonArray *cond_outputs = json_array_new ();
  json_array_add_element (cond_outputs, tensor_argument (clone_name));
  json_object_set_array_member (cond_graph, "nodes", cond_nodes);
  json_object_set_array_member (cond_graph, "outputs", cond_outputs);
  json_object_set_object_member (cond_graph, "tensor_values", cond_tensors);
  json_object_set_object_member (cond_graph, "sym_int_values", json_object_new ());
  JsonObject *graphs[] = { cond_graph, body_graph };
  for (guint g = 0; g < 2; g++)
    {
      json_object_set_array_member (graphs[g], "inputs", inputs[g]);
      /* cond_fn returns the bool tensor itself, not a tuple of it */
      finish_subgraph (graphs[g], g == 0);
    }
  for (guint k = 0; k < operands->len; k++)
    copy_tensor_meta (body_tensors, c->tensor_values, operands->pdata[k], operands->pdata[k]);

  const char *name = unique_name (c, "while_loop");
  JsonObject *json = node_object (c, node, "torch.ops.higher_order.while_loop", name);
  const char *graph_names[] = { "while_loop_cond_graph", "while_loop_body_graph" };
  for (guint g = 0; g < 2; g++)
    {
      JsonObject *argument = json_object_new ();
      json_object_set_string_member (argument, "name", unique_name (c, graph_names[g]));
      json_object_set_object_member (argument, "graph", graphs[g]);
      add_input (json, "", union_of ("as_graph", json_node_init_object (json_node_alloc (), argument)), FALSE);
    }
  JsonArray *carried = json_array_new (), *additional = json_array_new ();
  json_array_add_element (carried, named_node ("name", pred->name));
  for (guint k = 0; k < initial_names->len; k++)
    json_array_add_element (carried, named_node ("name", initial_names->pdata[k]));
  for (guint k = 0; k < operands->len; k++)
    json_array_add_element (additional, named_node ("name", operands->pdata[k]));
  add_input (json, "", union_of ("as_tensors", json_node_init_array (json_node_alloc (), carried)), FALSE);
  add_input (json, "", union_of ("as_tensors", json_node_init_array (json_node_alloc (), additional)), FALSE);
  JsonArray *outputs = json_object_get_array_member (json, "outputs");
  const char *final_cond = unique_name (c, "cond_out");
  copy_tensor_meta (c->tensor_values, c->tensor_values, pred->name, final_cond);
  json_array_add_element (outputs, tensor_argument (final_cond));
  return declare_outputs (c, node, json, MIN (node->outputs->len, n_carried));
}

/* for i in range(n) with n known before the program runs: the body once
 * per iteration, as torch.export traces a Python loop. A loop whose trip
 * count or condition follows the inputs is refused (while_loop is not
 * written). */
static gboolean
convert_loop (Converter *c, GraftNode *node)
{
  GraftAttribute *body_attribute = graft_node_get_attribute (node, "body");
  GraftGraph *body = body_attribute ? body_attribute->g : NULL;
  guint next_input = 0;
  gint64 trips, cond;
  if (body == NULL)
    return refuse_node (c, node, "a loop without a body");
  if (!loop_bound (c, node, "max_trip_count", &next_input, &trips))
    return refuse_node (c, node, "its trip count follows the input's sizes or values (torch.export's while_loop is "
                        "not written yet)");
  if (!loop_bound (c, node, "cond", &next_input, &cond))
    return trips == G_MAXINT64 && next_input > 0
           ? convert_while_loop (c, node, node->inputs->pdata[next_input - 1], next_input, body)
           : refuse_node (c, node, "its condition follows the input's values and it also counts its iterations, "
                          "which torch.export's while_loop does not express");
  guint n_carried = node->inputs->len - next_input;
  if (body->inputs->len != 1 + n_carried || body->outputs->len != 1 + n_carried)
    return refuse_node (c, node, "its body takes %u values and returns %u for %u carried", body->inputs->len,
                        body->outputs->len, n_carried);
  g_autofree Arg **carried = g_new0 (Arg *, n_carried + 1);
  g_autofree GraftValue **sources = g_new0 (GraftValue *, n_carried + 1);
  for (guint i = 0; i < n_carried; i++)
    {
      sources[i] = node->inputs->pdata[next_input + i];
      carried[i] = sources[i] ? g_hash_table_lookup (c->args, sources[i]) : NULL;
      if (carried[i] == NULL)
        return refuse_node (c, node, "its carried value %u comes from no value Graft converted", i);
    }
  for (gint64 trip = 0; trip < trips && cond; trip++)
    {
      if (++c->unrolled > MAX_UNROLLED)
        return refuse_node (c, node, "more than %d iterations to unroll", MAX_UNROLLED);
      bind_body_input (c, body->inputs->pdata[0], int_arg (c, trip), NULL);
      for (guint i = 0; i < n_carried; i++)
        bind_body_input (c, body->inputs->pdata[1 + i], carried[i], sources[i]);
      for (guint k = 0; k < body->nodes->len; k++)
        if (!convert_node (c, g_ptr_array_index (body->nodes, k)))
          return FALSE;
      Arg *next = g_hash_table_lookup (c->args, body->outputs->pdata[0]);
      if (next == NULL || next->kind != ARG_CONST ||
          (next->constant->type != GRAFT_ATTR_BOOL && next->constant->type != GRAFT_ATTR_INT))
        return refuse_node (c, node, "whether it goes on follows the input's values (torch.export's while_loop is not "
                            "written yet)");
      cond = next->constant->i;
      for (guint i = 0; i < n_carried; i++)
        {
          sources[i] = body->outputs->pdata[1 + i];
          carried[i] = g_hash_table_lookup (c->args, sources[i]);
          if (carried[i] == NULL)
            return refuse_node (c, node, "its body's value %s comes from no value Graft converted", sources[i]->name);
          if (carried[i]->kind == ARG_UNCONVERTED)
            return refuse_unconverted (c, carried[i]);
        }
    }
  /* the runs observed the loop's outputs themselves */
  for (guint i = 0; i < node->outputs->len && i < n_carried; i++)
    if (node->outputs->pdata[i] != NULL)
      g_hash_table_insert (c->args, node->outputs->pdata[i], carried[i]);
  return TRUE;
}

/* self.x = value in forward (RAFT's corr_pyramid): later reads of the
 * attribute in the program see value, as TorchScript's do. *handled
 * FALSE for other nodes. */
static gboolean
convert_attribute_state (Converter *c, GraftNode *node, gboolean *handled)
{
  *handled = FALSE;
  GraftAttribute *name = graft_node_get_attribute (node, "name");
  g_autofree char *text = name && name->type == GRAFT_ATTR_STRING ? graft_attribute_dup_string (name) : NULL;
  if (text == NULL)
    return TRUE;
  if (strcmp (node->op, "prim::SetAttr") == 0 && node->inputs->len == 1)
    {
      GraftAttribute *module = graft_node_get_attribute (node, "arg0");
      g_autofree char *module_path = module && module->type == GRAFT_ATTR_STRING ? graft_attribute_dup_string (module)
                                                                                : NULL;
      Arg *value = g_hash_table_lookup (c->args, node->inputs->pdata[0]);
      if (value == NULL)
        return refuse_node (c, node, "it sets %s to a value Graft did not convert", text);
      if (value->kind == ARG_UNCONVERTED)
        return refuse_unconverted (c, value);
      *handled = TRUE;
      g_hash_table_replace (c->attributes_set, module_path && *module_path ? g_strdup_printf ("%s.%s", module_path, text)
                                                                           : g_strdup (text), value);
      return TRUE;
    }
  Arg *set = strcmp (node->op, "prim::GetAttr") == 0 && node->outputs->len == 1
             ? g_hash_table_lookup (c->attributes_set, text) : NULL;
  if (set != NULL)
    {
      *handled = TRUE;
      g_hash_table_insert (c->args, node->outputs->pdata[0], set);
    }
  return TRUE;
}

static gboolean
convert_node_now (Converter *c, GraftNode *node)
{
  gboolean handled;
  if (!convert_attribute_state (c, node, &handled))
    return FALSE;
  if (handled)
    return TRUE;
  if (!convert_dict_node (c, node, &handled))
    return FALSE;
  if (handled)
    return TRUE;
  if (!convert_list_slice (c, node, &handled))
    return FALSE;
  if (handled)
    return TRUE;
  if (strcmp (node->op, "prim::If") == 0)
    return convert_if (c, node);
  if (strcmp (node->op, "prim::Loop") == 0)
    return convert_loop (c, node);
  if (strcmp (node->op, "prim::RaiseException") == 0)
    return refuse_node (c, node, "the module raises an exception at these sizes");
  if (strcmp (node->op, "aten::warn") == 0)
    return TRUE;
  /* What scripted code binds in a branch that raises: never read when
   * the program runs. */
  if (strcmp (node->op, "prim::Uninitialized") == 0 && node->outputs->len == 1)
    {
      g_autofree char *why = g_strdup_printf ("cannot convert to torch.export: node %s (prim::Uninitialized) is read",
                                              node->name);
      g_hash_table_insert (c->args, node->outputs->pdata[0], arg_new (c, ARG_UNCONVERTED, why));
      return TRUE;
    }
  /* The program runs on the CPU, as Graft's runs did. */
  if ((strcmp (node->op, "prim::device") == 0 || strcmp (node->op, "prim::dtype") == 0) && node->inputs->len == 1
      && node->outputs->len == 1)
    {
      GraftAttribute *constant;
      GraftValue *tensor = node->inputs->pdata[0];
      Observation *seen = observation_in (c, 0, tensor);
      GraftDType dtype = tensor->initializer ? tensor->initializer->dtype
                         : tensor->is_graph_input ? input_dtype (c, tensor)
                         : seen != NULL && !seen->is_sequence ? seen->dtype : GRAFT_DTYPE_UNDEFINED;
      if (strcmp (node->op, "prim::device") == 0)
        constant = graft_attribute_new_string ("", "cpu");
      else if (dtype != GRAFT_DTYPE_UNDEFINED)
        constant = graft_attribute_new_int ("", _graft_exported_c10_scalar_type_from_schema (
                                                  _graft_exported_dtype_to_schema (dtype)));
      else
        return refuse_node (c, node, "Graft's runtime did not compute %s", ((GraftValue *) node->inputs->pdata[0])->name);
      g_ptr_array_add (c->owned_attributes, constant);
      g_hash_table_insert (c->args, node->outputs->pdata[0], const_arg (c, constant));
      return TRUE;
    }
  if (strcmp (node->op, "aten::append") == 0 || strcmp (node->op, "aten::add") == 0)
    {
      Arg *list = node->inputs->len >= 1 ? g_hash_table_lookup (c->args, node->inputs->pdata[0]) : NULL;
      Arg *other = node->inputs->len == 2 ? g_hash_table_lookup (c->args, node->inputs->pdata[1]) : NULL;
      /* shape + [-1]: the constant list is an attribute */
      GraftAttribute *constant = node->inputs->len == 1 ? graft_node_get_attribute (node, "arg1") : NULL;
      if (constant != NULL && constant->type == GRAFT_ATTR_INTS)
        {
          other = arg_new (c, ARG_LIST, NULL);
          other->items = g_ptr_array_new ();
          for (guint k = 0; k < constant->ints->len; k++)
            g_ptr_array_add (other->items, int_arg (c, g_array_index (constant->ints, gint64, k)));
        }
      if (list != NULL && list->kind == ARG_LIST && other != NULL)
        {
          if (other->kind == ARG_UNCONVERTED)
            return refuse_unconverted (c, other);
          if (strcmp (node->op, "aten::append") == 0)
            {
              /* Straight-line code (loops are refused): the list as it
               * stands when later nodes read it. */
              g_ptr_array_add (list->items, other);
              if (node->outputs->len == 1)
                g_hash_table_insert (c->args, node->outputs->pdata[0], list);
              return TRUE;
            }
          if (other->kind == ARG_LIST && node->outputs->len == 1)
            {
              Arg *joined = arg_new (c, ARG_LIST, NULL);
              joined->items = g_ptr_array_new ();
              g_ptr_array_extend (joined->items, list->items, NULL, NULL);
              g_ptr_array_extend (joined->items, other->items, NULL, NULL);
              g_hash_table_insert (c->args, node->outputs->pdata[0], joined);
              return TRUE;
            }
        }
    }
  if (strcmp (node->op, "prim::GetAttr") == 0)
    {
      GraftAttribute *value = graft_node_get_attribute (node, "value");
      GraftAttribute *name = graft_node_get_attribute (node, "name");
      g_autofree char *path = name ? graft_attribute_dup_string (name) : NULL;
      if (value == NULL || node->outputs->len != 1)
        return refuse_node (c, node, "module attribute %s is no constant Graft can fold", path ? path : "(unnamed)");
      g_hash_table_insert (c->args, node->outputs->pdata[0], const_arg (c, value));
      return TRUE;
    }
  if (strcmp (node->op, "prim::unchecked_cast") == 0 && node->inputs->len == 1 && node->outputs->len == 1)
    {
      Arg *arg = g_hash_table_lookup (c->args, node->inputs->pdata[0]);
      if (arg == NULL)
        return refuse_node (c, node, "it casts a value Graft did not convert");
      g_hash_table_insert (c->args, node->outputs->pdata[0], arg);
      return TRUE;
    }
  if (strcmp (node->op, "aten::__getitem__") == 0 || strcmp (node->op, "prim::TupleIndex") == 0 ||
      strcmp (node->op, "aten::select") == 0)
    {
      if (!convert_getitem (c, node, &handled))
        return FALSE;
      if (handled)
        return TRUE;
    }
  if (strcmp (node->op, "prim::ListConstruct") == 0 || strcmp (node->op, "prim::TupleConstruct") == 0)
    return convert_list (c, node);
  if (strcmp (node->op, "prim::ListUnpack") == 0 || strcmp (node->op, "prim::TupleUnpack") == 0)
    return convert_unpack (c, node);
  if (strcmp (node->op, "prim::Constant") == 0)
    {
      GraftAttribute *value = graft_node_get_attribute (node, "value");
      if (value == NULL || node->outputs->len != 1)
        return refuse_node (c, node, "a constant Graft cannot place");
      g_hash_table_insert (c->args, node->outputs->pdata[0], const_arg (c, value));
      return TRUE;
    }
  if (!convert_size_node (c, node, &handled))
    return FALSE;
  if (handled)
    return TRUE;
  if (!convert_number_node (c, node, &handled))
    return FALSE;
  if (handled)
    return TRUE;
  return convert_call (c, node);
}

/* A node that computes something only an error message or a dead
 * branch uses (x.size() formatted into an assertion, a list of
 * features torch.export would never see) need not be convertible: what
 * cannot be converted is refused where the program uses it. A node that
 * changes a tensor or a list is converted or refused at once. */
static gboolean
convert_node (Converter *c, GraftNode *node)
{
  GError *local = NULL;
  GError **caller = c->error;
  for (guint i = 0; i < node->outputs->len; i++)
    if (node->outputs->pdata[i] != NULL)
      g_hash_table_insert (c->conversions, node->outputs->pdata[i],
                           GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (c->conversions,
                                                                                    node->outputs->pdata[i])) + 1));
  c->error = &local;
  gboolean ok = convert_node_now (c, node);
  c->error = caller;
  if (ok)
    return TRUE;
  if (node->outputs->len == 0 || graft_node_changes_state (node) || !g_error_matches (local, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED))
    {
      g_propagate_error (caller, local);
      return FALSE;
    }
  for (guint i = 0; i < node->outputs->len; i++)
    if (node->outputs->pdata[i] != NULL)
      g_hash_table_insert (c->args, node->outputs->pdata[i], arg_new (c, ARG_UNCONVERTED, local->message));
  g_error_free (local);
  return TRUE;
}

/* ------------------------------------------------------------------ runs */

static gboolean
add_symbol (Converter *c, const GraftPt2DynamicDim *dim, gint64 size)
{
  const char *symbol = g_intern_string (dim->symbol);
  for (guint s = 0; s < c->symbols->len; s++)
    if (g_ptr_array_index (c->symbols, s) == symbol)
      {
        if (g_array_index (c->base_sizes, gint64, s) != size)
          {
            g_set_error (c->error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                         "dynamic dim %s is %" G_GINT64_FORMAT " in one --shape and %" G_GINT64_FORMAT " in another",
                         symbol, g_array_index (c->base_sizes, gint64, s), size);
            return FALSE;
          }
        return TRUE;
      }
  if (size < dim->min || (dim->max >= 0 && size > dim->max))
    {
      g_set_error (c->error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "%s:%d is %" G_GINT64_FORMAT " in --shape, outside the range given for %s", dim->input, dim->axis,
                   size, symbol);
      return FALSE;
    }
  g_ptr_array_add (c->symbols, (gpointer) symbol);
  g_array_append_val (c->base_sizes, size);
  gint64 range[2] = { dim->min, dim->max };
  g_array_append_vals (c->ranges, range, 2);
  return TRUE;
}

/* Other sizes of a symbol in its range to run at: above the export size
 * first, never 0 or 1 (torch specialises those). */
static gboolean
probe_sizes (Converter *c, guint s, const GraftPt2DynamicDim *dim, gint64 *probes)
{
  gint64 base = g_array_index (c->base_sizes, gint64, s), lo = MAX (dim->min, 2);
  guint n = 0;
  for (gint64 step = 1; step <= 8 && n < N_PROBES; step++)
    {
      gint64 up = base + step, down = base - step;
      if ((dim->max < 0 || up <= dim->max) && n < N_PROBES)
        probes[n++] = up;
      if (down >= lo && n < N_PROBES)
        probes[n++] = down;
    }
  if (n < N_PROBES)
    {
      g_set_error (c->error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "the range of %s leaves no %d other sizes (from 2) to check the program at", dim->symbol, N_PROBES);
      return FALSE;
    }
  return TRUE;
}

static const GraftPt2DynamicDim *
dynamic_dim_of (Converter *c, const char *input, int axis)
{
  for (guint i = 0; i < c->options->n_dynamic_dims; i++)
    if (strcmp (c->options->dynamic_dims[i].input, input) == 0 && c->options->dynamic_dims[i].axis == axis)
      return &c->options->dynamic_dims[i];
  return NULL;
}

static guint
symbol_index (Converter *c, const char *symbol)
{
  symbol = g_intern_string (symbol);
  for (guint s = 0; s < c->symbols->len; s++)
    if (g_ptr_array_index (c->symbols, s) == symbol)
      return s;
  return G_MAXUINT;
}

static GraftDType
input_dtype (Converter *c, GraftValue *input)
{
  gpointer dtype;
  if (c->options->input_dtypes && g_hash_table_lookup_extended (c->options->input_dtypes, input->name, NULL, &dtype))
    return GPOINTER_TO_INT (dtype);
  return graft_lower_guess_input_dtype (input);
}

static void
run_free (Run *run)
{
  g_hash_table_unref (run->seen);
  g_free (run->sizes);
  g_free (run);
}

/* An Optional input (forward(x, mask: Optional[Tensor] = None)) given no
 * --shape is None: the runs leave it out, and the program, as torch.export
 * of a call without it, has no such input. */
static gboolean
input_left_out (Converter *c, GraftValue *input)
{
  return input->kind == GRAFT_VALUE_OPTIONAL && input->initializer == NULL &&
         (c->options->input_shapes == NULL || g_hash_table_lookup (c->options->input_shapes, input->name) == NULL);
}

static gboolean
run_model (Converter *c, GraftRuntime *runtime, gint64 *sizes)
{
  Run *run = g_new0 (Run, 1);
  run->seen = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_ptr_array_unref);
  run->sizes = sizes;
  g_ptr_array_add (c->runs, run);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GRand) rng = g_rand_new_with_seed (c->runs->len);
  for (guint i = 0; i < c->graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (c->graph->inputs, i);
      if (input->initializer != NULL || input_left_out (c, input))
        continue;
      GraftShape *shape = g_hash_table_lookup (c->options->input_shapes, input->name);
      gint64 dims[GRAFT_RT_MAX_RANK];
      for (int d = 0; d < shape->rank && d < GRAFT_RT_MAX_RANK; d++)
        {
          const GraftPt2DynamicDim *dim = dynamic_dim_of (c, input->name, d);
          dims[d] = dim ? sizes[symbol_index (c, dim->symbol)] : shape->dims[d].value;
        }
      GraftRtTensor *tensor = graft_runtime_random_tensor (input_dtype (c, input), shape->rank, dims, rng, c->error);
      if (tensor == NULL)
        return FALSE;
      g_hash_table_insert (inputs, input->name, tensor);
      /* x.size() of an input reads its sizes here: no node computes it */
      seen_add (run, input, observe (tensor));
    }
  graft_runtime_set_observer (runtime, record_observation, run);
  graft_runtime_set_observe_subgraphs (runtime, TRUE);
  graft_runtime_set_observe_untaken_branches (runtime, TRUE);
  g_autoptr(GPtrArray) outputs = graft_runtime_run (runtime, inputs, NULL, NULL, NULL, c->error);
  graft_runtime_set_observer (runtime, NULL, NULL);
  if (outputs == NULL)
    {
      g_prefix_error (c->error, "cannot convert to torch.export: Graft's runtime, which measures the sizes, failed: ");
      return FALSE;
    }
  /* Graph outputs a node computed are observed; those that are inputs
   * are described by their shape. */
  for (guint i = 0; i < c->graph->outputs->len && i < outputs->len; i++)
    if (!g_hash_table_contains (run->seen, c->graph->outputs->pdata[i]))
      seen_add (run, c->graph->outputs->pdata[i], observe (outputs->pdata[i]));
  return TRUE;
}

static gboolean
check_inputs_and_run (Converter *c)
{
  for (guint i = 0; i < c->graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (c->graph->inputs, i);
      if (input->initializer != NULL || input_left_out (c, input))
        continue;
      GraftShape *shape = c->options->input_shapes ? g_hash_table_lookup (c->options->input_shapes, input->name) : NULL;
      if (shape == NULL || shape->rank < 0 || !graft_shape_is_fully_fixed (shape))
        {
          g_set_error (c->error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                       "give input '%s' a --shape (TorchScript files declare none)", input->name);
          return FALSE;
        }
      for (int d = 0; d < shape->rank; d++)
        {
          const GraftPt2DynamicDim *dim = dynamic_dim_of (c, input->name, d);
          if (dim != NULL && !add_symbol (c, dim, shape->dims[d].value))
            return FALSE;
        }
    }
  for (guint i = 0; i < c->options->n_dynamic_dims; i++)
    {
      const GraftPt2DynamicDim *dim = &c->options->dynamic_dims[i];
      GraftValue *input = graft_graph_lookup_value (c->graph, dim->input);
      GraftShape *shape = g_hash_table_lookup (c->options->input_shapes, dim->input);
      if (input == NULL || !input->is_graph_input || shape == NULL || dim->axis >= shape->rank)
        {
          g_set_error (c->error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                       "--dynamic %s:%d: the model has no input '%s' with such a dim in its --shape", dim->input,
                       dim->axis, dim->input);
          return FALSE;
        }
    }
  g_autoptr(GraftRuntime) runtime = graft_runtime_new (c->model, c->error);
  if (runtime == NULL)
    {
      g_prefix_error (c->error, "cannot convert to torch.export: Graft's runtime, which measures the sizes, "
                      "cannot run this model: ");
      return FALSE;
    }
  guint n = c->symbols->len;
  if (!run_model (c, runtime, g_memdup2 (c->base_sizes->data, sizeof (gint64) * MAX (n, 1))))
    return FALSE;
  for (guint s = 0; s < n; s++)
    {
      const GraftPt2DynamicDim *dim = NULL;
      for (guint i = 0; i < c->options->n_dynamic_dims; i++)
        if (g_intern_string (c->options->dynamic_dims[i].symbol) == g_ptr_array_index (c->symbols, s))
          dim = &c->options->dynamic_dims[i];
      gint64 probes[N_PROBES];
      if (!probe_sizes (c, s, dim, probes))
        return FALSE;
      for (guint k = 0; k < N_PROBES; k++)
        {
          gint64 *sizes = g_memdup2 (c->base_sizes->data, sizeof (gint64) * n);
          sizes[s] = probes[k];
          if (!run_model (c, runtime, sizes))
            return FALSE;
        }
    }
  return TRUE;
}

/* ------------------------------------------------------------------ signature and program */

/* A tensor a module keeps in a dict attribute (LeViT's
 * attention_bias_cache["cpu"]): no parameter or buffer of the module. */
static gboolean
is_dict_item (GraftValue *value)
{
  for (guint i = 0; i < value->consumers->len; i++)
    {
      GraftNode *consumer = g_ptr_array_index (value->consumers, i);
      GraftModuleDict dict;
      if (graft_module_dict_read (consumer, &dict) && dict.values_are_inputs)
        return TRUE;
    }
  return FALSE;
}

static gboolean
is_tensor_constant (GraftValue *value)
{
  return g_str_has_prefix (value->name, "CONSTANTS.") || is_dict_item (value);
}

/* Where ep.module() puts a tensor constant: TorchScript's CONSTANTS.cN
 * as _tensor_constant_cN, a dict's item under its module with the dict
 * and the key joined (attention_bias_cache.cpu would clash with
 * Module.cpu). */
static char *
tensor_constant_fqn (GraftValue *value)
{
  if (g_str_has_prefix (value->name, "CONSTANTS."))
    return g_strdup_printf ("_tensor_constant_%s", value->name + strlen ("CONSTANTS."));
  char *fqn = g_strdup (value->name);
  char *last_dot = strrchr (fqn, '.');
  if (last_dot != NULL)
    *last_dot = '_';
  for (char *p = last_dot ? last_dot : fqn; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '_')
      *p = '_';
  return fqn;
}

/* Placeholders for the weights: parameters, buffers, then the tensor
 * constants the graph reads, as torch.export orders them. */
static gboolean
declare_weights (Converter *c, JsonArray *graph_inputs, JsonArray *input_specs, GHashTable *tensors)
{
  const char *kinds[] = { "parameter", "buffer", "tensor_constant" };
  for (guint kind = 0; kind < G_N_ELEMENTS (kinds); kind++)
    for (guint i = 0; i < c->graph->initializers->len; i++)
      {
        GraftValue *value = g_ptr_array_index (c->graph->initializers, i);
        gboolean constant = is_tensor_constant (value);
        guint value_kind = constant ? 2 : g_hash_table_contains (c->buffers, value->name) ? 1 : 0;
        if (value_kind != kind || (constant && value->consumers->len == 0))
          continue;
        g_autofree char *fqn = constant ? tensor_constant_fqn (value) : g_strdup (value->name);
        g_autofree char *hint = g_strdup_printf ("%c_%s", kinds[kind][0], fqn);
        const char *name = unique_name (c, hint);
        GraftTensor *tensor = value->initializer;
        Observation observation = { .dtype = tensor->dtype, .rank = tensor->rank };
        memcpy (observation.dims, tensor->dims, sizeof (gint64) * MIN (tensor->rank, GRAFT_RT_MAX_RANK));
        g_autofree Observation **seen = g_new (Observation *, c->runs->len);
        for (guint run = 0; run < c->runs->len; run++)
          seen[run] = &observation;
        GraftNode *anchor = value->consumers->len ? value->consumers->pdata[0] : NULL;
        if (anchor == NULL)
          {
            /* an unused parameter: still in the state dict */
            JsonNode *meta = NULL;
            GraftNode stand_in = { .name = value->name, .op = "prim::GetAttr" };
            meta = tensor_meta (c, &stand_in, value->name, seen, kind == 0);
            if (meta == NULL)
              return FALSE;
            json_object_set_member (c->tensor_values, name, meta);
          }
        else if (!declare_tensor (c, anchor, name, seen, kind == 0))
          return FALSE;
        json_array_add_element (graph_inputs, tensor_argument (name));
        JsonObject *body = json_object_new ();
        json_object_set_member (body, "arg", named_node ("name", name));
        json_object_set_string_member (body, kind == 0 ? "parameter_name" : kind == 1 ? "buffer_name"
                                                                                       : "tensor_constant_name", fqn);
        if (kind == 1)
          json_object_set_boolean_member (body, "persistent", TRUE);
        json_array_add_element (input_specs, union_of (kinds[kind], json_node_init_object (json_node_alloc (), body)));
        g_hash_table_insert (tensors, g_strdup (fqn), tensor);
        g_hash_table_insert (c->args, value, arg_new (c, ARG_TENSOR, name));
      }
  return TRUE;
}

static gboolean
declare_user_inputs (Converter *c, JsonArray *graph_inputs, JsonArray *input_specs, JsonArray *arg_names)
{
  for (guint i = 0; i < c->graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (c->graph->inputs, i);
      if (input->initializer != NULL)
        continue;
      if (input_left_out (c, input))
        {
          GraftAttribute *none = graft_attribute_new ("", GRAFT_ATTR_NONE);
          g_ptr_array_add (c->owned_attributes, none);
          g_hash_table_insert (c->args, input, const_arg (c, none));
          continue;
        }
      const char *name = unique_name (c, input->name);
      Observation *seen[64];
      Observation *owned[64];
      GraftShape *shape = g_hash_table_lookup (c->options->input_shapes, input->name);
      for (guint run = 0; run < c->runs->len; run++)
        {
          Run *r = g_ptr_array_index (c->runs, run);
          owned[run] = seen[run] = g_new0 (Observation, 1);
          seen[run]->dtype = input_dtype (c, input);
          seen[run]->rank = shape->rank;
          for (int d = 0; d < shape->rank; d++)
            {
              const GraftPt2DynamicDim *dim = dynamic_dim_of (c, input->name, d);
              seen[run]->dims[d] = dim ? r->sizes[symbol_index (c, dim->symbol)] : shape->dims[d].value;
            }
        }
      GraftNode stand_in = { .name = input->name, .op = "input" };
      gboolean ok = declare_tensor (c, &stand_in, name, seen, FALSE);
      for (guint run = 0; run < c->runs->len; run++)
        g_free (owned[run]);
      if (!ok)
        return FALSE;
      json_array_add_element (graph_inputs, tensor_argument (name));
      JsonObject *body = json_object_new ();
      json_object_set_member (body, "arg", tensor_argument (name));
      json_array_add_element (input_specs, union_of ("user_input", json_node_init_object (json_node_alloc (), body)));
      json_array_add_string_element (arg_names, name);
      g_hash_table_insert (c->args, input, arg_new (c, ARG_TENSOR, name));
    }
  return TRUE;
}

static JsonNode *
treespec_tuple (guint n, const char *context)
{
  JsonObject *tuple = json_object_new ();
  JsonArray *children = json_array_new ();
  for (guint i = 0; i < n; i++)
    json_array_add_element (children, _graft_exported_treespec_leaf ());
  json_object_set_string_member (tuple, "type", "builtins.tuple");
  json_object_set_string_member (tuple, "context", context);
  json_object_set_array_member (tuple, "children_spec", children);
  return json_node_init_object (json_node_alloc (), tuple);
}

/* A treespec as torch serializes it: [version, spec] as JSON text. */
static char *
treespec_text (JsonNode *spec /* transfer full */)
{
  JsonArray *versioned = json_array_new ();
  json_array_add_int_element (versioned, 1);
  json_array_add_element (versioned, spec);
  g_autoptr(JsonNode) node = json_node_init_array (json_node_alloc (), versioned);
  return json_to_string (node, FALSE);
}

static JsonArray *
module_call_graph (Converter *c, guint n_inputs, JsonNode *out_tree /* transfer full */, JsonArray *arg_names)
{
  /* ((inputs…), {}) */
  JsonObject *args_kwargs = json_object_new ();
  JsonArray *children = json_array_new ();
  json_array_add_element (children, treespec_tuple (n_inputs, "null"));
  JsonObject *kwargs = json_object_new ();
  json_object_set_string_member (kwargs, "type", "builtins.dict");
  json_object_set_string_member (kwargs, "context", "[]");
  json_object_set_array_member (kwargs, "children_spec", json_array_new ());
  json_array_add_object_element (children, kwargs);
  json_object_set_string_member (args_kwargs, "type", "builtins.tuple");
  json_object_set_string_member (args_kwargs, "context", "null");
  json_object_set_array_member (args_kwargs, "children_spec", children);
  g_autofree char *in_spec = treespec_text (json_node_init_object (json_node_alloc (), args_kwargs));
  g_autofree char *out_spec = treespec_text (out_tree);

  JsonObject *signature = json_object_new ();
  json_object_set_array_member (signature, "inputs", json_array_new ());
  json_object_set_array_member (signature, "outputs", json_array_new ());
  json_object_set_string_member (signature, "in_spec", in_spec);
  json_object_set_string_member (signature, "out_spec", out_spec);
  json_object_set_array_member (signature, "forward_arg_names", arg_names);
  JsonArray *graph = json_array_new ();
  JsonObject *root = json_object_new ();
  json_object_set_string_member (root, "fqn", "");
  json_object_set_object_member (root, "signature", signature);
  json_array_add_object_element (graph, root);
  for (guint i = 0; i < c->module_paths->len; i++)
    {
      JsonObject *entry = json_object_new ();
      json_object_set_string_member (entry, "fqn", g_ptr_array_index (c->module_paths, i));
      json_object_set_null_member (entry, "signature");
      json_array_add_object_element (graph, entry);
    }
  return graph;
}

static JsonObject *
range_constraints (Converter *c)
{
  JsonObject *ranges = json_object_new ();
  for (guint s = 0; s < c->symbols->len; s++)
    {
      const char *symbol = g_ptr_array_index (c->symbols, s);
      json_object_set_member (ranges, symbol, _graft_exported_range_node (g_array_index (c->ranges, gint64, 2 * s),
                                                                         g_array_index (c->ranges, gint64, 2 * s + 1)));
    }
  return ranges;
}

static JsonNode *
none_output (JsonArray *graph_outputs, JsonArray *output_specs)
{
  JsonNode *none = union_of ("as_none", json_node_init_boolean (json_node_alloc (), TRUE));
  json_array_add_element (graph_outputs, json_node_copy (none));
  JsonObject *body = json_object_new ();
  json_object_set_member (body, "arg", none);
  json_array_add_element (output_specs, union_of ("user_output", json_node_init_object (json_node_alloc (), body)));
  return _graft_exported_treespec_leaf ();
}

/* One of the program's results: its leaves (tensors, None) appended to
 * the graph's outputs and the output specs, its structure (tuples, lists,
 * dicts of them) returned as a treespec node, or NULL with the error. */
static JsonNode *
output_spec (Converter *c, const char *what, const Arg *arg, guint depth, JsonArray *graph_outputs,
             JsonArray *output_specs)
{
  if (arg != NULL && arg->kind == ARG_UNCONVERTED)
    {
      refuse_unconverted (c, arg);
      return NULL;
    }
  if (arg != NULL && arg->kind == ARG_CONST && arg->constant->type == GRAFT_ATTR_NONE)
    return none_output (graph_outputs, output_specs);
  if (arg != NULL && arg->kind == ARG_TENSOR)
    {
      json_array_add_element (graph_outputs, tensor_argument (arg->name));
      JsonObject *body = json_object_new ();
      json_object_set_member (body, "arg", tensor_argument (arg->name));
      json_array_add_element (output_specs, union_of ("user_output", json_node_init_object (json_node_alloc (), body)));
      return _graft_exported_treespec_leaf ();
    }
  if (arg != NULL && (arg->kind == ARG_LIST || arg->kind == ARG_DICT) && depth < 16)
    {
      gboolean dict = arg->kind == ARG_DICT;
      JsonArray *children = json_array_new ();
      JsonArray *keys = json_array_new ();
      for (guint i = dict ? 1 : 0; i < arg->items->len; i += dict ? 2 : 1)
        {
          JsonNode *child = output_spec (c, what, g_ptr_array_index (arg->items, i), depth + 1, graph_outputs,
                                         output_specs);
          if (child == NULL)
            {
              json_array_unref (children);
              json_array_unref (keys);
              return NULL;
            }
          json_array_add_element (children, child);
          if (dict)
            {
              g_autofree char *key = graft_attribute_dup_string (((Arg *) arg->items->pdata[i - 1])->constant);
              json_array_add_string_element (keys, key);
            }
        }
      JsonObject *spec = json_object_new ();
      json_object_set_string_member (spec, "type", dict ? "builtins.dict" : arg->is_tuple ? "builtins.tuple"
                                                                                        : "builtins.list");
      if (dict)
        {
          g_autoptr(JsonNode) key_node = json_node_init_array (json_node_alloc (), json_array_ref (keys));
          g_autofree char *context = json_to_string (key_node, FALSE);
          json_object_set_string_member (spec, "context", context);
        }
      else
        json_object_set_string_member (spec, "context", "null");
      json_array_unref (keys);
      json_object_set_array_member (spec, "children_spec", children);
      return json_node_init_object (json_node_alloc (), spec);
    }
  g_set_error (c->error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
               "cannot convert to torch.export: output %s is %s, not a tensor the program computes", what,
               arg == NULL ? "unknown" : arg->kind == ARG_LIST ? "a list nested too deep" : "a number");
  return NULL;
}

/* The nesting TorchScript's reader kept ("(T(TT)N)"), or NULL when it
 * does not fit the graph's outputs (an edit added one). */
static char *
kept_result_structure (Converter *c)
{
  GBytes *record = graft_model_get_kept_record (c->model, GRAFT_TORCHSCRIPT_KEPT_RESULT);
  if (record == NULL || g_bytes_get_size (record) == 0)
    return NULL;
  g_autofree char *text = g_strndup (g_bytes_get_data (record, NULL), g_bytes_get_size (record));
  guint leaves = 0;
  int depth = 0;
  for (const char *p = text; *p; p++)
    {
      leaves += *p == 'T';
      depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
      if (depth < 0 || depth > 16 || !strchr ("TN()", *p))
        return NULL;
    }
  return leaves == c->graph->outputs->len && depth == 0 ? g_steal_pointer (&text) : NULL;
}

/* One item of the kept structure at *p, the graph's outputs taken in
 * order from *next. */
static JsonNode *
structure_spec (Converter *c, const char **p, guint *next, JsonArray *graph_outputs, JsonArray *output_specs)
{
  char kind = *(*p)++;
  if (kind == 'N')
    return none_output (graph_outputs, output_specs);
  if (kind == 'T')
    {
      GraftValue *output = g_ptr_array_index (c->graph->outputs, (*next)++);
      return output_spec (c, output->name, g_hash_table_lookup (c->args, output), 0, graph_outputs, output_specs);
    }
  JsonArray *children = json_array_new ();
  while (**p && **p != ')')
    {
      JsonNode *child = structure_spec (c, p, next, graph_outputs, output_specs);
      if (child == NULL)
        {
          json_array_unref (children);
          return NULL;
        }
      json_array_add_element (children, child);
    }
  (*p)++;
  JsonObject *tuple = json_object_new ();
  json_object_set_string_member (tuple, "type", "builtins.tuple");
  json_object_set_string_member (tuple, "context", "null");
  json_object_set_array_member (tuple, "children_spec", children);
  return json_node_init_object (json_node_alloc (), tuple);
}

/* The program's result: as forward's nests when the reader kept it, else
 * one output as it stands (a tensor, a dict…) and several as a tuple. */
static JsonNode *
result_spec (Converter *c, JsonArray *graph_outputs, JsonArray *output_specs)
{
  g_autofree char *structure = kept_result_structure (c);
  if (structure == NULL)
    {
      g_autoptr(GString) flat = g_string_new (c->graph->outputs->len == 1 ? "T" : "(");
      for (guint i = 0; c->graph->outputs->len != 1 && i < c->graph->outputs->len; i++)
        g_string_append_c (flat, 'T');
      if (c->graph->outputs->len != 1)
        g_string_append_c (flat, ')');
      structure = g_strdup (flat->str);
    }
  const char *p = structure;
  guint next = 0;
  return structure_spec (c, &p, &next, graph_outputs, output_specs);
}

static JsonObject *
build_program (Converter *c, GHashTable *tensors)
{
  JsonArray *graph_inputs = json_array_new (), *graph_outputs = json_array_new ();
  JsonArray *input_specs = json_array_new (), *output_specs = json_array_new ();
  JsonArray *arg_names = json_array_new ();
  JsonObject *graph = json_object_new ();
  G_GNUC_UNUSED g_autoptr(JsonNode) graph_node = json_node_init_object (json_node_alloc (), graph);
  json_object_set_array_member (graph, "inputs", graph_inputs);
  json_object_set_array_member (graph, "outputs", graph_outputs);
  json_object_set_array_member (graph, "nodes", json_array_ref (c->nodes));
  json_object_set_object_member (graph, "tensor_values", json_object_ref (c->tensor_values));
  json_object_set_object_member (graph, "sym_int_values", json_object_ref (c->sym_int_values));
  json_object_set_object_member (graph, "sym_bool_values", json_object_new ());
  json_object_set_boolean_member (graph, "is_single_tensor_return", FALSE);
  json_object_set_object_member (graph, "custom_obj_values", json_object_new ());
  json_object_set_object_member (graph, "sym_float_values", json_object_new ());
  JsonObject *signature = json_object_new ();
  json_object_set_array_member (signature, "input_specs", input_specs);
  json_object_set_array_member (signature, "output_specs", output_specs);

  if (!declare_weights (c, graph_inputs, input_specs, tensors) ||
      !declare_user_inputs (c, graph_inputs, input_specs, arg_names))
    {
      json_array_unref (arg_names);
      json_object_unref (signature);
      return NULL;
    }
  for (guint i = 0; i < c->graph->nodes->len; i++)
    if (!convert_node (c, g_ptr_array_index (c->graph->nodes, i)))
      {
        json_array_unref (arg_names);
        json_object_unref (signature);
        return NULL;
      }
  JsonNode *out_spec = result_spec (c, graph_outputs, output_specs);
  if (out_spec == NULL)
    {
      json_array_unref (arg_names);
      json_object_unref (signature);
      return NULL;
    }

  JsonObject *graph_module = json_object_new ();
  json_object_set_object_member (graph_module, "graph", json_object_ref (graph));
  json_object_set_object_member (graph_module, "signature", signature);
  guint n_user_inputs = json_array_get_length (arg_names);
  json_object_set_array_member (graph_module, "module_call_graph",
                                module_call_graph (c, n_user_inputs, out_spec, arg_names));
  json_object_set_object_member (graph_module, "metadata", json_object_new ());
  json_object_set_object_member (graph_module, "treespec_namedtuple_fields", json_object_new ());

  JsonObject *program = json_object_new ();
  json_object_set_object_member (program, "graph_module", graph_module);
  JsonObject *opsets = json_object_new ();
  json_object_set_int_member (opsets, "aten", ATEN_OPSET);
  json_object_set_object_member (program, "opset_version", opsets);
  json_object_set_object_member (program, "range_constraints", range_constraints (c));
  JsonObject *version = json_object_new ();
  json_object_set_int_member (version, "major", GRAFT_EXPORTED_PROGRAM_SCHEMA_MAJOR);
  json_object_set_int_member (version, "minor", SCHEMA_MINOR);
  json_object_set_object_member (program, "schema_version", version);
  JsonArray *verifiers = json_array_new ();
  json_array_add_string_element (verifiers, "TRAINING");
  json_object_set_array_member (program, "verifiers", verifiers);
  json_object_set_string_member (program, "torch_version", TORCH_VERSION);
  json_object_set_array_member (program, "guards_code", json_array_new ());
  return program;
}

GraftModel *
graft_torchscript_to_pt2 (GraftModel *model, const GraftPt2ConvertOptions *options, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  if (graft_model_get_format (model) != GRAFT_MODEL_FORMAT_TORCHSCRIPT || graph == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "cannot convert to torch.export: only TorchScript archives are converted (this model is %s)",
                   graft_model_format_to_string (graft_model_get_format (model)));
      return NULL;
    }
  Converter c = {
    .model = model, .graph = graph, .options = options, .error = error,
    .symbols = g_ptr_array_new (), .base_sizes = g_array_new (FALSE, FALSE, sizeof (gint64)),
    .runs = g_ptr_array_new_with_free_func ((GDestroyNotify) run_free),
    .ranges = g_array_new (FALSE, FALSE, sizeof (gint64)), .args = g_hash_table_new (NULL, NULL),
    .owned_args = g_ptr_array_new_with_free_func (arg_free),
    .owned_attributes = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_attribute_free),
    .used_names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .nodes = json_array_new (), .tensor_values = json_object_new (), .sym_int_values = json_object_new (),
    .module_paths = g_ptr_array_new (), .module_seen = g_hash_table_new (g_str_hash, g_str_equal),
    .buffers = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .dict_attributes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .attributes_set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .conversions = g_hash_table_new (NULL, NULL),
    .observed_as = g_hash_table_new (NULL, NULL),
    .owned_aliases = g_ptr_array_new_with_free_func (g_free),
    .input_dependent = g_hash_table_new (NULL, NULL),
  };
  GBytes *buffers = graft_model_get_kept_record (model, GRAFT_TORCHSCRIPT_KEPT_BUFFERS);
  if (buffers != NULL && g_bytes_get_size (buffers) > 0)
    {
      g_autofree char *text = g_strndup (g_bytes_get_data (buffers, NULL), g_bytes_get_size (buffers));
      g_auto(GStrv) lines = g_strsplit (text, "\n", -1);
      for (guint i = 0; lines[i]; i++)
        if (*lines[i])
          g_hash_table_add (c.buffers, g_strdup (lines[i]));
    }
  g_autoptr(GHashTable) tensors = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  GraftModel *result = NULL;
  if (check_inputs_and_run (&c))
    {
      JsonObject *program = build_program (&c, tensors);
      if (program != NULL)
        {
          result = graft_exported_program_new_from_json (program, tensors, graft_model_get_path (model), error);
          json_object_unref (program);
        }
    }
  g_ptr_array_unref (c.symbols);
  g_array_unref (c.base_sizes);
  g_ptr_array_unref (c.runs);
  g_array_unref (c.ranges);
  g_hash_table_unref (c.args);
  g_ptr_array_unref (c.owned_args);
  g_ptr_array_unref (c.owned_attributes);
  g_hash_table_unref (c.used_names);
  json_array_unref (c.nodes);
  json_object_unref (c.tensor_values);
  json_object_unref (c.sym_int_values);
  g_ptr_array_unref (c.module_paths);
  g_hash_table_unref (c.module_seen);
  g_hash_table_unref (c.buffers);
  g_hash_table_unref (c.dict_attributes);
  g_hash_table_unref (c.attributes_set);
  g_hash_table_unref (c.conversions);
  g_hash_table_unref (c.observed_as);
  g_ptr_array_unref (c.owned_aliases);
  g_hash_table_unref (c.input_dependent);
  return result;
}
