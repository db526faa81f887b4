#include "torchscript/script-builder.h"

#include <string.h>
#include "ir/model-error.h"
#include "torchscript/script-parser.h"
#include "pytorch/aten-schemas.h"
#include "torchscript/debug-source.h"
#include "pytorch/torch-save.h"

/* ------------------------------------------------------------------ values
 *
 * What an expression evaluates to while the code is inlined: a graph value,
 * or something only the builder knows (a constant folded into attributes,
 * a tuple tracked element by element, a module object, a function). */

typedef enum {
  BV_RUNTIME,
  BV_CONST,      /* ctype INT/FLOAT/BOOL/STRING/NONE */
  BV_CONSTLIST,  /* items: BV_CONST */
  BV_TUPLE,      /* items */
  BV_MODULE,     /* object, path, qualname = class */
  BV_FUNCTION,   /* qualname */
} BKind;

typedef struct _BValue BValue;
struct _BValue {
  gint ref_count;
  BKind kind;
  GraftValue *value;
  GraftAttrType ctype;
  gint64 i;
  double f;
  char *s;
  GPtrArray *items;
  GraftPickleValue *object;
  char *path;
  char *qualname;
  char *type;          /* RUNTIME: static type as far as known ("Tensor", "Optional[Tensor]"), NULL if unknown */
  gboolean opaque;     /* RUNTIME: a parameter of a separately optimized callee (producer not visible) */
  gboolean mutated;    /* RUNTIME list or dict literal passed to a mutating op */
  gboolean dict_literal; /* RUNTIME made by a dict display: dict_entries key/value pairs */
  guint dict_entries;
  GHashTable *attrs;   /* MODULE made by Class.__new__ (object NULL): char* → BValue* set by SetAttr */
};

static BValue *
bv_new (BKind kind)
{
  BValue *v = g_new0 (BValue, 1);
  v->ref_count = 1;
  v->kind = kind;
  return v;
}

static BValue *
bv_ref (BValue *v)
{
  v->ref_count++;
  return v;
}

static void
bv_unref (BValue *v)
{
  if (v == NULL || --v->ref_count > 0)
    return;
  g_free (v->s);
  g_free (v->path);
  g_free (v->qualname);
  g_free (v->type);
  g_clear_pointer (&v->items, g_ptr_array_unref);
  g_clear_pointer (&v->attrs, g_hash_table_unref);
  g_free (v);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (BValue, bv_unref)

static GPtrArray *
bv_list (void)
{
  return g_ptr_array_new_with_free_func ((GDestroyNotify) bv_unref);
}

static BValue *
bv_runtime (GraftValue *value)
{
  BValue *v = bv_new (BV_RUNTIME);
  v->value = value;
  return v;
}

static BValue *
bv_runtime_typed (GraftValue *value, const char *type)
{
  BValue *v = bv_runtime (value);
  v->type = g_strdup (type);
  return v;
}

static BValue *
bv_const (GraftAttrType type)
{
  BValue *v = bv_new (BV_CONST);
  v->ctype = type;
  return v;
}

static BValue *
bv_int (gint64 i)
{
  BValue *v = bv_const (GRAFT_ATTR_INT);
  v->i = i;
  return v;
}

static BValue *
bv_bool (gboolean b)
{
  BValue *v = bv_const (GRAFT_ATTR_BOOL);
  v->i = b;
  return v;
}

/* ------------------------------------------------------------------ code index */

typedef struct {
  char *qualname;
  ScriptNode *node;            /* SCRIPT_CLASS, owned by its module */
  GHashTable *methods;         /* name → SCRIPT_DEF */
  GHashTable *attribute_types; /* name → char* type string */
  GHashTable *finals;          /* name → literal ScriptNode */
  gboolean is_namedtuple;
  GPtrArray *fields;           /* char*, NamedTuple fields */
  char *file;
} ClassInfo;

static void
class_info_free (ClassInfo *info)
{
  g_free (info->qualname);
  g_free (info->file);
  g_hash_table_unref (info->methods);
  g_hash_table_unref (info->attribute_types);
  g_hash_table_unref (info->finals);
  g_ptr_array_unref (info->fields);
  g_free (info);
}

typedef struct {
  ScriptNode *def;
  const char *file;
} FunctionInfo;

typedef struct {
  GraftTorchArchive *archive;
  GraftModel *model;
  GraftGraph *root;
  GCancellable *cancellable;
  GHashTable *files;          /* record → ScriptModule* (NULL if absent) */
  GHashTable *classes;        /* qualname → ClassInfo* */
  GHashTable *functions;      /* qualname → FunctionInfo* */
  GHashTable *tensors;        /* GraftPickleValue* → GraftValue* (root initializers) */
  GHashTable *group_classes;  /* module path → class name (demangled) */
  GHashTable *group_calls;    /* "graph|group path" → calls begun (for repeated calls of one module) */
  GraftPickleValue *constants;
  GraftPickleValue *root_object;
  gboolean big_endian;
  guint n_nodes;
  guint node_counter;
  guint64 work;               /* statements run + calls inlined (GRAFT_SCRIPT_MAX_WORK) */
  guint eval_depth;           /* eval() frames open, across inlined calls */
  guint module_visits;
  /* Dead-code elimination runs the build twice: the first pass finds the
   * nodes PyTorch's passes would delete (by creation sequence number), the
   * second creates those in a scratch graph that is dropped. */
  guint seq;
  gboolean second_pass;
  GHashTable *node_seq;       /* pass 1: GraftNode* → seq */
  GHashTable *dead_seq;       /* seq → TRUE */
  GPtrArray *forced_live;     /* pass 1: GraftValue* kept although unused */
  GraftGraph *trash;          /* pass 2: dead nodes */
  GHashTable *cat_lists;      /* GraftValue* of an aten::cat → BValue (list items, dim in .i) */
  GString *buffers;           /* module paths of buffers, one a line (GRAFT_TORCHSCRIPT_KEPT_BUFFERS) */
  GError **error;
} Builder;

char *
graft_script_demangle_class (const char *qualified_name)
{
  g_auto(GStrv) parts = g_strsplit (qualified_name, ".", -1);
  GString *out = g_string_new (NULL);
  for (guint k = 0; parts[k]; k++)
    {
      if ((k == 0 && strcmp (parts[k], "__torch__") == 0) || g_str_has_prefix (parts[k], "___torch_mangle_"))
        continue;
      if (out->len)
        g_string_append_c (out, '.');
      g_string_append (out, parts[k]);
    }
  return g_string_free (out, FALSE);
}

static gboolean
build_error (Builder *b, const char *file, guint line, const char *format, ...) G_GNUC_PRINTF (4, 5);

static gboolean
build_error (Builder *b, const char *file, guint line, const char *format, ...)
{
  if (b->error && *b->error)
    return FALSE;
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  if (file)
    g_set_error (b->error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED, "%s: %s line %u: %s",
                 graft_torch_archive_get_path (b->archive), file, line, message);
  else
    g_set_error (b->error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED, "%s: %s",
                 graft_torch_archive_get_path (b->archive), message);
  return FALSE;
}

static void
index_class (Builder *b, const char *qualname, ScriptNode *cls, const char *file)
{
  ClassInfo *info = g_new0 (ClassInfo, 1);
  info->qualname = g_strdup (qualname);
  info->node = cls;
  info->file = g_strdup (file);
  info->methods = g_hash_table_new (g_str_hash, g_str_equal);
  info->attribute_types = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  info->finals = g_hash_table_new (g_str_hash, g_str_equal);
  info->fields = g_ptr_array_new ();
  for (guint k = 0; k < cls->items->len; k++)
    {
      g_autofree char *base = script_node_dotted_name (g_ptr_array_index (cls->items, k));
      if (base && strcmp (base, "NamedTuple") == 0)
        info->is_namedtuple = TRUE;
    }
  for (guint k = 0; k < cls->body->len; k++)
    {
      ScriptNode *stmt = g_ptr_array_index (cls->body, k);
      if (stmt->kind == SCRIPT_DEF)
        g_hash_table_insert (info->methods, stmt->s, stmt);
      else if (stmt->kind == SCRIPT_ASSIGN && stmt->items->len == 1 && stmt->b)
        {
          ScriptNode *target = g_ptr_array_index (stmt->items, 0);
          if (target->kind != SCRIPT_NAME)
            continue;
          g_hash_table_insert (info->attribute_types, target->s, script_node_to_type_string (stmt->b));
          if (stmt->a)
            g_hash_table_insert (info->finals, target->s, stmt->a);
          else if (info->is_namedtuple)
            g_ptr_array_add (info->fields, target->s);
        }
    }
  g_hash_table_insert (b->classes, info->qualname, info);
}

/* Loads code/<a>/<b>.py for the module qualname "__torch__.a.b" once. */
static ScriptModule *
load_code_file (Builder *b, const char *module_qualname)
{
  g_autofree char *slashed = g_strdelimit (g_strdup (module_qualname), ".", '/');
  g_autofree char *record = g_strdup_printf ("code/%s.py", slashed);
  gpointer cached;
  if (g_hash_table_lookup_extended (b->files, record, NULL, &cached))
    return cached;
  /* A file that failed is not cached: a later lookup must not read it again
   * and set (and prefix) the error a second time. */
  if (b->error && *b->error)
    return NULL;

  ScriptModule *module = NULL;
  if (graft_torch_archive_has (b->archive, record))
    {
      g_autoptr(GBytes) bytes = graft_torch_archive_read (b->archive, record, b->error);
      if (bytes == NULL)
        return NULL;
      gsize len;
      const char *text = g_bytes_get_data (bytes, &len);
      module = script_module_parse (text, len, record, b->error);
      if (module == NULL)
        {
          g_prefix_error (b->error, "%s: ", graft_torch_archive_get_path (b->archive));
          return NULL;
        }
      for (guint k = 0; k < module->body->len; k++)
        {
          ScriptNode *stmt = g_ptr_array_index (module->body, k);
          g_autofree char *qual = stmt->s ? g_strdup_printf ("%s.%s", module_qualname, stmt->s) : NULL;
          if (stmt->kind == SCRIPT_CLASS)
            index_class (b, qual, stmt, module->path);
          else if (stmt->kind == SCRIPT_DEF)
            {
              FunctionInfo *fn = g_new0 (FunctionInfo, 1);
              fn->def = stmt;
              fn->file = module->path;
              g_hash_table_insert (b->functions, g_steal_pointer (&qual), fn);
            }
        }
    }
  g_hash_table_insert (b->files, g_strdup (record), module);
  return module;
}

/* Makes sure the file that would define qualname is indexed: tries every
 * split of "a.b.c.D" into a module path and a name. */
static void
ensure_indexed (Builder *b, const char *qualname)
{
  g_auto(GStrv) parts = g_strsplit (qualname, ".", -1);
  guint n = g_strv_length (parts);
  for (guint k = n - 1; k >= 1; k--)
    {
      g_autofree char *mod = NULL;
      char *saved = parts[k];
      parts[k] = NULL;
      mod = g_strjoinv (".", parts);
      parts[k] = saved;
      load_code_file (b, mod);
      if (g_hash_table_contains (b->classes, qualname) || g_hash_table_contains (b->functions, qualname))
        return;
      if (b->error && *b->error)
        return;
    }
}

static ClassInfo *
lookup_class (Builder *b, const char *qualname)
{
  ClassInfo *info = g_hash_table_lookup (b->classes, qualname);
  if (info == NULL)
    {
      ensure_indexed (b, qualname);
      info = g_hash_table_lookup (b->classes, qualname);
    }
  return info;
}

static FunctionInfo *
lookup_function (Builder *b, const char *qualname)
{
  FunctionInfo *fn = g_hash_table_lookup (b->functions, qualname);
  if (fn == NULL)
    {
      ensure_indexed (b, qualname);
      fn = g_hash_table_lookup (b->functions, qualname);
    }
  return fn;
}

/* ------------------------------------------------------------------ tensors */

static GraftValue *
tensor_value (Builder *b, GraftPickleValue *pv, const char *name, const char *dir)
{
  GraftValue *value = g_hash_table_lookup (b->tensors, pv);
  if (value)
    return value;
  GraftTensor *tensor = graft_torch_archive_load_tensor (b->archive, dir, pv, name, b->error);
  if (tensor == NULL)
    return NULL;
  if (b->big_endian && graft_dtype_get_size (tensor->dtype) > 1 && tensor->data)
    {
      gsize size = graft_dtype_get_size (tensor->dtype), n;
      const guint8 *src = g_bytes_get_data (tensor->data, &n);
      guint8 *dst = g_malloc (n);
      for (gsize e = 0; e + size <= n; e += size)
        for (gsize k = 0; k < size; k++)
          dst[e + k] = src[e + size - 1 - k];
      g_autoptr(GBytes) swapped = g_bytes_new_take (dst, n);
      graft_tensor_set_data (tensor, swapped, NULL);
    }
  value = graft_graph_new_anonymous_value (b->root, name);
  graft_graph_add_initializer (b->root, value, graft_tensor_ref (tensor));
  graft_model_add_tensor (b->model, tensor);
  g_hash_table_insert (b->tensors, pv, value);
  return value;
}

static gboolean
is_script_object (GraftPickleValue *v)
{
  return v && v->kind == GRAFT_PICKLE_OBJECT && g_str_has_prefix (v->s, "__torch__.");
}

/* The names a module class lists in its __buffers__ (the rest of its
 * tensors are parameters). */
static GHashTable *
class_buffer_names (Builder *b, const char *qualname)
{
  GHashTable *names = g_hash_table_new (g_str_hash, g_str_equal);
  ClassInfo *info = lookup_class (b, qualname);
  for (guint k = 0; info != NULL && k < info->node->body->len; k++)
    {
      ScriptNode *stmt = g_ptr_array_index (info->node->body, k);
      ScriptNode *target = stmt->kind == SCRIPT_ASSIGN && stmt->items->len == 1 ? g_ptr_array_index (stmt->items, 0)
                                                                                 : NULL;
      if (target == NULL || target->kind != SCRIPT_NAME || strcmp (target->s, "__buffers__") != 0 || stmt->a == NULL
          || stmt->a->kind != SCRIPT_LIST)
        continue;
      for (guint i = 0; i < stmt->a->items->len; i++)
        {
          ScriptNode *item = g_ptr_array_index (stmt->a->items, i);
          if (item->kind == SCRIPT_STRING)
            g_hash_table_add (names, item->s);
        }
    }
  return names;
}

/* Parameters and buffers become root initializers named by module path,
 * in pickle order; module paths remember their class for the groups. */
static gboolean
collect_parameters (Builder *b, GraftPickleValue *object, const char *path)
{
  if (++b->module_visits > GRAFT_SCRIPT_MAX_MODULE_VISITS)
    {
      g_set_error (b->error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                   "%s: data.pkl reaches more than %d submodules (one module shared at every level?), at %s",
                   graft_torch_archive_get_path (b->archive), GRAFT_SCRIPT_MAX_MODULE_VISITS, path);
      return FALSE;
    }
  g_autofree char *cls = graft_script_demangle_class (object->s);
  g_hash_table_insert (b->group_classes, g_strdup (path), g_steal_pointer (&cls));
  GraftPickleValue *state = object->state;
  if (state == NULL || state->kind != GRAFT_PICKLE_DICT)
    return TRUE;
  g_autoptr(GHashTable) buffer_names = class_buffer_names (b, object->s);
  for (guint k = 0; k + 1 < state->items->len; k += 2)
    {
      const char *key = graft_pickle_value_get_string (g_ptr_array_index (state->items, k));
      GraftPickleValue *v = g_ptr_array_index (state->items, k + 1);
      if (key == NULL)
        continue;
      g_autofree char *child = *path ? g_strdup_printf ("%s.%s", path, key) : g_strdup (key);
      if (v->kind == GRAFT_PICKLE_TENSOR)
        {
          if (tensor_value (b, v, child, "data") == NULL)
            return FALSE;
          if (g_hash_table_contains (buffer_names, key))
            g_string_append_printf (b->buffers, "%s\n", child);
        }
      else if (is_script_object (v))
        {
          if (!collect_parameters (b, v, child))
            return FALSE;
        }
    }
  return TRUE;
}

/* ------------------------------------------------------------------ scopes and contexts */

typedef struct _Scope Scope;
struct _Scope {
  GHashTable *vars;     /* char* → BValue* */
  GPtrArray *order;     /* char*, assignment order (owned by vars' keys) */
  Scope *parent;
};

static Scope *
scope_new (Scope *parent)
{
  Scope *scope = g_new0 (Scope, 1);
  scope->vars = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) bv_unref);
  scope->order = g_ptr_array_new ();
  scope->parent = parent;
  return scope;
}

static void
scope_free (Scope *scope)
{
  g_hash_table_unref (scope->vars);
  g_ptr_array_unref (scope->order);
  g_free (scope);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Scope, scope_free)

static void
scope_bind (Scope *scope, const char *name, BValue *value /* transfer full */)
{
  /* insert() keeps the existing key, so order's pointers stay valid */
  if (!g_hash_table_contains (scope->vars, name))
    {
      char *copy = g_strdup (name);
      g_hash_table_insert (scope->vars, copy, value);
      g_ptr_array_add (scope->order, copy);
    }
  else
    g_hash_table_insert (scope->vars, g_strdup (name), value);
}

static BValue *
scope_lookup (Scope *scope, const char *name)
{
  for (; scope; scope = scope->parent)
    {
      BValue *v = g_hash_table_lookup (scope->vars, name);
      if (v)
        return v;
    }
  return NULL;
}

typedef struct {
  Builder *b;
  GraftGraph *graph;
  char *module_path;       /* group for new nodes */
  const char *object_path; /* module path of self (differs from module_path in a repeated call) */
  Scope *scope;
  const char *file;
  guint depth;
  BValue *ret;
  const char *hint;        /* name for the next node's output */
  /* TRUE inside every callee of the root forward: PyTorch inlines each
   * callee's optimized graph (inlined, peephole-optimized, constants
   * propagated), while the root forward itself is only inlined. */
  gboolean optimized;
} Ctx;

static void
ensure_group_classes (Builder *b, GraftGroup *group)
{
  for (; group && group->parent; group = group->parent)
    if (group->class_name == NULL)
      {
        const char *cls = g_hash_table_lookup (b->group_classes, group->path);
        if (cls)
          group->class_name = g_strdup (cls);
      }
}

/* One unit of work (a statement run, a call inlined): bounded in total,
 * and the load's cancellable is checked every 256. */
static gboolean
spend_work (Ctx *ctx, guint line)
{
  Builder *b = ctx->b;
  if (++b->work > GRAFT_SCRIPT_MAX_WORK)
    return build_error (b, ctx->file, line, "inlining runs more than %d statements and calls (a call tree that "
                        "grows at every level?)", GRAFT_SCRIPT_MAX_WORK);
  if (b->work % 256 == 0 && g_cancellable_is_cancelled (b->cancellable))
    {
      g_set_error (b->error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_CANCELLED, "Loading was cancelled");
      return FALSE;
    }
  return TRUE;
}

static GraftNode *
add_node (Ctx *ctx, const char *domain, const char *op_type, guint line)
{
  Builder *b = ctx->b;
  if (++b->n_nodes > GRAFT_SCRIPT_MAX_NODES)
    {
      build_error (b, ctx->file, line, "the inlined graph exceeds %u nodes", GRAFT_SCRIPT_MAX_NODES);
      return NULL;
    }
  guint seq = ++b->seq;
  if (b->second_pass && g_hash_table_contains (b->dead_seq, GUINT_TO_POINTER (seq)))
    return graft_graph_add_node (b->trash, domain, op_type, "dead");
  g_autofree char *name = g_strdup_printf ("%s%s%s_%u", ctx->module_path, *ctx->module_path ? "/" : "",
                                           op_type, ++b->node_counter);
  GraftNode *node = graft_graph_add_node (ctx->graph, domain, op_type, name);
  if (!b->second_pass)
    g_hash_table_insert (b->node_seq, node, GUINT_TO_POINTER (seq));
  GraftGroup *group = ctx->graph->root_group;
  if (*ctx->module_path)
    {
      g_auto(GStrv) parts = g_strsplit (ctx->module_path, ".", -1);
      group = graft_group_ensure_path (ctx->graph->root_group, (const char *const *) parts, g_strv_length (parts));
      ensure_group_classes (b, group);
      /* graft_graph_add_node() put the node in the root group (last). */
      GPtrArray *root_nodes = ctx->graph->root_group->nodes;
      if (node->group == ctx->graph->root_group && root_nodes->len > 0 &&
          g_ptr_array_index (root_nodes, root_nodes->len - 1) == node)
        {
          g_ptr_array_remove_index (root_nodes, root_nodes->len - 1);
          node->group = NULL;
          graft_group_add_node (group, node);
        }
    }
  node->source_range = g_strdup_printf ("%s:%u", ctx->file ? ctx->file : "", line);
  return node;
}

static GraftValue *
add_output (Ctx *ctx, GraftNode *node, const char *hint)
{
  GraftValue *value = graft_graph_new_anonymous_value (node->graph, hint ? hint : node->op_type);
  graft_node_add_output (node, value);
  return value;
}

static GraftAttribute *
const_attribute (BValue *v, const char *name)
{
  switch (v->ctype)
    {
    case GRAFT_ATTR_INT:
      return graft_attribute_new_int (name, v->i);
    case GRAFT_ATTR_FLOAT:
      return graft_attribute_new_float (name, v->f);
    case GRAFT_ATTR_STRING:
      return graft_attribute_new_string (name, v->s);
    case GRAFT_ATTR_BOOL:
      {
        GraftAttribute *a = graft_attribute_new (name, GRAFT_ATTR_BOOL);
        a->i = v->i;
        return a;
      }
    default:
      return graft_attribute_new (name, GRAFT_ATTR_NONE);
    }
}

/* A constant list as one attribute, if its elements allow it. */
static GraftAttribute *
constlist_attribute (BValue *v, const char *name)
{
  gboolean all_int = TRUE, all_num = TRUE, all_str = TRUE;
  for (guint k = 0; k < v->items->len; k++)
    {
      BValue *e = g_ptr_array_index (v->items, k);
      all_int &= e->ctype == GRAFT_ATTR_INT || e->ctype == GRAFT_ATTR_BOOL;
      all_num &= e->ctype == GRAFT_ATTR_INT || e->ctype == GRAFT_ATTR_BOOL || e->ctype == GRAFT_ATTR_FLOAT;
      all_str &= e->ctype == GRAFT_ATTR_STRING;
    }
  if (all_int)
    {
      g_autofree gint64 *ints = g_new0 (gint64, MAX (v->items->len, 1));
      for (guint k = 0; k < v->items->len; k++)
        ints[k] = ((BValue *) g_ptr_array_index (v->items, k))->i;
      return graft_attribute_new_ints (name, ints, v->items->len);
    }
  if (all_num)
    {
      g_autofree double *floats = g_new0 (double, v->items->len);
      for (guint k = 0; k < v->items->len; k++)
        {
          BValue *e = g_ptr_array_index (v->items, k);
          floats[k] = e->ctype == GRAFT_ATTR_FLOAT ? e->f : (double) e->i;
        }
      return graft_attribute_new_floats (name, floats, v->items->len);
    }
  if (all_str)
    {
      GraftAttribute *a = graft_attribute_new (name, GRAFT_ATTR_STRINGS);
      a->strings = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
      for (guint k = 0; k < v->items->len; k++)
        {
          const char *s = ((BValue *) g_ptr_array_index (v->items, k))->s;
          g_ptr_array_add (a->strings, g_bytes_new (s, strlen (s)));
        }
      return a;
    }
  return NULL;
}

static GraftValue *materialize (Ctx *ctx, BValue *v, guint line);

/* Adds an argument: graph values become inputs, constants attributes
 * named after the keyword or the position. */
static gboolean
add_argument (Ctx *ctx, GraftNode *node, BValue *v, const char *keyword, guint position, guint line)
{
  g_autofree char *name = keyword ? g_strdup (keyword) : g_strdup_printf ("arg%u", position);
  if (v->kind == BV_CONST)
    {
      graft_node_add_attribute (node, const_attribute (v, name));
      return TRUE;
    }
  if (v->kind == BV_CONSTLIST)
    {
      GraftAttribute *a = constlist_attribute (v, name);
      if (a)
        {
          graft_node_add_attribute (node, a);
          return TRUE;
        }
    }
  if (v->kind == BV_MODULE || v->kind == BV_FUNCTION)
    {
      graft_node_add_attribute (node, graft_attribute_new_string (name, v->kind == BV_MODULE ? v->path : v->qualname));
      return TRUE;
    }
  GraftValue *value = materialize (ctx, v, line);
  if (value == NULL)
    return FALSE;
  graft_node_add_input (node, value);
  return TRUE;
}

static GraftValue *
materialize (Ctx *ctx, BValue *v, guint line)
{
  GraftNode *node;
  switch (v->kind)
    {
    case BV_RUNTIME:
      return v->value;
    case BV_CONSTLIST:
      {
        GraftAttribute *a = constlist_attribute (v, "value");
        if (a == NULL)
          {
            if ((node = add_node (ctx, "prim", "ListConstruct", line)) == NULL)
              return NULL;
            for (guint k = 0; k < v->items->len; k++)
              if (!add_argument (ctx, node, g_ptr_array_index (v->items, k), NULL, k, line))
                return NULL;
            return add_output (ctx, node, "list");
          }
        if ((node = add_node (ctx, "prim", "Constant", line)) == NULL)
          {
            graft_attribute_free (a);
            return NULL;
          }
        graft_node_add_attribute (node, a);
        return add_output (ctx, node, "const");
      }
    case BV_CONST:
    case BV_MODULE:
    case BV_FUNCTION:
      if ((node = add_node (ctx, "prim", "Constant", line)) == NULL)
        return NULL;
      if (!add_argument (ctx, node, v, "value", 0, line))
        return NULL;
      return add_output (ctx, node, "const");
    case BV_TUPLE:
      {
        g_autoptr(GPtrArray) inputs = g_ptr_array_new ();
        for (guint k = 0; k < v->items->len; k++)
          {
            GraftValue *e = materialize (ctx, g_ptr_array_index (v->items, k), line);
            if (e == NULL)
              return NULL;
            g_ptr_array_add (inputs, e);
          }
        if ((node = add_node (ctx, "prim", "TupleConstruct", line)) == NULL)
          return NULL;
        for (guint k = 0; k < inputs->len; k++)
          graft_node_add_input (node, g_ptr_array_index (inputs, k));
        GraftValue *out = add_output (ctx, node, "tuple");
        out->kind = GRAFT_VALUE_OBJECT;
        out->type_string = g_strdup ("Tuple");
        return out;
      }
    }
  return NULL;
}

static void
set_value_type (GraftValue *value, const char *type)
{
  if (type == NULL || value == NULL)
    return;
  g_free (value->type_string);
  value->type_string = g_strdup (type);
  if (strcmp (type, "Tensor") == 0 || g_str_has_prefix (type, "Optional[Tensor"))
    value->kind = strcmp (type, "Tensor") == 0 ? GRAFT_VALUE_TENSOR : GRAFT_VALUE_OPTIONAL;
  else if (g_str_has_prefix (type, "List["))
    value->kind = GRAFT_VALUE_SEQUENCE;
  else if (g_str_has_prefix (type, "Dict["))
    value->kind = GRAFT_VALUE_MAP;
  else if (g_str_has_prefix (type, "Optional["))
    value->kind = GRAFT_VALUE_OPTIONAL;
  else if (strcmp (type, "int") == 0 || strcmp (type, "float") == 0 || strcmp (type, "bool") == 0 ||
           strcmp (type, "str") == 0 || strcmp (type, "number") == 0)
    value->kind = GRAFT_VALUE_SCALAR;
  else
    value->kind = GRAFT_VALUE_OBJECT;
}

/* ------------------------------------------------------------------ expressions */

static BValue *eval (Ctx *ctx, ScriptNode *e);
static gboolean exec_block (Ctx *ctx, GPtrArray *body);
static char *element_type (const char *type, guint index);
static BValue *emit_op (Ctx *ctx, const char *domain, const char *op, GPtrArray *args, GPtrArray *keywords,
                        guint n_outputs, guint line);

static char *
type_of (ScriptNode *e)
{
  return script_node_to_type_string (e);
}

static GPtrArray *
eval_list (Ctx *ctx, GPtrArray *items)
{
  GPtrArray *out = bv_list ();
  for (guint k = 0; k < items->len; k++)
    {
      BValue *v = eval (ctx, g_ptr_array_index (items, k));
      if (v == NULL)
        {
          g_ptr_array_unref (out);
          return NULL;
        }
      g_ptr_array_add (out, v);
    }
  return out;
}

/* 0: never None, 1: always None, 2: unknown (PyTorch's peephole pass
 * decides "x is None" from the static type alone). */
static int
none_state (BValue *v)
{
  if (v->kind == BV_CONST)
    return v->ctype == GRAFT_ATTR_NONE ? 1 : 0;
  if (v->kind != BV_RUNTIME)
    return 0;
  if (v->type == NULL || g_str_has_prefix (v->type, "Optional[") || strcmp (v->type, "Any") == 0)
    return 2;
  return strcmp (v->type, "NoneType") == 0 ? 1 : 0;
}

static gboolean
const_number (BValue *v, double *out, gboolean *is_float)
{
  if (v->kind != BV_CONST)
    return FALSE;
  if (v->ctype == GRAFT_ATTR_INT || v->ctype == GRAFT_ATTR_BOOL)
    {
      *out = (double) v->i;
      *is_float = FALSE;
      return TRUE;
    }
  if (v->ctype == GRAFT_ATTR_FLOAT)
    {
      *out = v->f;
      *is_float = TRUE;
      return TRUE;
    }
  return FALSE;
}

/* An int by construction: x.size(d), len(l), int(v), x.dim(), or int
 * arithmetic of those (the builder does not type aten outputs). */
static gboolean
is_int_value (GraftValue *value, guint depth)
{
  if (value->type_string != NULL)
    return strcmp (value->type_string, "int") == 0;
  GraftNode *producer = value->producer;
  if (producer == NULL || depth > 8)
    return FALSE;
  const char *op = producer->op;
  if (strcmp (op, "aten::size") == 0)
    return producer->inputs->len + producer->attributes->len == 2;
  if (strcmp (op, "aten::len") == 0 || strcmp (op, "aten::Int") == 0 || strcmp (op, "aten::dim") == 0 ||
      strcmp (op, "aten::numel") == 0)
    return TRUE;
  if (strcmp (op, "aten::add") != 0 && strcmp (op, "aten::sub") != 0 && strcmp (op, "aten::mul") != 0 &&
      strcmp (op, "aten::floordiv") != 0)
    return FALSE;
  for (guint i = 0; i < producer->attributes->len; i++)
    if (((GraftAttribute *) producer->attributes->pdata[i])->type != GRAFT_ATTR_INT)
      return FALSE;
  for (guint i = 0; i < producer->inputs->len; i++)
    if (!is_int_value (producer->inputs->pdata[i], depth + 1))
      return FALSE;
  return producer->inputs->len > 0;
}

static gboolean
is_runtime_int (BValue *v)
{
  return v != NULL && v->kind == BV_RUNTIME && !v->opaque && v->value != NULL && is_int_value (v->value, 0);
}

/* Constant propagation on immutable values (run by PyTorch on every
 * compiled function) and the peephole rules of its optimized graphs. */
static BValue *
fold_op (Ctx *ctx, const char *domain, const char *op, GPtrArray *args, guint n_outputs)
{
  if (n_outputs != 1 || strcmp (domain, "aten") != 0)
    return NULL;
  guint n = args->len;
  BValue *a = n > 0 ? g_ptr_array_index (args, 0) : NULL;
  BValue *b = n > 1 ? g_ptr_array_index (args, 1) : NULL;

  if ((strcmp (op, "__is__") == 0 || strcmp (op, "__isnot__") == 0) && n == 2)
    {
      gboolean is = op[2] == 'i' && op[4] == '_';
      int na = none_state (a), nb = none_state (b);
      gboolean both_const = a->kind == BV_CONST && b->kind == BV_CONST;
      if (both_const || ctx->optimized)
        {
          if (na == 1 && nb == 1)
            return bv_bool (is);
          if ((na == 1 && nb == 0) || (na == 0 && nb == 1))
            return bv_bool (!is);
        }
      return NULL;
    }
  if (ctx->optimized && a && a->kind == BV_RUNTIME && !a->opaque && a->value->producer)
    {
      const char *producer = a->value->producer->op;
      if ((strcmp (op, "Int") == 0 || strcmp (op, "Float") == 0 || strcmp (op, "ScalarImplicit") == 0) && n == 1 &&
          strcmp (producer, "prim::NumToTensor") == 0 && a->value->producer->inputs->len == 1)
        return bv_runtime_typed (g_ptr_array_index (a->value->producer->inputs, 0),
                                 op[0] == 'I' ? "int" : op[0] == 'F' ? "float" : "number");
      if (strcmp (op, "dim") == 0 && n == 1)
        {
          if (strcmp (producer, "aten::conv1d") == 0)
            return bv_int (3);
          if (strcmp (producer, "aten::conv2d") == 0)
            return bv_int (4);
          if (strcmp (producer, "aten::conv3d") == 0)
            return bv_int (5);
        }
    }

  /* PyTorch's peephole rules for int arithmetic with a neutral constant:
   * x + 0, 0 + x, x - 0, x * 1, 1 * x and x // 1 are x (group_norm's
   * N*C // num_groups with one group). */
  if (ctx->optimized && n == 2 && (strcmp (op, "add") == 0 || strcmp (op, "sub") == 0 || strcmp (op, "mul") == 0 ||
                                   strcmp (op, "floordiv") == 0))
    {
      gint64 neutral = op[0] == 'a' || op[0] == 's' ? 0 : 1;
      gboolean commutes = op[0] == 'a' || op[0] == 'm';
      if (is_runtime_int (a) && b->kind == BV_CONST && b->ctype == GRAFT_ATTR_INT && b->i == neutral)
        return bv_ref (a);
      if (commutes && is_runtime_int (b) && a->kind == BV_CONST && a->ctype == GRAFT_ATTR_INT && a->i == neutral)
        return bv_ref (b);
    }

  /* list idioms: len and constant indexing of a list literal that is
   * never mutated */
  if (ctx->optimized && a && (a->kind == BV_CONSTLIST || (a->kind == BV_RUNTIME && a->items && !a->mutated)))
    {
      if (strcmp (op, "len") == 0 && n == 1)
        return bv_int (a->items->len);
      if (strcmp (op, "__getitem__") == 0 && n == 2 && a->items->len == 1)
        return bv_ref (g_ptr_array_index (a->items, 0));
      if (strcmp (op, "__getitem__") == 0 && n == 2 && b->kind == BV_CONST && b->ctype == GRAFT_ATTR_INT)
        {
          gint64 i = b->i < 0 ? b->i + (gint64) a->items->len : b->i;
          if (i >= 0 && i < (gint64) a->items->len)
            return bv_ref (g_ptr_array_index (a->items, i));
        }
    }

  /* dict idioms: len of a dict display that is never mutated (torch 2.x
   * TransformerEncoderLayer counts empty dicts on its fast-path check) */
  if (ctx->optimized && a && a->kind == BV_RUNTIME && a->dict_literal && !a->mutated && strcmp (op, "len") == 0 &&
      n == 1)
    return bv_int (a->dict_entries);

  for (guint k = 0; k < n; k++)
    if (((BValue *) g_ptr_array_index (args, k))->kind != BV_CONST)
      return NULL;
  double x = 0, y = 0;
  gboolean fx = FALSE, fy = FALSE;
  gboolean nums = n == 2 && const_number (a, &x, &fx) && const_number (b, &y, &fy);
  gboolean strs = n == 2 && a->ctype == GRAFT_ATTR_STRING && b->ctype == GRAFT_ATTR_STRING;
  static const char *const compare[] = { "eq", "ne", "lt", "gt", "le", "ge" };
  for (guint k = 0; k < G_N_ELEMENTS (compare); k++)
    if (strcmp (op, compare[k]) == 0 && (nums || strs))
      {
        int c = strs ? strcmp (a->s, b->s) : (x < y ? -1 : x > y ? 1 : 0);
        gboolean r[] = { c == 0, c != 0, c < 0, c > 0, c <= 0, c >= 0 };
        return bv_bool (r[k]);
      }
  if (nums && (strcmp (op, "add") == 0 || strcmp (op, "sub") == 0 || strcmp (op, "mul") == 0))
    {
      double r = op[0] == 'a' ? x + y : op[0] == 's' ? x - y : x * y;
      if (fx || fy)
        {
          BValue *v = bv_const (GRAFT_ATTR_FLOAT);
          v->f = r;
          return v;
        }
      return bv_int ((gint64) r);
    }
  if (n == 1 && strcmp (op, "__not__") == 0 && a->ctype == GRAFT_ATTR_BOOL)
    return bv_bool (!a->i);
  if (nums && !fx && !fy && (strcmp (op, "__and__") == 0 || strcmp (op, "__or__") == 0))
    return a->ctype == GRAFT_ATTR_BOOL && b->ctype == GRAFT_ATTR_BOOL
           ? bv_bool (op[2] == 'a' ? (a->i && b->i) : (a->i || b->i))
           : bv_int (op[2] == 'a' ? (a->i & b->i) : (a->i | b->i));
  if (n == 1 && (strcmp (op, "Int") == 0 || strcmp (op, "Float") == 0 || strcmp (op, "Bool") == 0) &&
      const_number (a, &x, &fx))
    {
      if (op[0] == 'I')
        return bv_int ((gint64) x);
      if (op[0] == 'B')
        return bv_bool (x != 0);
      BValue *v = bv_const (GRAFT_ATTR_FLOAT);
      v->f = x;
      return v;
    }
  if (n == 1 && strcmp (op, "len") == 0 && a->ctype == GRAFT_ATTR_STRING)
    return bv_int ((gint64) strlen (a->s));
  /* aten::format is never folded (its messages die with DCE instead). */
  if (n == 1 && strcmp (op, "device") == 0 && a->ctype == GRAFT_ATTR_STRING)
    {
      BValue *v = bv_const (GRAFT_ATTR_STRING);
      v->s = g_strdup (a->s);
      return v;
    }
  return NULL;
}

static gboolean
op_mutates (const char *domain, const char *op)
{
  static const char *const list_ops[] = { "append", "insert", "extend", "pop", "remove", "clear", "_set_item",
                                          "__setitem__", "__delitem__", "update", "setdefault", "popitem",
                                          "reverse", "sort" };
  gsize len = strlen (op);
  if (strcmp (domain, "aten") != 0)
    return strcmp (domain, "prim") == 0 && (strcmp (op, "SetAttr") == 0 || strcmp (op, "CallMethod") == 0);
  if (len > 1 && op[len - 1] == '_' && op[len - 2] != '_')
    return TRUE;
  for (guint k = 0; k < G_N_ELEMENTS (list_ops); k++)
    if (strcmp (op, list_ops[k]) == 0)
      return TRUE;
  return FALSE;
}

/* A ListConstruct result remembers its elements for the list idioms. */
static BValue *
list_literal (Ctx *ctx, GPtrArray *items, guint line)
{
  BValue *r = emit_op (ctx, "prim", "ListConstruct", items, NULL, 1, line);
  if (r && r->kind == BV_RUNTIME && items->len > 0)
    r->items = g_ptr_array_ref (items);
  return r;
}

/* Names the call's arguments after the aten schema that takes them
 * ("stride" for arg3, "weight" for the second input), for the labels and
 * the sidebar; kernels still read them by position. */
static void
name_aten_arguments (GraftNode *node, const char *op, GPtrArray *keywords, const int *input_of_argument,
                     guint n_arguments)
{
  g_autofree char *qualified = g_strconcat ("aten::", op, NULL);
  g_autofree gboolean *is_value = g_new0 (gboolean, MAX (n_arguments, 1));
  g_autofree guint *argument_index = g_new0 (guint, MAX (n_arguments, 1));
  const GraftAtenSchema *schema;

  for (guint k = 0; k < n_arguments; k++)
    is_value[k] = input_of_argument[k] >= 0;
  schema = graft_aten_schema_find (qualified, n_arguments, keywords ? (const char *const *) keywords->pdata : NULL,
                                   is_value, argument_index);
  if (schema == NULL)
    return;
  for (guint k = 0; k < n_arguments; k++)
    {
      const char *name = schema->arguments[argument_index[k]].name;
      const char *keyword = keywords ? g_ptr_array_index (keywords, k) : NULL;
      g_autofree char *attribute = NULL;

      if (input_of_argument[k] >= 0)
        graft_node_set_input_argument_name (node, input_of_argument[k], name);
      else if (keyword == NULL)
        {
          attribute = g_strdup_printf ("arg%u", k);
          if (graft_node_get_attribute (node, attribute) != NULL)
            graft_node_set_attribute_argument_name (node, attribute, name);
        }
    }
}

/* Emits domain::op with the evaluated arguments and n_outputs results;
 * returns the single result, or a tuple of them. */
static BValue *
emit_op (Ctx *ctx, const char *domain, const char *op, GPtrArray *args, GPtrArray *keywords,
         guint n_outputs, guint line)
{
  BValue *folded = fold_op (ctx, domain, op, args, n_outputs);
  if (folded)
    return folded;
  if (op_mutates (domain, op))
    for (guint k = 0; k < args->len; k++)
      ((BValue *) g_ptr_array_index (args, k))->mutated = TRUE;
  GraftNode *node = add_node (ctx, domain, op, line);
  if (node == NULL)
    return NULL;
  g_autofree int *input_of_argument = g_new (int, MAX (args->len, 1));
  for (guint k = 0; k < args->len; k++)
    {
      guint n_inputs = node->inputs->len;
      if (!add_argument (ctx, node, g_ptr_array_index (args, k),
                         keywords ? g_ptr_array_index (keywords, k) : NULL, k, line))
        return NULL;
      input_of_argument[k] = node->inputs->len > n_inputs ? (int) n_inputs : -1;
    }
  if (strcmp (domain, "aten") == 0)
    name_aten_arguments (node, op, keywords, input_of_argument, args->len);
  /* aten results are never None (unknown otherwise), which is all the
   * peephole rules need. */
  const char *type = strcmp (domain, "aten") == 0 && strcmp (op, "__getitem__") != 0 ? "<aten>" : NULL;
  if (n_outputs == 1)
    return bv_runtime_typed (add_output (ctx, node, ctx->hint), type);
  BValue *tuple = bv_new (BV_TUPLE);
  tuple->items = bv_list ();
  for (guint k = 0; k < n_outputs; k++)
    g_ptr_array_add (tuple->items, bv_runtime_typed (add_output (ctx, node, ctx->hint), type));
  return tuple;
}

static BValue *
emit_op1 (Ctx *ctx, const char *domain, const char *op, BValue *arg, guint line)
{
  g_autoptr(GPtrArray) args = g_ptr_array_new ();
  g_ptr_array_add (args, arg);
  return emit_op (ctx, domain, op, args, NULL, 1, line);
}

static BValue *
const_from_literal (ScriptNode *e)
{
  BValue *v;
  switch (e->kind)
    {
    case SCRIPT_INT:
      return bv_int (e->i);
    case SCRIPT_BOOL:
      return bv_bool ((gboolean) e->i);
    case SCRIPT_FLOAT:
      v = bv_const (GRAFT_ATTR_FLOAT);
      v->f = e->f;
      return v;
    case SCRIPT_STRING:
      v = bv_const (GRAFT_ATTR_STRING);
      v->s = g_strdup (e->s);
      return v;
    case SCRIPT_NONE:
      return bv_const (GRAFT_ATTR_NONE);
    default:
      return NULL;
    }
}

static BValue *
const_from_pickle (GraftPickleValue *p)
{
  BValue *v;
  switch (p->kind)
    {
    case GRAFT_PICKLE_INT:
      return bv_int (p->i);
    case GRAFT_PICKLE_BOOL:
      return bv_bool ((gboolean) p->i);
    case GRAFT_PICKLE_FLOAT:
      v = bv_const (GRAFT_ATTR_FLOAT);
      v->f = p->f;
      return v;
    case GRAFT_PICKLE_STRING:
      v = bv_const (GRAFT_ATTR_STRING);
      v->s = g_strdup (p->s);
      return v;
    case GRAFT_PICKLE_NONE:
      return bv_const (GRAFT_ATTR_NONE);
    default:
      return NULL;
    }
}

static BValue *
module_value (GraftPickleValue *object, const char *path)
{
  BValue *v = bv_new (BV_MODULE);
  v->object = object;
  v->path = g_strdup (path);
  v->qualname = g_strdup (object->s);
  return v;
}

/* The items of a list, tuple or dict when every one is a string, as a
 * STRINGS attribute (a dict's keys and values alternate); else NULL. */
static GraftAttribute *
strings_attribute (GraftPickleValue *v, const char *name)
{
  /* an empty dict (timm's attention_bias_cache: Dict[str, Tensor]) is
   * one of strings as far as its first use can tell */
  if (v->kind == GRAFT_PICKLE_DICT && (v->items == NULL || v->items->len == 0))
    return graft_attribute_new (name, GRAFT_ATTR_STRINGS);
  if (v->items == NULL || v->items->len == 0)
    return NULL;
  for (guint k = 0; k < v->items->len; k++)
    if (((GraftPickleValue *) g_ptr_array_index (v->items, k))->kind != GRAFT_PICKLE_STRING)
      return NULL;
  GraftAttribute *a = graft_attribute_new (name, GRAFT_ATTR_STRINGS);
  for (guint k = 0; k < v->items->len; k++)
    {
      GraftPickleValue *e = g_ptr_array_index (v->items, k);
      g_ptr_array_add (a->strings, g_bytes_new (e->s, e->s_len));
    }
  return a;
}

/* Non-tensor module attributes (use_res_connect, num_heads...) reach the
 * graph as prim::GetAttr; their value from data.pkl goes along as the
 * "value" attribute so the runtime can evaluate them. A list or tuple of
 * numbers (ConvNeXt's permute dims, timm's img_size) becomes an INTS or
 * FLOATS value, of strings a STRINGS one; a dict of strings to strings
 * (torchvision's IntermediateLayerGetter.return_layers), or an empty dict
 * (a cache the module fills), goes as "dict_items", its keys and values
 * alternating. */
static void
add_attribute_value (GraftNode *node, GraftPickleValue *v)
{
  g_autoptr(BValue) c = v ? const_from_pickle (v) : NULL;
  GraftAttribute *strings;

  if (c)
    graft_node_add_attribute (node, const_attribute (c, "value"));
  else if (v != NULL && v->kind == GRAFT_PICKLE_DICT && (strings = strings_attribute (v, "dict_items")) != NULL)
    graft_node_add_attribute (node, strings);
  else if (v != NULL && (v->kind == GRAFT_PICKLE_LIST || v->kind == GRAFT_PICKLE_TUPLE) &&
           (strings = strings_attribute (v, "value")) != NULL)
    graft_node_add_attribute (node, strings);
  else if (v != NULL && (v->kind == GRAFT_PICKLE_LIST || v->kind == GRAFT_PICKLE_TUPLE) && v->items != NULL)
    {
      /* a list of numbers (ConvNeXt's Permute dims): an int or float list, as a constant list would be */
      gboolean all_int = TRUE, all_num = TRUE;
      for (guint k = 0; k < v->items->len; k++)
        {
          GraftPickleValue *e = g_ptr_array_index (v->items, k);
          all_int &= e->kind == GRAFT_PICKLE_INT || e->kind == GRAFT_PICKLE_BOOL;
          all_num &= e->kind == GRAFT_PICKLE_INT || e->kind == GRAFT_PICKLE_BOOL || e->kind == GRAFT_PICKLE_FLOAT;
        }
      g_autofree gint64 *ints = g_new0 (gint64, MAX (v->items->len, 1));
      g_autofree double *floats = g_new0 (double, MAX (v->items->len, 1));
      for (guint k = 0; all_num && k < v->items->len; k++)
        {
          GraftPickleValue *e = g_ptr_array_index (v->items, k);
          ints[k] = e->i;
          floats[k] = e->kind == GRAFT_PICKLE_FLOAT ? e->f : (double) e->i;
        }
      if (all_int)
        graft_node_add_attribute (node, graft_attribute_new_ints ("value", ints, v->items->len));
      else if (all_num)
        graft_node_add_attribute (node, graft_attribute_new_floats ("value", floats, v->items->len));
    }
}

/* A Dict[str, Tensor] attribute that holds tensors (timm's LeViT fills
 * attention_bias_cache once, and torch.jit.save keeps what it holds): its
 * keys as "dict_keys", its tensors as the node's inputs, in order. */
static gboolean
add_tensor_dict (Builder *b, GraftNode *node, GraftPickleValue *v, const char *path)
{
  if (v == NULL || v->kind != GRAFT_PICKLE_DICT || v->items == NULL || v->items->len == 0 || v->items->len % 2 != 0)
    return FALSE;
  for (guint k = 0; k < v->items->len; k += 2)
    if (((GraftPickleValue *) g_ptr_array_index (v->items, k))->kind != GRAFT_PICKLE_STRING ||
        ((GraftPickleValue *) g_ptr_array_index (v->items, k + 1))->kind != GRAFT_PICKLE_TENSOR)
      return FALSE;
  GraftAttribute *keys = graft_attribute_new ("dict_keys", GRAFT_ATTR_STRINGS);
  for (guint k = 0; k < v->items->len; k += 2)
    {
      GraftPickleValue *key = g_ptr_array_index (v->items, k);
      g_autofree char *text = g_strndup (key->s, key->s_len);
      g_autofree char *name = g_strdup_printf ("%s.%s", path, text);
      GraftValue *tensor = tensor_value (b, g_ptr_array_index (v->items, k + 1), name, "data");
      if (tensor == NULL)
        {
          graft_attribute_free (keys);
          return FALSE;
        }
      g_ptr_array_add (keys->strings, g_bytes_new (key->s, key->s_len));
      graft_node_add_input (node, tensor);
    }
  graft_node_add_attribute (node, keys);
  return TRUE;
}

/* self.name on a module object. */
static BValue *
module_attribute (Ctx *ctx, BValue *module, const char *name, guint line)
{
  Builder *b = ctx->b;
  if (module->attrs)
    {
      BValue *set = g_hash_table_lookup (module->attrs, name);
      if (set)
        return bv_ref (set);
    }
  GraftPickleValue *state = module->object ? module->object->state : NULL;
  GraftPickleValue *v = graft_pickle_dict_lookup (state, name);
  if (strlen (module->path) > GRAFT_SCRIPT_MAX_PATH_LENGTH)
    {
      build_error (b, ctx->file, line, "module path longer than %d characters (a module that contains itself?)",
                   GRAFT_SCRIPT_MAX_PATH_LENGTH);
      return NULL;
    }
  g_autofree char *path = *module->path ? g_strdup_printf ("%s.%s", module->path, name) : g_strdup (name);

  if (v)
    {
      if (is_script_object (v))
        return module_value (v, path);
      ClassInfo *info = lookup_class (b, module->qualname);
      const char *type = info ? g_hash_table_lookup (info->attribute_types, name) : NULL;
      if (v->kind == GRAFT_PICKLE_TENSOR)
        {
          GraftValue *value = tensor_value (b, v, path, "data");
          return value ? bv_runtime_typed (value, type ? type : "Tensor") : NULL;
        }
      /* Other attributes are read at run time (prim::GetAttr), so PyTorch
       * never folds them; only Final class constants are constants. */
      GraftNode *node = add_node (ctx, "prim", "GetAttr", line);
      if (node == NULL)
        return NULL;
      graft_node_add_attribute (node, graft_attribute_new_string ("name", path));
      if (!add_tensor_dict (b, node, v, path))
        add_attribute_value (node, v);
      GraftValue *out = add_output (ctx, node, name);
      set_value_type (out, type);
      return bv_runtime_typed (out, type);
    }
  ClassInfo *info = lookup_class (b, module->qualname);
  if (info)
    {
      ScriptNode *final = g_hash_table_lookup (info->finals, name);
      if (final)
        return eval (ctx, final);
    }
  if (b->error && *b->error)
    return NULL;
  /* An object restored by __setstate__ (quantized modules): its declared
   * attributes are read at run time, which is all forward needs. */
  const char *declared = info && (module->object == NULL || (state && state->kind != GRAFT_PICKLE_DICT))
                         ? g_hash_table_lookup (info->attribute_types, name) : NULL;
  if (declared)
    {
      GraftNode *node = add_node (ctx, "prim", "GetAttr", line);
      if (node == NULL)
        return NULL;
      graft_node_add_attribute (node, graft_attribute_new_string ("name", path));
      add_attribute_value (node, v);
      GraftValue *out = add_output (ctx, node, name);
      set_value_type (out, declared);
      return bv_runtime_typed (out, declared);
    }
  if (state && state->kind != GRAFT_PICKLE_DICT)
    {
      build_error (b, ctx->file, line, "%s (%s) restores its attributes with __setstate__, which Graft does not run; "
                   "attribute \"%s\" is unknown", *module->path ? module->path : "<root>", module->qualname, name);
      return NULL;
    }
  build_error (b, ctx->file, line, "module %s (%s) has no attribute \"%s\"",
               *module->path ? module->path : "<root>", module->qualname, name);
  return NULL;
}

/* Values PyTorch keeps because no pass runs after inlining into the root
 * forward: what a root-level call returns. */
static void
keep_alive (Builder *b, BValue *v)
{
  if (b->second_pass || v == NULL)
    return;
  if (v->kind == BV_RUNTIME)
    g_ptr_array_add (b->forced_live, v->value);
  else if (v->kind == BV_TUPLE)
    for (guint k = 0; k < v->items->len; k++)
      keep_alive (b, g_ptr_array_index (v->items, k));
}

/* A callee of the root forward is optimized on its own: its parameters
 * are opaque values of their declared types, whatever the caller passes. */
static gboolean
seal_parameters (Ctx *ctx, ScriptNode *def, Scope *scope, guint line)
{
  for (guint p = 0; p < def->params->len; p++)
    {
      ScriptNode *param = g_ptr_array_index (def->params, p);
      BValue *v = g_hash_table_lookup (scope->vars, param->s);
      if (v == NULL || v->kind == BV_MODULE || v->kind == BV_FUNCTION)
        continue;
      GraftValue *value = materialize (ctx, v, line);
      if (value == NULL)
        return FALSE;
      g_autofree char *type = param->a ? type_of (param->a) : NULL;
      BValue *sealed = bv_runtime_typed (value, type);
      sealed->opaque = TRUE;
      if (!ctx->b->second_pass)
        g_ptr_array_add (ctx->b->forced_live, value);
      scope_bind (scope, param->s, sealed);
    }
  return TRUE;
}

/* PyTorch inlines a callee's graph into the root forward after the root's
 * own constant propagation, so the root never folds on a number or bool a
 * call returns (torch 2.x's `not torch.backends.mha.get_fastpath_enabled()`
 * keeps its aten::__not__). */
static BValue *
seal_scalar_result (Ctx *ctx, BValue *ret, guint line)
{
  static const struct { GraftAttrType ctype; const char *type; } scalars[] = {
    { GRAFT_ATTR_BOOL, "bool" }, { GRAFT_ATTR_INT, "int" }, { GRAFT_ATTR_FLOAT, "float" },
  };
  if (ret == NULL || ret->kind != BV_CONST)
    return ret;
  for (guint k = 0; k < G_N_ELEMENTS (scalars); k++)
    if (ret->ctype == scalars[k].ctype)
      {
        GraftValue *value = materialize (ctx, ret, line);
        bv_unref (ret);
        if (value == NULL)
          return NULL;
        BValue *sealed = bv_runtime_typed (value, scalars[k].type);
        sealed->opaque = TRUE;
        return sealed;
      }
  return ret;
}

static BValue *
call_function (Ctx *ctx, ScriptNode *def, const char *file, BValue *self, GPtrArray *args,
               GPtrArray *keywords, const char *module_path, guint line)
{
  Builder *b = ctx->b;
  if (!spend_work (ctx, line))
    return NULL;
  if (ctx->depth + 1 > GRAFT_SCRIPT_MAX_CALL_DEPTH)
    {
      build_error (b, ctx->file, line, "calls nested deeper than %d (recursive code?)", GRAFT_SCRIPT_MAX_CALL_DEPTH);
      return NULL;
    }
  g_autoptr(Scope) scope = scope_new (NULL);
  Ctx inner = { .b = b, .graph = ctx->graph, .module_path = (char *) module_path,
                .object_path = self ? self->path : ctx->object_path, .scope = scope,
                .file = file, .depth = ctx->depth + 1 };
  guint next = 0;
  GPtrArray *params = def->params;
  g_autofree gboolean *bound = g_new0 (gboolean, params->len + 1);

  if (self)
    {
      if (params->len == 0)
        {
          build_error (b, file, def->line, "method %s has no self parameter", def->s);
          return NULL;
        }
      scope_bind (scope, ((ScriptNode *) g_ptr_array_index (params, 0))->s, bv_ref (self));
      bound[0] = TRUE;
      next = 1;
    }
  for (guint k = 0; k < args->len; k++)
    {
      const char *kw = keywords ? g_ptr_array_index (keywords, k) : NULL;
      guint slot = G_MAXUINT;
      if (kw)
        {
          for (guint p = 0; p < params->len; p++)
            if (strcmp (((ScriptNode *) g_ptr_array_index (params, p))->s, kw) == 0)
              slot = p;
        }
      else
        slot = next++;
      if (slot >= params->len || bound[slot])
        {
          build_error (b, ctx->file, line, "call to %s: argument %u does not match a parameter", def->s, k);
          return NULL;
        }
      bound[slot] = TRUE;
      scope_bind (scope, ((ScriptNode *) g_ptr_array_index (params, slot))->s, bv_ref (g_ptr_array_index (args, k)));
    }
  for (guint p = 0; p < params->len; p++)
    {
      ScriptNode *param = g_ptr_array_index (params, p);
      if (bound[p])
        continue;
      if (param->b == NULL)
        {
          build_error (b, ctx->file, line, "call to %s: no value for parameter \"%s\"", def->s, param->s);
          return NULL;
        }
      BValue *dflt = eval (&inner, param->b);
      if (dflt == NULL)
        return NULL;
      scope_bind (scope, param->s, dflt);
    }
  inner.optimized = TRUE;
  if (!ctx->optimized && !seal_parameters (ctx, def, scope, line))
    return NULL;
  if (!exec_block (&inner, def->body))
    {
      bv_unref (inner.ret);
      return NULL;
    }
  BValue *ret = inner.ret ? inner.ret : bv_const (GRAFT_ATTR_NONE);
  if (!ctx->optimized)
    {
      ret = seal_scalar_result (ctx, ret, line);
      keep_alive (b, ret);
    }
  return ret;
}

/* The group a call of the module at object_path puts its nodes in. A module
 * called twice (BasicBlock's one ReLU) gets one group per call, "relu" and
 * "relu_1" like torch.onnx.export's scopes: a single group for both calls
 * would be a box both before and after the nodes between the calls, a cycle
 * that the layout can only draw with edges running backwards. */
static char *
call_group_path (Ctx *ctx, const char *object_path)
{
  Builder *b = ctx->b;
  const char *caller = ctx->object_path ? ctx->object_path : "";
  const char *dot = strrchr (object_path, '.');
  g_autofree char *parent = dot ? g_strndup (object_path, dot - object_path) : g_strdup ("");
  g_autofree char *base = NULL;
  g_autofree char *key = NULL;
  guint calls;
  char *path;

  if (strcmp (object_path, caller) == 0)
    return g_strdup (ctx->module_path);
  /* A child of the caller nests in the caller's group, which may itself be
   * a repeated call's. */
  if (strcmp (parent, caller) == 0 && *ctx->module_path)
    base = g_strconcat (ctx->module_path, ".", dot ? dot + 1 : object_path, NULL);
  else
    base = g_strdup (object_path);
  key = g_strdup_printf ("%p|%s", (void *) ctx->graph, base);
  calls = GPOINTER_TO_UINT (g_hash_table_lookup (b->group_calls, key));
  g_hash_table_insert (b->group_calls, g_steal_pointer (&key), GUINT_TO_POINTER (calls + 1));
  if (calls == 0 && strcmp (base, object_path) == 0)
    return g_steal_pointer (&base);
  path = calls == 0 ? g_steal_pointer (&base) : g_strdup_printf ("%s_%u", base, calls);
  if (!g_hash_table_contains (b->group_classes, path))
    {
      const char *cls = g_hash_table_lookup (b->group_classes, object_path);
      if (cls)
        g_hash_table_insert (b->group_classes, g_strdup (path), g_strdup (cls));
    }
  return path;
}

static BValue *
call_method (Ctx *ctx, BValue *module, const char *method, GPtrArray *args, GPtrArray *keywords, guint line)
{
  Builder *b = ctx->b;
  ClassInfo *info = lookup_class (b, module->qualname);
  ScriptNode *def = info ? g_hash_table_lookup (info->methods, method) : NULL;
  if (def == NULL)
    {
      if (!(b->error && *b->error))
        build_error (b, ctx->file, line, "class %s has no method \"%s\" in code/", module->qualname, method);
      return NULL;
    }
  g_autofree char *group_path = call_group_path (ctx, module->path);
  return call_function (ctx, def, info->file, module, args, keywords, group_path, line);
}


static BValue *
eval_annotate (Ctx *ctx, ScriptNode *call)
{
  if (call->items->len != 2)
    {
      build_error (ctx->b, ctx->file, call->line, "annotate() takes a type and a value");
      return NULL;
    }
  g_autofree char *type = type_of (g_ptr_array_index (call->items, 0));
  ScriptNode *value = g_ptr_array_index (call->items, 1);
  BValue *result;

  if (value->kind == SCRIPT_LIST)
    {
      g_autoptr(GPtrArray) items = eval_list (ctx, value->items);
      if (items == NULL)
        return NULL;
      result = list_literal (ctx, items, call->line);
    }
  else if (value->kind == SCRIPT_CALL && value->a->kind == SCRIPT_ATTRIBUTE && strcmp (value->a->s, "tolist") == 0)
    {
      g_autoptr(BValue) base = eval (ctx, value->a->a);
      if (base == NULL)
        return NULL;
      result = emit_op1 (ctx, "prim", "tolist", base, call->line);
    }
  else
    {
      g_autoptr(BValue) inner = eval (ctx, value);
      if (inner == NULL)
        return NULL;
      if (value->kind == SCRIPT_DICT || value->kind == SCRIPT_NONE || inner->kind != BV_RUNTIME)
        return g_steal_pointer (&inner);
      const char *op = strcmp (type, "int") == 0 ? "IntImplicit" : strcmp (type, "float") == 0 ? "FloatImplicit"
                     : strcmp (type, "number") == 0 || strcmp (type, "Scalar") == 0 ? "ScalarImplicit" : NULL;
      if (op == NULL)
        {
          set_value_type (inner->value, type);
          return g_steal_pointer (&inner);
        }
      result = emit_op1 (ctx, "aten", op, inner, call->line);
    }
  if (result && result->kind == BV_RUNTIME)
    {
      set_value_type (result->value, type);
      g_free (result->type);
      result->type = g_strdup (type);
    }
  return result;
}

/* PyTorch's peephole pass splices the list of an inner aten::cat (same
 * constant dim, list literal) into the list of the cat that consumes it:
 * one splice, the first in list order, per optimization of each enclosing
 * callee, so a cat at callee depth d gets up to d splices. */
static BValue *
emit_cat (Ctx *ctx, GPtrArray *args, GPtrArray *keywords, guint line)
{
  Builder *b = ctx->b;
  BValue *list = args->len == 2 ? g_ptr_array_index (args, 0) : NULL;
  BValue *dim = args->len == 2 ? g_ptr_array_index (args, 1) : NULL;
  gboolean literal = list && list->kind == BV_RUNTIME && list->items && !list->mutated &&
                     dim->kind == BV_CONST && dim->ctype == GRAFT_ATTR_INT && (keywords == NULL ||
                     (g_ptr_array_index (keywords, 0) == NULL && g_ptr_array_index (keywords, 1) == NULL));
  if (literal && ctx->optimized)
    {
      g_autoptr(GPtrArray) items = g_ptr_array_ref (list->items);
      gboolean changed = FALSE;
      for (guint round = 0; round < ctx->depth; round++)
        {
          gboolean spliced = FALSE;
          for (guint k = 0; k < items->len && !spliced; k++)
            {
              BValue *item = g_ptr_array_index (items, k);
              BValue *inner = item->kind == BV_RUNTIME ? g_hash_table_lookup (b->cat_lists, item->value) : NULL;
              if (inner == NULL || inner->i != dim->i || item->value->consumers->len != 1)
                continue;
              GPtrArray *next = bv_list ();
              for (guint j = 0; j < items->len; j++)
                if (j == k)
                  for (guint e = 0; e < inner->items->len; e++)
                    g_ptr_array_add (next, bv_ref (g_ptr_array_index (inner->items, e)));
                else
                  g_ptr_array_add (next, bv_ref (g_ptr_array_index (items, j)));
              g_ptr_array_unref (items);
              items = next;
              spliced = changed = TRUE;
            }
          if (!spliced)
            break;
        }
      if (changed)
        {
          BValue *merged = list_literal (ctx, items, line);
          if (merged == NULL)
            return NULL;
          g_ptr_array_index (args, 0) = merged;
          bv_unref (list);
          list = merged;
        }
    }
  BValue *result = emit_op (ctx, "aten", "cat", args, keywords, 1, line);
  if (result && literal && result->kind == BV_RUNTIME)
    {
      /* remember the list (with the dim in .i) for an enclosing cat */
      BValue *record = bv_new (BV_TUPLE);
      record->items = g_ptr_array_ref (list->items);
      record->i = dim->i;
      g_hash_table_insert (b->cat_lists, result->value, record);
    }
  return result;
}

/* unchecked_cast(T, x), uninitialized(T), isinstance(x, T): the type T
 * becomes the value's type or the node's "types" attribute. */
static BValue *
eval_type_builtin (Ctx *ctx, ScriptNode *call, const char *dotted, const char *hint)
{
  gboolean cast = strcmp (dotted, "unchecked_cast") == 0;
  gboolean uninit = strcmp (dotted, "uninitialized") == 0;
  g_autofree char *type = NULL;
  g_autoptr(GPtrArray) args = bv_list ();
  ScriptNode *type_node = uninit ? (call->items->len ? g_ptr_array_index (call->items, 0) : NULL)
                        : cast ? (call->items->len == 2 ? g_ptr_array_index (call->items, 0) : NULL)
                        : (call->items->len == 2 ? g_ptr_array_index (call->items, 1) : NULL);
  if (type_node == NULL)
    {
      build_error (ctx->b, ctx->file, call->line, "%s() has the wrong number of arguments", dotted);
      return NULL;
    }
  type = type_of (type_node);
  if (!uninit)
    {
      BValue *v = eval (ctx, g_ptr_array_index (call->items, cast ? 1 : 0));
      if (v == NULL)
        return NULL;
      if (cast && v->kind != BV_RUNTIME)
        return v;
      g_ptr_array_add (args, v);
    }
  ctx->hint = hint;
  BValue *result = emit_op (ctx, "prim", uninit ? "Uninitialized" : cast ? "unchecked_cast" : "isinstance",
                            args, NULL, 1, call->line);
  if (result && !cast && !uninit)
    graft_node_add_attribute (result->value->producer, graft_attribute_new_string ("types", type));
  else if (result)
    {
      set_value_type (result->value, type);
      g_free (result->type);
      result->type = g_strdup (type);
    }
  return result;
}

/* getattr(module, "name") */
static BValue *
eval_getattr (Ctx *ctx, ScriptNode *call)
{
  g_autoptr(BValue) base = eval (ctx, g_ptr_array_index (call->items, 0));
  ScriptNode *name = g_ptr_array_index (call->items, 1);

  if (base == NULL)
    return NULL;
  if (base->kind != BV_MODULE || name->kind != SCRIPT_STRING)
    {
      build_error (ctx->b, ctx->file, call->line, "getattr() on something that is not a module");
      return NULL;
    }
  return module_attribute (ctx, base, name->s, call->line);
}

/* x.method(…): inlined on a module, a prim::CallMethod on anything else. */
static BValue *
eval_method_call (Ctx *ctx, ScriptNode *call, guint n_outputs, const char *hint)
{
  ScriptNode *f = call->a;
  g_autoptr(BValue) base = eval (ctx, f->a);
  if (base == NULL)
    return NULL;
  g_autoptr(GPtrArray) args = eval_list (ctx, call->items);
  if (args == NULL)
    return NULL;
  if (base->kind == BV_MODULE)
    return call_method (ctx, base, f->s, args, call->names, call->line);
  g_ptr_array_insert (args, 0, bv_ref (base));
  ctx->hint = hint;
  BValue *r = emit_op (ctx, "prim", "CallMethod", args, NULL, n_outputs, call->line);
  if (r && r->kind == BV_RUNTIME)
    graft_node_add_attribute (r->value->producer, graft_attribute_new_string ("name", f->s));
  return r;
}

/* Python builtins, torch.X and ops.NS.X: one node each. FALSE when dotted
 * names none of them. */
static gboolean
emit_named_op (Ctx *ctx, ScriptNode *call, const char *dotted, GPtrArray *args, guint n_outputs, BValue **result)
{
  static const struct { const char *name; const char *domain; const char *op; } builtins[] = {
    { "int", "aten", "Int" }, { "float", "aten", "Float" }, { "bool", "aten", "Bool" },
    { "str", "aten", "str" }, { "sorted", "aten", "sorted" }, { "print", "prim", "Print" },
    { "torch.autograd.grad", "aten", "grad" }, { "torch.autograd.backward", "aten", "backward" },
    { "len", "aten", "len" },
  };

  for (guint k = 0; k < G_N_ELEMENTS (builtins); k++)
    if (strcmp (dotted, builtins[k].name) == 0)
      {
        *result = emit_op (ctx, builtins[k].domain, builtins[k].op, args, call->names, n_outputs, call->line);
        return TRUE;
      }
  if (strcmp (dotted, "torch.cat") == 0 && n_outputs == 1)
    {
      *result = emit_cat (ctx, args, call->names, call->line);
      return TRUE;
    }
  if (g_str_has_prefix (dotted, "torch.") && strchr (dotted + 6, '.') == NULL)
    {
      *result = emit_op (ctx, "aten", dotted + 6, args, call->names, n_outputs, call->line);
      return TRUE;
    }
  if (g_str_has_prefix (dotted, "ops."))
    {
      g_auto(GStrv) parts = g_strsplit (dotted, ".", -1);
      if (g_strv_length (parts) == 3)
        {
          *result = emit_op (ctx, parts[1], parts[2], args, call->names, n_outputs, call->line);
          return TRUE;
        }
    }
  return FALSE;
}

/* Class.__new__(Class) of a class from code/: a new, empty object. NULL
 * when dotted is not that. */
static BValue *
new_code_object (Ctx *ctx, const char *dotted)
{
  if (!g_str_has_prefix (dotted, "__torch__.") || !g_str_has_suffix (dotted, ".__new__"))
    return NULL;
  g_autofree char *cls = g_strndup (dotted, strlen (dotted) - strlen (".__new__"));
  if (!lookup_class (ctx->b, cls))
    return NULL;
  BValue *object = bv_new (BV_MODULE);
  object->qualname = g_steal_pointer (&cls);
  object->path = g_strdup (ctx->object_path ? ctx->object_path : "");
  object->attrs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) bv_unref);
  return object;
}

/* A function of code/ (inlined) or a NamedTuple class, by qualified name. */
static BValue *
call_by_qualname (Ctx *ctx, ScriptNode *call, const char *qualname, GPtrArray *args)
{
  Builder *b = ctx->b;
  FunctionInfo *fn = lookup_function (b, qualname);

  if (fn)
    return call_function (ctx, fn->def, fn->file, NULL, args, call->names, ctx->module_path, call->line);
  ClassInfo *cls = lookup_class (b, qualname);
  if (cls && cls->is_namedtuple)
    {
      BValue *tuple = bv_new (BV_TUPLE);
      tuple->items = g_ptr_array_ref (args);
      return tuple;
    }
  if (b->error && *b->error)
    return NULL;
  build_error (b, ctx->file, call->line, "cannot find %s in code/", qualname);
  return NULL;
}

static BValue *
eval_call (Ctx *ctx, ScriptNode *call, guint n_outputs)
{
  ScriptNode *f = call->a;
  g_autofree char *dotted = script_node_dotted_name (f);
  const char *hint = ctx->hint;
  ctx->hint = NULL;

  if (dotted && strcmp (dotted, "annotate") == 0)
    return eval_annotate (ctx, call);
  if (dotted && (strcmp (dotted, "unchecked_cast") == 0 || strcmp (dotted, "uninitialized") == 0 ||
                 strcmp (dotted, "isinstance") == 0))
    return eval_type_builtin (ctx, call, dotted, hint);
  if (dotted && strcmp (dotted, "getattr") == 0 && call->items->len == 2)
    return eval_getattr (ctx, call);
  if (f->kind == SCRIPT_ATTRIBUTE && (dotted == NULL || (!g_str_has_prefix (dotted, "torch.") &&
                                                         !g_str_has_prefix (dotted, "ops.") &&
                                                         !g_str_has_prefix (dotted, "__torch__."))))
    return eval_method_call (ctx, call, n_outputs, hint);

  g_autoptr(GPtrArray) args = eval_list (ctx, call->items);
  if (args == NULL)
    return NULL;
  ctx->hint = hint;

  BValue *result = NULL;
  if (dotted && emit_named_op (ctx, call, dotted, args, n_outputs, &result))
    return result;
  if (dotted && (result = new_code_object (ctx, dotted)) != NULL)
    return result;

  /* A function or class: by qualified name, or through a variable. */
  if (dotted && g_str_has_prefix (dotted, "__torch__."))
    return call_by_qualname (ctx, call, dotted, args);
  if (f->kind == SCRIPT_NAME)
    {
      BValue *fv = scope_lookup (ctx->scope, f->s);
      if (fv && fv->kind == BV_FUNCTION)
        return call_by_qualname (ctx, call, fv->qualname, args);
    }
  build_error (ctx->b, ctx->file, call->line, "unsupported call to %s", dotted ? dotted : "an expression");
  return NULL;
}

static BValue *
eval_subscript (Ctx *ctx, ScriptNode *e)
{
  g_autoptr(BValue) base = eval (ctx, e->a);
  if (base == NULL)
    return NULL;
  ScriptNode *index = e->b;

  if (index->kind == SCRIPT_SLICE)
    {
      if (base->kind == BV_TUPLE && (index->a == NULL || index->a->kind == SCRIPT_INT) &&
          (index->b == NULL || index->b->kind == SCRIPT_INT) && index->c == NULL)
        {
          gint64 n = base->items->len;
          gint64 lo = index->a ? index->a->i : 0, hi = index->b ? index->b->i : n;
          if (lo < 0) lo += n;
          if (hi < 0) hi += n;
          lo = CLAMP (lo, 0, n);
          hi = CLAMP (hi, lo, n);
          BValue *tuple = bv_new (BV_TUPLE);
          tuple->items = bv_list ();
          for (gint64 k = lo; k < hi; k++)
            g_ptr_array_add (tuple->items, bv_ref (g_ptr_array_index (base->items, k)));
          return tuple;
        }
      g_autoptr(GPtrArray) args = bv_list ();
      g_ptr_array_add (args, bv_ref (base));
      ScriptNode *bounds[] = { index->a, index->b };
      for (guint k = 0; k < 2; k++)
        g_ptr_array_add (args, bounds[k] ? eval (ctx, bounds[k]) : bv_const (GRAFT_ATTR_NONE));
      for (guint k = 0; k < args->len; k++)
        if (g_ptr_array_index (args, k) == NULL)
          return NULL;
      return emit_op (ctx, "prim", "TupleSlice", args, NULL, 1, e->line);
    }

  g_autoptr(BValue) key = eval (ctx, index);
  if (key == NULL)
    return NULL;
  if (base->kind == BV_TUPLE && key->kind == BV_CONST && key->ctype == GRAFT_ATTR_INT)
    {
      gint64 n = base->items->len, i = key->i < 0 ? key->i + n : key->i;
      if (i < 0 || i >= n)
        {
          build_error (ctx->b, ctx->file, e->line, "tuple index %" G_GINT64_FORMAT " out of range", key->i);
          return NULL;
        }
      return bv_ref (g_ptr_array_index (base->items, i));
    }
  if (base->kind == BV_MODULE && key->kind == BV_CONST)
    {
      g_autofree char *name = key->ctype == GRAFT_ATTR_INT ? g_strdup_printf ("%" G_GINT64_FORMAT, key->i)
                                                            : g_strdup (key->s ? key->s : "");
      return module_attribute (ctx, base, name, e->line);
    }
  /* The printer writes prim::TupleIndex as "(t)[i]" even for a plain
   * name, and aten::__getitem__ as "l[i]" (parentheses only around
   * expressions), so the spelling tells them apart. */
  gboolean tuple_index = FALSE;
  if (e->flag && e->a->kind == SCRIPT_NAME)
    tuple_index = TRUE;
  else if (e->flag && base->kind == BV_RUNTIME && base->value->type_string &&
           g_str_has_prefix (base->value->type_string, "Tuple"))
    tuple_index = TRUE;
  g_autoptr(GPtrArray) args = bv_list ();
  g_ptr_array_add (args, bv_ref (base));
  g_ptr_array_add (args, bv_ref (key));
  BValue *r = emit_op (ctx, tuple_index ? "prim" : "aten", tuple_index ? "TupleIndex" : "__getitem__", args, NULL, 1, e->line);
  if (r && r->kind == BV_RUNTIME && base->kind == BV_RUNTIME && key->kind == BV_CONST && key->ctype == GRAFT_ATTR_INT)
    {
      g_free (r->type);
      r->type = element_type (base->type, (guint) MAX (key->i, 0));
    }
  return r;
}

static BValue *
eval_binary (Ctx *ctx, ScriptNode *e)
{
  static const struct { const char *op; const char *aten; } map[] = {
    { "+", "add" }, { "-", "sub" }, { "*", "mul" }, { "/", "div" }, { "//", "floordiv" }, { "%", "remainder" },
    { "==", "eq" }, { "!=", "ne" }, { "<", "lt" }, { ">", "gt" }, { "<=", "le" }, { ">=", "ge" },
    { "and", "__and__" }, { "or", "__or__" }, { "&", "__and__" }, { "|", "__or__" }, { "^", "__xor__" },
    { "is", "__is__" }, { "is not", "__isnot__" }, { "in", "__contains__" }, { "@", "matmul" },
    { "<<", "__lshift__" }, { ">>", "__rshift__" },
  };
  const char *op = NULL;
  for (guint k = 0; k < G_N_ELEMENTS (map); k++)
    if (strcmp (map[k].op, e->s) == 0)
      op = map[k].aten;
  if (op == NULL)
    {
      build_error (ctx->b, ctx->file, e->line, "unsupported operator %s", e->s);
      return NULL;
    }
  g_autoptr(GPtrArray) args = bv_list ();
  BValue *l = eval (ctx, e->a);
  if (l == NULL)
    return NULL;
  g_ptr_array_add (args, l);
  BValue *r = eval (ctx, e->b);
  if (r == NULL)
    return NULL;
  g_ptr_array_add (args, r);
  return emit_op (ctx, "aten", op, args, NULL, 1, e->line);
}

static BValue *eval_expression (Ctx *ctx, ScriptNode *e);

/* Expressions are at most a few hundred deep (the parser's limit), but
 * inlined calls nest them: one bound on the whole recursion. */
static BValue *
eval (Ctx *ctx, ScriptNode *e)
{
  Builder *b = ctx->b;
  if (b->eval_depth >= GRAFT_SCRIPT_MAX_EVAL_DEPTH)
    {
      build_error (b, ctx->file, e->line, "expressions nested deeper than %d across inlined calls",
                   GRAFT_SCRIPT_MAX_EVAL_DEPTH);
      return NULL;
    }
  b->eval_depth++;
  BValue *v = eval_expression (ctx, e);
  b->eval_depth--;
  return v;
}

static BValue *
eval_expression (Ctx *ctx, ScriptNode *e)
{
  Builder *b = ctx->b;
  BValue *v;
  switch (e->kind)
    {
    case SCRIPT_INT: case SCRIPT_FLOAT: case SCRIPT_STRING: case SCRIPT_BOOL: case SCRIPT_NONE:
      return const_from_literal (e);
    case SCRIPT_ELLIPSIS:
      v = bv_const (GRAFT_ATTR_STRING);
      v->s = g_strdup ("...");
      return v;
    case SCRIPT_NAME:
      v = scope_lookup (ctx->scope, e->s);
      if (v)
        return bv_ref (v);
      build_error (b, ctx->file, e->line, "undefined name \"%s\"", e->s);
      return NULL;
    case SCRIPT_ATTRIBUTE:
      {
        g_autofree char *dotted = script_node_dotted_name (e);
        if (dotted && g_str_has_prefix (dotted, "CONSTANTS.c"))
          {
            guint64 n;
            if (!g_ascii_string_to_unsigned (dotted + 11, 10, 0, G_MAXUINT32, &n, NULL) ||
                n >= graft_pickle_value_get_length (b->constants))
              {
                build_error (b, ctx->file, e->line, "%s is not in constants.pkl", dotted);
                return NULL;
              }
            GraftPickleValue *c = graft_pickle_value_get_item (b->constants, (guint) n);
            if (c->kind == GRAFT_PICKLE_TENSOR)
              {
                GraftValue *value = tensor_value (b, c, dotted, "constants");
                return value ? bv_runtime_typed (value, "Tensor") : NULL;
              }
            v = const_from_pickle (c);
            if (v)
              return v;
            v = bv_const (GRAFT_ATTR_STRING);
            v->s = g_strdup (dotted);
            return v;
          }
        if (dotted && g_str_has_prefix (dotted, "__torch__."))
          {
            v = bv_new (BV_FUNCTION);
            v->qualname = g_steal_pointer (&dotted);
            return v;
          }
        g_autoptr(BValue) base = eval (ctx, e->a);
        if (base == NULL)
          return NULL;
        if (base->kind == BV_MODULE)
          return module_attribute (ctx, base, e->s, e->line);
        g_autoptr(GPtrArray) args = bv_list ();
        g_ptr_array_add (args, bv_ref (base));
        const char *op = strcmp (e->s, "value") == 0 ? "EnumValue" : strcmp (e->s, "name") == 0 ? "EnumName" : "GetAttr";
        BValue *r = emit_op (ctx, "prim", op, args, NULL, 1, e->line);
        if (r && strcmp (op, "GetAttr") == 0)
          graft_node_add_attribute (r->value->producer, graft_attribute_new_string ("name", e->s));
        return r;
      }
    case SCRIPT_CALL:
      return eval_call (ctx, e, 1);
    case SCRIPT_SUBSCRIPT:
      return eval_subscript (ctx, e);
    case SCRIPT_TUPLE:
      {
        GPtrArray *items = eval_list (ctx, e->items);
        if (items == NULL)
          return NULL;
        v = bv_new (BV_TUPLE);
        v->items = items;
        return v;
      }
    case SCRIPT_LIST:
      {
        g_autoptr(GPtrArray) items = eval_list (ctx, e->items);
        if (items == NULL)
          return NULL;
        gboolean all_const = items->len > 0;
        for (guint k = 0; k < items->len; k++)
          all_const &= ((BValue *) g_ptr_array_index (items, k))->kind == BV_CONST;
        if (all_const)
          {
            v = bv_new (BV_CONSTLIST);
            v->items = g_steal_pointer (&items);
            GraftAttribute *probe = constlist_attribute (v, "probe");
            if (probe != NULL)
              {
                graft_attribute_free (probe);
                return v;
              }
            items = g_steal_pointer (&v->items);
            bv_unref (v);
          }
        return list_literal (ctx, items, e->line);
      }
    case SCRIPT_DICT:
      {
        g_autoptr(GPtrArray) items = eval_list (ctx, e->items);
        if (items == NULL)
          return NULL;
        BValue *dict = emit_op (ctx, "prim", "DictConstruct", items, NULL, 1, e->line);
        if (dict && dict->kind == BV_RUNTIME)
          {
            dict->dict_literal = TRUE;
            dict->dict_entries = items->len / 2;
          }
        return dict;
      }
    case SCRIPT_UNARY:
      {
        g_autoptr(BValue) inner = eval (ctx, e->a);
        if (inner == NULL)
          return NULL;
        return emit_op1 (ctx, "aten", strcmp (e->s, "not") == 0 ? "__not__" : strcmp (e->s, "~") == 0 ? "bitwise_not" : "neg",
                         inner, e->line);
      }
    case SCRIPT_BINARY:
      return eval_binary (ctx, e);
    default:
      build_error (b, ctx->file, e->line, "unsupported expression");
      return NULL;
    }
}

/* ------------------------------------------------------------------ statements */

static gboolean
bind_target (Ctx *ctx, ScriptNode *target, BValue *value, guint line)
{
  if (target->kind == SCRIPT_NAME)
    {
      scope_bind (ctx->scope, target->s, bv_ref (value));
      return TRUE;
    }
  if (target->kind == SCRIPT_ATTRIBUTE)
    {
      g_autoptr(BValue) base = eval (ctx, target->a);
      if (base == NULL)
        return FALSE;
      if (base->kind == BV_MODULE && base->attrs)
        {
          /* an object built in the code: its fields are tracked here */
          g_hash_table_replace (base->attrs, g_strdup (target->s), bv_ref (value));
          return TRUE;
        }
      g_autoptr(GPtrArray) args = bv_list ();
      g_ptr_array_add (args, bv_ref (base));
      g_ptr_array_add (args, bv_ref (value));
      GraftNode *node = add_node (ctx, "prim", "SetAttr", line);
      if (node == NULL)
        return FALSE;
      graft_node_add_attribute (node, graft_attribute_new_string ("name", target->s));
      for (guint k = 0; k < args->len; k++)
        if (!add_argument (ctx, node, g_ptr_array_index (args, k), NULL, k, line))
          return FALSE;
      return TRUE;
    }
  if (target->kind == SCRIPT_SUBSCRIPT)
    {
      g_autoptr(GPtrArray) args = bv_list ();
      BValue *base = eval (ctx, target->a), *key = base ? eval (ctx, target->b) : NULL;
      if (key == NULL)
        {
          bv_unref (base);
          return FALSE;
        }
      g_ptr_array_add (args, base);
      g_ptr_array_add (args, key);
      g_ptr_array_add (args, bv_ref (value));
      GraftNode *node = add_node (ctx, "aten", "_set_item", line);
      if (node == NULL)
        return FALSE;
      for (guint k = 0; k < args->len; k++)
        if (!add_argument (ctx, node, g_ptr_array_index (args, k), NULL, k, line))
          return FALSE;
      return TRUE;
    }
  return build_error (ctx->b, ctx->file, line, "unsupported assignment target");
}

/* Element type index of "Tuple[A, B]" / "List[A]" (any index); lists of
 * an aten op are lists of non-None values. NULL if unknown. */
static char *
element_type (const char *type, guint index)
{
  if (type == NULL)
    return NULL;
  if (strcmp (type, "<aten>") == 0)
    return g_strdup ("<aten>");
  gboolean list = g_str_has_prefix (type, "List[");
  if (!list && !g_str_has_prefix (type, "Tuple["))
    return NULL;
  const char *p = strchr (type, '[') + 1;
  int depth = 0;
  guint k = 0;
  const char *start = p;
  for (; *p; p++)
    {
      if (*p == '[')
        depth++;
      else if (*p == ']' && depth-- == 0)
        break;
      else if (*p == ',' && depth == 0)
        {
          if (k == index && !list)
            return g_strstrip (g_strndup (start, (gsize) (p - start)));
          k++;
          start = p + 1;
        }
    }
  if (list || k == index)
    return g_strstrip (g_strndup (start, (gsize) (p - start)));
  return NULL;
}

/* a, b, = value  (TupleUnpack / ListUnpack) */
static gboolean
unpack (Ctx *ctx, GPtrArray *targets, BValue *value, guint line)
{
  guint n = targets->len;
  if (value->kind == BV_TUPLE || value->kind == BV_CONSTLIST)
    {
      if (value->items->len != n)
        return build_error (ctx->b, ctx->file, line, "cannot unpack %u values into %u names", value->items->len, n);
      for (guint k = 0; k < n; k++)
        if (!bind_target (ctx, g_ptr_array_index (targets, k), g_ptr_array_index (value->items, k), line))
          return FALSE;
      return TRUE;
    }
  if (value->kind != BV_RUNTIME)
    return build_error (ctx->b, ctx->file, line, "cannot unpack this value");
  gboolean is_list = (value->value->type_string && g_str_has_prefix (value->value->type_string, "List[")) ||
                     (value->type && (g_str_has_prefix (value->type, "List[") || strcmp (value->type, "<aten>") == 0));
  g_autoptr(GPtrArray) args = bv_list ();
  g_ptr_array_add (args, bv_ref (value));
  g_autoptr(BValue) result = emit_op (ctx, "prim", is_list ? "ListUnpack" : "TupleUnpack", args, NULL, n, line);
  if (result == NULL)
    return FALSE;
  for (guint k = 0; k < n; k++)
    {
      BValue *item = n == 1 ? result : g_ptr_array_index (result->items, k);
      g_free (item->type);
      item->type = element_type (value->type, k);
    }
  if (n == 1)
    return bind_target (ctx, g_ptr_array_index (targets, 0), result, line);
  for (guint k = 0; k < n; k++)
    if (!bind_target (ctx, g_ptr_array_index (targets, k), g_ptr_array_index (result->items, k), line))
      return FALSE;
  return TRUE;
}

static gboolean
exec_assign (Ctx *ctx, ScriptNode *stmt)
{
  GPtrArray *targets = stmt->items;
  ScriptNode *rhs = stmt->a;
  guint n = targets->len;

  if (rhs == NULL)
    {
      if (stmt->c)   /* augmented assignment x += y */
        {
          g_autoptr(BValue) v = eval (ctx, stmt->c);
          return v && bind_target (ctx, stmt->c->a, v, stmt->line);
        }
      return TRUE;   /* bare annotation "x : T" */
    }
  ScriptNode *first = g_ptr_array_index (targets, 0);
  ctx->hint = n == 1 && first->kind == SCRIPT_NAME ? first->s : NULL;

  /* a, b = x, y: parallel assignment (loop-carried values). */
  if (n > 1 && !stmt->flag && rhs->kind == SCRIPT_TUPLE && rhs->items->len == n)
    {
      ctx->hint = NULL;
      g_autoptr(GPtrArray) values = eval_list (ctx, rhs->items);
      if (values == NULL)
        return FALSE;
      for (guint k = 0; k < n; k++)
        if (!bind_target (ctx, g_ptr_array_index (targets, k), g_ptr_array_index (values, k), stmt->line))
          return FALSE;
      return TRUE;
    }
  /* a, b = torch.op(…): an operator with several outputs. */
  if (n > 1 && !stmt->flag && rhs->kind == SCRIPT_CALL)
    {
      g_autofree char *dotted = script_node_dotted_name (rhs->a);
      if (dotted && (g_str_has_prefix (dotted, "torch.") || g_str_has_prefix (dotted, "ops.")))
        {
          ctx->hint = NULL;
          g_autoptr(BValue) v = eval_call (ctx, rhs, n);
          return v && unpack (ctx, targets, v, stmt->line);
        }
    }
  g_autoptr(BValue) value = eval (ctx, rhs);
  ctx->hint = NULL;
  if (value == NULL)
    return FALSE;
  if (stmt->b && value->kind == BV_RUNTIME)
    {
      /* "x : Optional[Tensor] = y" widens the static type of x. */
      g_autofree char *type = type_of (stmt->b);
      BValue *widened = bv_runtime_typed (value->value, type);
      widened->opaque = value->opaque;
      bv_unref (value);
      value = widened;
    }
  if (n == 1 && !stmt->flag)
    return bind_target (ctx, first, value, stmt->line);
  return unpack (ctx, targets, value, stmt->line);
}

static BValue *
merge_branches (Ctx *ctx, GraftNode *node, GraftGraph *then_g, GraftGraph *else_g,
                BValue *tv, BValue *ev, const char *name, guint line)
{
  if (tv == ev || (tv->kind == BV_MODULE && ev->kind == BV_MODULE && tv->object && tv->object == ev->object) ||
      (tv->kind == BV_FUNCTION && ev->kind == BV_FUNCTION && strcmp (tv->qualname, ev->qualname) == 0))
    return bv_ref (tv);
  /* Constant propagation drops If outputs that are the same in both
   * branches (the same value, or equal constants). */
  if (tv->kind == BV_RUNTIME && ev->kind == BV_RUNTIME && tv->value == ev->value)
    return bv_ref (tv);
  if (tv->kind == BV_CONST && ev->kind == BV_CONST && tv->ctype == ev->ctype &&
      (tv->ctype == GRAFT_ATTR_NONE ||
       ((tv->ctype == GRAFT_ATTR_INT || tv->ctype == GRAFT_ATTR_BOOL) && tv->i == ev->i) ||
       (tv->ctype == GRAFT_ATTR_FLOAT && tv->f == ev->f) ||
       (tv->ctype == GRAFT_ATTR_STRING && strcmp (tv->s, ev->s) == 0)))
    return bv_ref (tv);
  if (tv->kind == BV_TUPLE && ev->kind == BV_TUPLE && tv->items->len == ev->items->len)
    {
      BValue *tuple = bv_new (BV_TUPLE);
      tuple->items = bv_list ();
      for (guint k = 0; k < tv->items->len; k++)
        {
          BValue *m = merge_branches (ctx, node, then_g, else_g, g_ptr_array_index (tv->items, k),
                                      g_ptr_array_index (ev->items, k), name, line);
          if (m == NULL)
            {
              bv_unref (tuple);
              return NULL;
            }
          g_ptr_array_add (tuple->items, m);
        }
      return tuple;
    }
  Ctx then_ctx = *ctx, else_ctx = *ctx;
  then_ctx.graph = then_g;
  else_ctx.graph = else_g;
  GraftValue *t = materialize (&then_ctx, tv, line);
  GraftValue *e = t ? materialize (&else_ctx, ev, line) : NULL;
  if (e == NULL)
    return NULL;
  graft_graph_add_output (then_g, t);
  graft_graph_add_output (else_g, e);
  GraftValue *out = add_output (ctx, node, name);
  const char *type = t->type_string ? t->type_string : e->type_string;
  if (type)
    set_value_type (out, type);
  int nt = none_state (tv), ne = none_state (ev);
  return bv_runtime_typed (out, nt == 0 && ne == 0 ? "<aten>" : nt == 1 && ne == 1 ? "NoneType" : NULL);
}

static gboolean
exec_if (Ctx *ctx, ScriptNode *stmt)
{
  g_autoptr(BValue) cond = eval (ctx, stmt->a);
  if (cond == NULL)
    return FALSE;
  /* Constant propagation inlines the taken branch of a constant if. */
  if (cond->kind == BV_CONST && (cond->ctype == GRAFT_ATTR_BOOL || cond->ctype == GRAFT_ATTR_INT))
    return exec_block (ctx, cond->i ? stmt->body : stmt->orelse);
  GraftNode *node = add_node (ctx, "prim", "If", stmt->line);
  if (node == NULL || !add_argument (ctx, node, cond, "cond", 0, stmt->line))
    return FALSE;
  GraftGraph *then_g = graft_graph_new ("then");
  GraftGraph *else_g = graft_graph_new ("else");
  graft_node_add_attribute (node, graft_attribute_new_graph ("then_branch", then_g));
  graft_node_adopt_subgraph (node, then_g);
  graft_node_add_attribute (node, graft_attribute_new_graph ("else_branch", else_g));
  graft_node_adopt_subgraph (node, else_g);

  g_autoptr(Scope) then_scope = scope_new (ctx->scope);
  g_autoptr(Scope) else_scope = scope_new (ctx->scope);
  Ctx then_ctx = *ctx, else_ctx = *ctx;
  then_ctx.graph = then_g;
  then_ctx.scope = then_scope;
  then_ctx.ret = NULL;
  else_ctx.graph = else_g;
  else_ctx.scope = else_scope;
  else_ctx.ret = NULL;
  if (!exec_block (&then_ctx, stmt->body) || !exec_block (&else_ctx, stmt->orelse))
    {
      bv_unref (then_ctx.ret);
      bv_unref (else_ctx.ret);
      return FALSE;
    }
  if (then_ctx.ret || else_ctx.ret)
    {
      /* Only old archives return from inside a branch; the value of the
       * taken branch is not known statically. */
      BValue *r = then_ctx.ret && else_ctx.ret
                  ? merge_branches (ctx, node, then_g, else_g, then_ctx.ret, else_ctx.ret, "ret", stmt->line)
                  : bv_ref (then_ctx.ret ? then_ctx.ret : else_ctx.ret);
      bv_unref (then_ctx.ret);
      bv_unref (else_ctx.ret);
      if (r == NULL)
        return FALSE;
      ctx->ret = r;
    }
  for (guint k = 0; k < then_scope->order->len; k++)
    {
      const char *name = g_ptr_array_index (then_scope->order, k);
      BValue *ev = g_hash_table_lookup (else_scope->vars, name);
      if (ev == NULL)
        continue;
      BValue *merged = merge_branches (ctx, node, then_g, else_g, g_hash_table_lookup (then_scope->vars, name),
                                       ev, name, stmt->line);
      if (merged == NULL)
        return FALSE;
      scope_bind (ctx->scope, name, merged);
    }
  return TRUE;
}

static void
collect_assigned (GPtrArray *body, GHashTable *names)
{
  for (guint k = 0; body && k < body->len; k++)
    {
      ScriptNode *stmt = g_ptr_array_index (body, k);
      if (stmt->kind == SCRIPT_ASSIGN)
        {
          for (guint t = 0; t < stmt->items->len; t++)
            {
              ScriptNode *target = g_ptr_array_index (stmt->items, t);
              if (target->kind == SCRIPT_NAME)
                g_hash_table_add (names, target->s);
            }
          if (stmt->c && stmt->c->a->kind == SCRIPT_NAME)
            g_hash_table_add (names, stmt->c->a->s);
        }
      collect_assigned (stmt->body, names);
      collect_assigned (stmt->orelse, names);
    }
}

static gboolean
exec_loop (Ctx *ctx, ScriptNode *stmt)
{
  Builder *b = ctx->b;
  gboolean is_for = stmt->kind == SCRIPT_FOR;
  const char *cond_name = NULL;
  g_autoptr(BValue) trip = NULL, cond = NULL;

  if (is_for)
    {
      ScriptNode *iter = stmt->a;
      g_autofree char *fn = iter->kind == SCRIPT_CALL ? script_node_dotted_name (iter->a) : NULL;
      if (fn == NULL || strcmp (fn, "range") != 0 || iter->items->len != 1 || stmt->items->len != 1 ||
          ((ScriptNode *) g_ptr_array_index (stmt->items, 0))->kind != SCRIPT_NAME)
        return build_error (b, ctx->file, stmt->line, "only \"for i in range(n)\" loops are supported");
      if ((trip = eval (ctx, g_ptr_array_index (iter->items, 0))) == NULL)
        return FALSE;
      cond = bv_bool (TRUE);
    }
  else
    {
      if (stmt->a->kind == SCRIPT_NAME)
        cond_name = stmt->a->s;
      if ((cond = eval (ctx, stmt->a)) == NULL)
        return FALSE;
      trip = bv_int (G_MAXINT64);
    }

  g_autoptr(GHashTable) assigned = g_hash_table_new (g_str_hash, g_str_equal);
  collect_assigned (stmt->body, assigned);
  g_autoptr(GPtrArray) carried = g_ptr_array_new ();
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, assigned);
  while (g_hash_table_iter_next (&it, &key, NULL))
    {
      BValue *before = scope_lookup (ctx->scope, key);
      if (before && before->kind != BV_MODULE && before->kind != BV_FUNCTION &&
          (cond_name == NULL || strcmp (key, cond_name) != 0))
        g_ptr_array_add (carried, key);
    }
  /* stable output order */
  for (guint i = 1; i < carried->len; i++)
    for (guint j = i; j > 0 && strcmp (g_ptr_array_index (carried, j - 1), g_ptr_array_index (carried, j)) > 0; j--)
      {
        gpointer tmp = g_ptr_array_index (carried, j);
        g_ptr_array_index (carried, j) = g_ptr_array_index (carried, j - 1);
        g_ptr_array_index (carried, j - 1) = tmp;
      }

  GraftNode *node = add_node (ctx, "prim", "Loop", stmt->line);
  if (node == NULL || !add_argument (ctx, node, trip, "max_trip_count", 0, stmt->line) ||
      !add_argument (ctx, node, cond, "cond", 1, stmt->line))
    return FALSE;
  for (guint k = 0; k < carried->len; k++)
    {
      GraftValue *init = materialize (ctx, scope_lookup (ctx->scope, g_ptr_array_index (carried, k)), stmt->line);
      if (init == NULL)
        return FALSE;
      graft_node_add_input (node, init);
    }
  GraftGraph *body_g = graft_graph_new ("body");
  graft_node_add_attribute (node, graft_attribute_new_graph ("body", body_g));
  graft_node_adopt_subgraph (node, body_g);

  g_autoptr(Scope) body_scope = scope_new (ctx->scope);
  Ctx body_ctx = *ctx;
  body_ctx.graph = body_g;
  body_ctx.scope = body_scope;
  body_ctx.ret = NULL;
  const char *trip_name = is_for ? ((ScriptNode *) g_ptr_array_index (stmt->items, 0))->s : "trip_count";
  GraftValue *trip_value = graft_graph_new_anonymous_value (body_g, trip_name);
  set_value_type (trip_value, "int");
  graft_graph_add_input (body_g, trip_value);
  if (is_for)
    scope_bind (body_scope, trip_name, bv_runtime (trip_value));
  for (guint k = 0; k < carried->len; k++)
    {
      const char *name = g_ptr_array_index (carried, k);
      GraftValue *in = graft_graph_new_anonymous_value (body_g, name);
      BValue *before = scope_lookup (ctx->scope, name);
      if (before->kind == BV_RUNTIME)
        set_value_type (in, before->value->type_string);
      graft_graph_add_input (body_g, in);
      scope_bind (body_scope, name, bv_runtime (in));
    }
  if (!exec_block (&body_ctx, stmt->body))
    {
      bv_unref (body_ctx.ret);
      return FALSE;
    }
  if (body_ctx.ret)
    {
      bv_unref (body_ctx.ret);
      return build_error (b, ctx->file, stmt->line, "return inside a loop is not supported");
    }
  g_autoptr(BValue) next_cond = cond_name ? bv_ref (scope_lookup (body_scope, cond_name)) : bv_bool (TRUE);
  GraftValue *cond_out = materialize (&body_ctx, next_cond, stmt->line);
  if (cond_out == NULL)
    return FALSE;
  graft_graph_add_output (body_g, cond_out);
  for (guint k = 0; k < carried->len; k++)
    {
      GraftValue *out = materialize (&body_ctx, scope_lookup (body_scope, g_ptr_array_index (carried, k)), stmt->line);
      if (out == NULL)
        return FALSE;
      graft_graph_add_output (body_g, out);
    }
  for (guint k = 0; k < carried->len; k++)
    {
      const char *name = g_ptr_array_index (carried, k);
      GraftValue *out = add_output (ctx, node, name);
      GraftValue *in = g_ptr_array_index (body_g->inputs, k + 1);
      set_value_type (out, in->type_string);
      scope_bind (ctx->scope, name, bv_runtime (out));
    }
  if (cond_name)
    scope_bind (ctx->scope, cond_name, bv_bool (FALSE));
  return TRUE;
}

static gboolean
exec_statement (Ctx *ctx, ScriptNode *stmt)
{
  switch (stmt->kind)
    {
    case SCRIPT_ASSIGN:
      return exec_assign (ctx, stmt);
    case SCRIPT_EXPR:
      {
        g_autoptr(BValue) v = eval (ctx, stmt->a);
        return v != NULL;
      }
    case SCRIPT_IF:
      return exec_if (ctx, stmt);
    case SCRIPT_FOR:
    case SCRIPT_WHILE:
      return exec_loop (ctx, stmt);
    case SCRIPT_RETURN:
      {
        BValue *v = stmt->a ? eval (ctx, stmt->a) : bv_const (GRAFT_ATTR_NONE);
        if (v == NULL)
          return FALSE;
        bv_unref (ctx->ret);
        ctx->ret = v;
        return TRUE;
      }
    case SCRIPT_RAISE:
      {
        g_autoptr(GPtrArray) args = bv_list ();
        if (stmt->a)
          {
            BValue *v = eval (ctx, stmt->a);
            if (v == NULL)
              return FALSE;
            g_ptr_array_add (args, v);
          }
        g_autoptr(BValue) r = emit_op (ctx, "prim", "RaiseException", args, NULL, 1, stmt->line);
        return r != NULL;
      }
    case SCRIPT_PASS:
    case SCRIPT_IMPORT:
      return TRUE;
    case SCRIPT_BREAK:
    case SCRIPT_CONTINUE:
      return build_error (ctx->b, ctx->file, stmt->line, "break/continue are not expected in saved TorchScript code");
    case SCRIPT_DEF:
    case SCRIPT_CLASS:
      return build_error (ctx->b, ctx->file, stmt->line, "nested definitions are not supported");
    default:
      return build_error (ctx->b, ctx->file, stmt->line, "unsupported statement");
    }
}

static gboolean
exec_block (Ctx *ctx, GPtrArray *body)
{
  for (guint k = 0; body && k < body->len; k++)
    {
      if (ctx->ret)
        return build_error (ctx->b, ctx->file, ((ScriptNode *) g_ptr_array_index (body, k))->line,
                            "statement after return");
      if (!spend_work (ctx, ((ScriptNode *) g_ptr_array_index (body, k))->line) ||
          !exec_statement (ctx, g_ptr_array_index (body, k)))
        return FALSE;
    }
  return TRUE;
}

/* ------------------------------------------------------------------ entry */

/* The graph's outputs are forward's result flattened; structure says how
 * they nest (GRAFT_TORCHSCRIPT_KEPT_RESULT). */
static void
add_graph_outputs (Ctx *ctx, BValue *v, guint line, GString *structure)
{
  if (v->kind == BV_TUPLE)
    {
      g_string_append_c (structure, '(');
      for (guint k = 0; k < v->items->len; k++)
        add_graph_outputs (ctx, g_ptr_array_index (v->items, k), line, structure);
      g_string_append_c (structure, ')');
      return;
    }
  if (v->kind == BV_CONST && v->ctype == GRAFT_ATTR_NONE)
    {
      g_string_append_c (structure, 'N');
      return;
    }
  GraftValue *value = materialize (ctx, v, line);
  if (value)
    {
      graft_graph_add_output (ctx->graph, value);
      g_string_append_c (structure, 'T');
    }
}

static GraftPickleValue *
load_pickle (Builder *b, const char *record)
{
  g_autoptr(GBytes) bytes = graft_torch_archive_read (b->archive, record, b->error);
  if (bytes == NULL)
    return NULL;
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  g_autofree char *where = g_strdup_printf ("%s: %s", graft_torch_archive_get_path (b->archive), record);
  return graft_pickle_load_budgeted (data, len, where, NULL, graft_torch_archive_get_pickle_budget (b->archive),
                                    b->error);
}

/* ------------------------------------------------------------------ dead code */

static gboolean
has_side_effects (GraftNode *node)
{
  static const char *const prim_ops[] = { "RaiseException", "SetAttr", "Print", "CallMethod", "CallFunction" };
  static const char *const aten_ops[] = { "append", "insert", "extend", "pop", "remove", "clear", "_set_item",
                                          "__setitem__", "__delitem__", "update", "setdefault", "popitem",
                                          "warn", "backward", "manual_seed", "reverse" };
  const char *op = node->op_type;
  gsize len = strlen (op);
  if (strcmp (node->domain, "prim") == 0)
    {
      for (guint k = 0; k < G_N_ELEMENTS (prim_ops); k++)
        if (strcmp (op, prim_ops[k]) == 0)
          return TRUE;
      return FALSE;
    }
  /* in-place ops end with one underscore (add_), dunder ops with two */
  if (len > 1 && op[len - 1] == '_' && op[len - 2] != '_')
    return TRUE;
  for (guint k = 0; k < G_N_ELEMENTS (aten_ops); k++)
    if (strcmp (op, aten_ops[k]) == 0)
      return TRUE;
  return FALSE;
}

static gboolean mutates_fresh_value (GraftNode *n);

typedef struct {
  GHashTable *nodes;
  GHashTable *values;
  GPtrArray *work;   /* GraftNode* or GraftValue*, told apart by the tables */
  GHashTable *is_node;
} Liveness;

static void
live_value (Liveness *l, GraftValue *v)
{
  if (v && g_hash_table_add (l->values, v))
    g_ptr_array_add (l->work, v);
}

static void
live_node (Liveness *l, GraftNode *n)
{
  if (n && g_hash_table_add (l->nodes, n))
    {
      g_hash_table_add (l->is_node, n);
      g_ptr_array_add (l->work, n);
    }
}

static GraftGraph *
first_subgraph (GraftNode *node)
{
  g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
  return subs->len ? g_ptr_array_index (subs, 0) : NULL;
}

static void
visit_live_node (Liveness *l, GraftNode *n)
{
  for (guint k = 0; k < n->inputs->len; k++)
    live_value (l, g_ptr_array_index (n->inputs, k));
  if (n->graph->parent_node)
    live_node (l, n->graph->parent_node);
  if (n->op == g_intern_static_string ("prim::Loop"))
    {
      GraftGraph *body = first_subgraph (n);
      if (body && body->outputs->len)
        live_value (l, g_ptr_array_index (body->outputs, 0));
    }
  if (n->op == g_intern_static_string ("prim::If"))
    {
      /* A branch that raises returns prim::Uninitialized for the values the
       * other one makes. A live If keeps its branches' outputs even when
       * nothing reads them, so those placeholders stay too (a dead one
       * would leave the branch returning a value freed with the dead
       * nodes: scripted RAFT). */
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (n);
      for (guint s = 0; s < subs->len; s++)
        {
          GraftGraph *g = g_ptr_array_index (subs, s);
          for (guint k = 0; k < g->outputs->len; k++)
            {
              GraftValue *out = g_ptr_array_index (g->outputs, k);
              if (out && out->producer && out->producer->op == g_intern_static_string ("prim::Uninitialized"))
                live_value (l, out);
            }
        }
    }
}

static void
visit_live_value (Liveness *l, GraftValue *v)
{
  /* a live fresh value keeps the mutations made to it */
  for (guint k = 0; k < v->consumers->len; k++)
    {
      GraftNode *c = g_ptr_array_index (v->consumers, k);
      if (c->inputs->len && g_ptr_array_index (c->inputs, 0) == v && has_side_effects (c) && mutates_fresh_value (c))
        live_node (l, c);
    }
  GraftNode *p = v->producer;
  if (p)
    {
      live_node (l, p);
      if (p->op == g_intern_static_string ("prim::If"))
        {
          g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (p);
          for (guint k = 0; k < subs->len; k++)
            {
              GraftGraph *g = g_ptr_array_index (subs, k);
              if (v->producer_index < g->outputs->len)
                live_value (l, g_ptr_array_index (g->outputs, v->producer_index));
            }
        }
      else if (p->op == g_intern_static_string ("prim::Loop"))
        {
          GraftGraph *body = first_subgraph (p);
          if (body && v->producer_index + 1 < body->outputs->len)
            live_value (l, g_ptr_array_index (body->outputs, v->producer_index + 1));
        }
    }
  GraftNode *loop = v->graph->parent_node;
  if (v->is_graph_input && loop && loop->op == g_intern_static_string ("prim::Loop"))
    {
      guint j;
      if (g_ptr_array_find (v->graph->inputs, v, &j) && j >= 1)
        {
          if (j < v->graph->outputs->len)
            live_value (l, g_ptr_array_index (v->graph->outputs, j));
          if (j + 1 < loop->inputs->len)
            live_value (l, g_ptr_array_index (loop->inputs, j + 1));
        }
    }
}

/* A mutation of a value created right here (a new tensor, list or dict)
 * matters only if that value is used: alias analysis lets PyTorch's DCE
 * drop it otherwise. */
static gboolean
mutates_fresh_value (GraftNode *n)
{
  static const char *const creators[] = {
    "aten::empty", "aten::zeros", "aten::ones", "aten::full", "aten::rand", "aten::randn", "aten::randint",
    "aten::tensor", "aten::arange", "aten::zeros_like", "aten::ones_like", "aten::empty_like", "aten::full_like",
    "aten::rand_like", "aten::randn_like", "aten::new_zeros", "aten::new_ones", "aten::new_empty", "aten::new_full",
    "aten::clone", "prim::ListConstruct", "prim::DictConstruct",
  };
  if (strcmp (n->domain, "aten") != 0 || n->inputs->len == 0)
    return FALSE;
  GraftValue *target = g_ptr_array_index (n->inputs, 0);
  if (target == NULL || target->producer == NULL)
    return FALSE;
  for (guint k = 0; k < G_N_ELEMENTS (creators); k++)
    if (target->producer->op == g_intern_string (creators[k]))
      return TRUE;
  return FALSE;
}

static void
collect_roots (Liveness *l, GraftGraph *graph)
{
  for (guint k = 0; k < graph->nodes->len; k++)
    {
      GraftNode *n = g_ptr_array_index (graph->nodes, k);
      if (has_side_effects (n) && !mutates_fresh_value (n))
        live_node (l, n);
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (n);
      for (guint s = 0; s < subs->len; s++)
        collect_roots (l, g_ptr_array_index (subs, s));
    }
}

/* Marks what PyTorch's dead-code elimination keeps and records the
 * creation numbers of everything else. */
static void
find_dead_nodes (Builder *b, GraftGraph *root)
{
  Liveness l = {
    .nodes = g_hash_table_new (g_direct_hash, g_direct_equal),
    .values = g_hash_table_new (g_direct_hash, g_direct_equal),
    .is_node = g_hash_table_new (g_direct_hash, g_direct_equal),
    .work = g_ptr_array_new (),
  };
  collect_roots (&l, root);
  for (guint k = 0; k < root->outputs->len; k++)
    live_value (&l, g_ptr_array_index (root->outputs, k));
  for (guint k = 0; k < b->forced_live->len; k++)
    live_value (&l, g_ptr_array_index (b->forced_live, k));
  while (l.work->len)
    {
      gpointer item = g_ptr_array_steal_index (l.work, l.work->len - 1);
      if (g_hash_table_contains (l.is_node, item))
        visit_live_node (&l, item);
      else
        visit_live_value (&l, item);
    }
  GHashTableIter it;
  gpointer node, seq;
  g_hash_table_iter_init (&it, b->node_seq);
  while (g_hash_table_iter_next (&it, &node, &seq))
    if (!g_hash_table_contains (l.nodes, node))
      g_hash_table_add (b->dead_seq, seq);
  g_hash_table_unref (l.nodes);
  g_hash_table_unref (l.values);
  g_hash_table_unref (l.is_node);
  g_ptr_array_unref (l.work);
}

/* Dead nodes used live values; drop those back-references, and the
 * graph-output marks subgraphs put on outer values. */
static void
unlink_dead_consumers (GraftGraph *trash)
{
  for (guint k = 0; k < trash->nodes->len; k++)
    {
      GraftNode *n = g_ptr_array_index (trash->nodes, k);
      for (guint i = 0; i < n->inputs->len; i++)
        {
          GraftValue *v = g_ptr_array_index (n->inputs, i);
          if (v)
            g_ptr_array_remove (v->consumers, n);
        }
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (n);
      for (guint s = 0; s < subs->len; s++)
        unlink_dead_consumers (g_ptr_array_index (subs, s));
    }
}

static void
fix_output_marks (GraftGraph *graph)
{
  for (guint k = 0; k < graph->values->len; k++)
    {
      GraftValue *v = g_ptr_array_index (graph->values, k);
      v->is_graph_output = FALSE;
    }
  for (guint k = 0; k < graph->outputs->len; k++)
    {
      GraftValue *v = g_ptr_array_index (graph->outputs, k);
      if (v->graph == graph)
        v->is_graph_output = TRUE;
    }
  for (guint k = 0; k < graph->nodes->len; k++)
    {
      g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (g_ptr_array_index (graph->nodes, k));
      for (guint s = 0; s < subs->len; s++)
        fix_output_marks (g_ptr_array_index (subs, s));
    }
}

/* ------------------------------------------------------------------ entry */

/* forward(self, x, attn_mask: Optional[Tensor]=None, is_causal: bool=False):
 * a caller may leave out a parameter with a default, as with torch.jit.load's
 * module. An Optional left out is None (the runtime's optional input); a
 * bool, int, float or str parameter with a default is that constant here,
 * named in the model's metadata, so that its branches fold as tracing
 * would have folded them. */
static gboolean
bind_scalar_default (Builder *b, Scope *scope, ScriptNode *param, const char *type)
{
  if (param->b == NULL || (strcmp (type, "bool") != 0 && strcmp (type, "int") != 0 && strcmp (type, "float") != 0 &&
                           strcmp (type, "str") != 0))
    return FALSE;
  BValue *value = const_from_literal (param->b);
  if (value == NULL)
    return FALSE;
  scope_bind (scope, param->s, value);
  g_autofree char *key = g_strdup_printf ("forward's %s", param->s);
  g_autofree char *text = value->ctype == GRAFT_ATTR_BOOL ? g_strdup (value->i ? "True" : "False")
                          : value->ctype == GRAFT_ATTR_INT ? g_strdup_printf ("%" G_GINT64_FORMAT, value->i)
                          : value->ctype == GRAFT_ATTR_FLOAT ? g_strdup_printf ("%g", value->f)
                          : g_strdup_printf ("'%s'", value->s ? value->s : "");
  g_autofree char *note = g_strdup_printf ("%s (%s, its default; a constant in this graph)", text, type);
  graft_model_add_metadata (b->model, key, note);
  return TRUE;
}

static gboolean
run_forward (Builder *b, ClassInfo *info, ScriptNode *forward)
{
  g_autoptr(Scope) scope = scope_new (NULL);
  Ctx ctx = { .b = b, .graph = b->root, .module_path = "", .object_path = "", .scope = scope, .file = info->file };
  g_autoptr(BValue) self = module_value (b->root_object, "");

  for (guint k = 0; k < forward->params->len; k++)
    {
      ScriptNode *param = g_ptr_array_index (forward->params, k);
      if (k == 0)
        {
          scope_bind (scope, param->s, bv_ref (self));
          continue;
        }
      g_autofree char *type = param->a ? type_of (param->a) : g_strdup ("Tensor");
      if (bind_scalar_default (b, scope, param, type))
        continue;
      GraftValue *input = graft_graph_new_anonymous_value (b->root, param->s);
      set_value_type (input, type);
      graft_graph_add_input (b->root, input);
      scope_bind (scope, param->s, bv_runtime_typed (input, type));
    }
  if (!exec_block (&ctx, forward->body))
    {
      bv_unref (ctx.ret);
      return FALSE;
    }
  if (ctx.ret)
    {
      g_autoptr(GString) structure = g_string_new (NULL);
      add_graph_outputs (&ctx, ctx.ret, forward->line, structure);
      bv_unref (ctx.ret);
      g_autoptr(GBytes) record = g_bytes_new (structure->str, structure->len);
      graft_model_set_kept_record (b->model, GRAFT_TORCHSCRIPT_KEPT_RESULT, record);
    }
  /* Output types from forward's return annotation. */
  g_autofree char *returns = forward->b ? type_of (forward->b) : NULL;
  for (guint k = 0; returns && k < b->root->outputs->len; k++)
    {
      GraftValue *out = g_ptr_array_index (b->root->outputs, k);
      g_autofree char *type = b->root->outputs->len == 1 && !g_str_has_prefix (returns, "Tuple[")
                              ? g_strdup (returns) : element_type (returns, k);
      if (type && out->type_string == NULL)
        set_value_type (out, type);
    }
  return !(b->error && *b->error);
}

/* One complete build into model. */
static gboolean
run_pass (Builder *b, GraftModel *model, ClassInfo *info, ScriptNode *forward)
{
  b->model = model;
  b->seq = 0;
  b->n_nodes = 0;
  b->node_counter = 0;
  g_hash_table_remove_all (b->tensors);
  g_hash_table_remove_all (b->group_classes);
  g_hash_table_remove_all (b->group_calls);
  g_hash_table_remove_all (b->cat_lists);
  b->root = graft_graph_new ("forward");
  graft_model_set_graph (model, b->root);
  g_autofree char *root_class = graft_script_demangle_class (b->root_object->s);
  b->root->root_group->class_name = g_strdup (root_class);
  g_string_truncate (b->buffers, 0);
  if (!collect_parameters (b, b->root_object, ""))
    return FALSE;
  g_autoptr(GBytes) buffers = g_bytes_new (b->buffers->str, b->buffers->len);
  graft_model_set_kept_record (model, GRAFT_TORCHSCRIPT_KEPT_BUFFERS, buffers);
  return run_forward (b, info, forward);
}

gboolean
graft_script_build (GraftTorchArchive *archive, GraftModel *model, GCancellable *cancellable, GError **error)
{
  Builder b = {
    .archive = archive, .cancellable = cancellable, .error = error,
    .files = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) script_module_free),
    .classes = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) class_info_free),
    .functions = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free),
    .tensors = g_hash_table_new (g_direct_hash, g_direct_equal),
    .group_classes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free),
    .group_calls = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .node_seq = g_hash_table_new (g_direct_hash, g_direct_equal),
    .dead_seq = g_hash_table_new (g_direct_hash, g_direct_equal),
    .forced_live = g_ptr_array_new (),
    .buffers = g_string_new (NULL),
    .cat_lists = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) bv_unref),
  };
  gboolean ok = FALSE;
  g_autoptr(GraftPickleValue) root = NULL;
  g_autoptr(GraftModel) scratch = NULL;

  if (graft_torch_archive_has (archive, "byteorder"))
    {
      g_autoptr(GBytes) order = graft_torch_archive_read (archive, "byteorder", error);
      if (order == NULL)
        goto out;
      b.big_endian = g_bytes_get_size (order) >= 3 && memcmp (g_bytes_get_data (order, NULL), "big", 3) == 0;
    }
  if (graft_torch_archive_has (archive, "constants.pkl"))
    {
      if ((b.constants = load_pickle (&b, "constants.pkl")) == NULL)
        goto out;
    }
  if ((root = load_pickle (&b, "data.pkl")) == NULL)
    goto out;
  if (!is_script_object (root))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                   "%s: data.pkl does not hold a TorchScript module object", graft_torch_archive_get_path (archive));
      goto out;
    }
  b.root_object = root;
  ClassInfo *info = lookup_class (&b, root->s);
  ScriptNode *forward = info ? g_hash_table_lookup (info->methods, "forward") : NULL;
  if (forward == NULL)
    {
      if (!(error && *error))
        g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                     "%s: the root module %s has no forward() in code/", graft_torch_archive_get_path (archive), root->s);
      goto out;
    }

  scratch = graft_model_new (GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  if (!run_pass (&b, scratch, info, forward))
    goto out;
  find_dead_nodes (&b, b.root);
  g_ptr_array_set_size (b.forced_live, 0);
  g_clear_object (&scratch);   /* the pass-1 graph and its node pointers go away */
  g_hash_table_remove_all (b.node_seq);

  b.second_pass = TRUE;
  b.trash = graft_graph_new ("dead");
  if (!run_pass (&b, model, info, forward))
    goto out;
  unlink_dead_consumers (b.trash);
  fix_output_marks (b.root);
  graft_graph_update_group_counts (b.root);
  graft_debug_source_annotate (archive, b.root);
  ok = TRUE;

out:
  if (b.trash)
    {
      if (!ok)
        unlink_dead_consumers (b.trash);
      graft_graph_free (b.trash);
    }
  g_clear_pointer (&b.constants, graft_pickle_value_unref);
  g_hash_table_unref (b.functions);
  g_hash_table_unref (b.classes);
  g_hash_table_unref (b.files);
  g_hash_table_unref (b.tensors);
  g_hash_table_unref (b.group_classes);
  g_hash_table_unref (b.group_calls);
  g_hash_table_unref (b.node_seq);
  g_hash_table_unref (b.dead_seq);
  g_ptr_array_unref (b.forced_live);
  g_string_free (b.buffers, TRUE);
  g_hash_table_unref (b.cat_lists);
  return ok;
}

GraftModel *
graft_torchscript_load (GraftTorchArchive *archive, const char *path, GCancellable *cancellable, GError **error)
{
  guint64 version;
  if (!graft_torch_archive_get_version (archive, &version, error))
    return NULL;
  if (version > 64)
    return graft_torch_save_unsupported (error, path, "TorchScript file-format version %" G_GUINT64_FORMAT " is newer than Graft knows "
                        "(1 to 10 are supported)", version);
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  graft_model_set_path (model, path);
  graft_model_set_producer (model, "torch.jit.save", NULL);
  graft_model_set_opset (model, "torchscript", (gint64) version);
  if (graft_torch_archive_has (archive, "bytecode.pkl"))
    graft_model_add_metadata (model, "mobile", "lite-interpreter bytecode.pkl present (TorchScript part shown)");
  if (!graft_script_build (archive, model, cancellable, error))
    return NULL;
  return g_steal_pointer (&model);
}
