#include "ir/torch-scopes.h"
#include "ir/graph.h"

#include <string.h>

/* One call of a module, open while the walk is inside it. */
typedef struct {
  char *scope;         /* torch's full module path: "layer1.0" ("" for the root module) */
  GraftGroup *group;
  GHashTable *calls;   /* child group name → calls of it so far within this call */
} ModuleCall;

struct _GraftTorchScopeWalk {
  GArray *stack;       /* ModuleCall; [0] is the root module's call */
};

static void
module_call_clear (ModuleCall *call)
{
  g_free (call->scope);
  g_hash_table_unref (call->calls);
}

static void
push_call (GraftTorchScopeWalk *walk, const char *scope, GraftGroup *group)
{
  ModuleCall call = { g_strdup (scope), group, g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL) };

  g_array_append_val (walk->stack, call);
}

GraftTorchScopeWalk *
graft_torch_scope_walk_new (GraftGroup *root)
{
  GraftTorchScopeWalk *walk = g_new0 (GraftTorchScopeWalk, 1);

  walk->stack = g_array_new (FALSE, FALSE, sizeof (ModuleCall));
  g_array_set_clear_func (walk->stack, (GDestroyNotify) module_call_clear);
  push_call (walk, "", root);
  return walk;
}

void
graft_torch_scope_walk_free (GraftTorchScopeWalk *walk)
{
  if (walk == NULL)
    return;
  g_array_unref (walk->stack);
  g_free (walk);
}

/* Reads one quoted item of a Python str repr at *p; NULL if malformed. */
static char *
parse_quoted (const char **p)
{
  char quote = **p;
  g_autoptr(GString) item = g_string_new (NULL);
  const char *s = *p + 1;

  if (quote != '\'' && quote != '"')
    return NULL;
  for (; *s != quote; s++)
    {
      if (*s == '\0')
        return NULL;
      if (*s == '\\')
        {
          s++;
          switch (*s)
            {
            case '\\': case '\'': case '"': g_string_append_c (item, *s); break;
            case 'n': g_string_append_c (item, '\n'); break;
            case 't': g_string_append_c (item, '\t'); break;
            /* Module names never need the rarer escapes; refuse rather than guess. */
            default: return NULL;
            }
          continue;
        }
      g_string_append_c (item, *s);
    }
  *p = s + 1;
  return g_string_free (g_steal_pointer (&item), FALSE);
}

GPtrArray *
graft_torch_parse_string_list (const char *text)
{
  g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func (g_free);
  const char *p = text;

  if (p == NULL)
    return NULL;
  while (g_ascii_isspace (*p))
    p++;
  if (*p++ != '[')
    return NULL;
  while (g_ascii_isspace (*p))
    p++;
  if (*p != ']')
    for (;;)
      {
        char *item = parse_quoted (&p);

        if (item == NULL)
          return NULL;
        g_ptr_array_add (items, item);
        while (g_ascii_isspace (*p))
          p++;
        if (*p == ']')
          break;
        if (*p++ != ',')
          return NULL;
        while (g_ascii_isspace (*p))
          p++;
      }
  p++;
  while (g_ascii_isspace (*p))
    p++;
  if (*p != '\0')
    return NULL;
  return g_steal_pointer (&items);
}

static const char *
parent_scope (GPtrArray *scopes, guint i)
{
  return i > 0 ? g_ptr_array_index (scopes, i - 1) : "";
}

/* onnxscript's rewriter, run by the exporter, folds a BatchNorm into the
 * Conv before it and gives the fused Conv the BatchNorm's metadata, so the
 * Conv would sit in "bn1" where the TorchScript-based exporter (which
 * folds the same pair) keeps it in "conv1". The fused weight keeps the
 * Conv's parameter name ("layer1.0.conv1.weight"): when that names a
 * sibling of the recorded module, the node goes there instead. */
static gboolean
move_fused_node_to_weight_module (GraftNode *node, GPtrArray *modules)
{
  GraftValue *weight;
  const char *recorded_parent;
  g_autofree char *module = NULL;
  char *last_dot;

  if (modules->len == 0 || graft_node_get_metadata (node, GRAFT_ONNXSCRIPT_RULE_NAME_KEY) == NULL
      || node->inputs->len < 2 || (weight = g_ptr_array_index (node->inputs, 1)) == NULL
      || weight->initializer == NULL || !g_str_has_suffix (weight->name, ".weight"))
    return FALSE;
  module = g_strndup (weight->name, strlen (weight->name) - strlen (".weight"));
  if (strcmp (module, g_ptr_array_index (modules, modules->len - 1)) == 0)
    return FALSE;
  last_dot = strrchr (module, '.');
  recorded_parent = parent_scope (modules, modules->len - 1);
  if (last_dot != NULL ? strncmp (module, recorded_parent, last_dot - module) != 0
                           || recorded_parent[last_dot - module] != '\0'
                       : recorded_parent[0] != '\0')
    return FALSE;
  g_free (g_ptr_array_steal_index (modules, modules->len - 1));
  g_ptr_array_add (modules, g_steal_pointer (&module));
  return TRUE;
}

/* The group for the next call of the module at scope within the
 * innermost open call: "relu", then "relu_1" for a second call. */
static GraftGroup *
open_call (GraftTorchScopeWalk *walk, const char *scope, const char *parent, const char *class_name)
{
  ModuleCall *caller = &g_array_index (walk->stack, ModuleCall, walk->stack->len - 1);
  const char *component = graft_group_component_for_scope (scope, parent);
  guint calls = GPOINTER_TO_UINT (g_hash_table_lookup (caller->calls, component));
  g_autofree char *name = calls == 0 ? g_strdup (component) : g_strdup_printf ("%s_%u", component, calls);
  GraftGroup *group;

  g_hash_table_replace (caller->calls, g_strdup (component), GUINT_TO_POINTER (calls + 1));
  group = graft_group_ensure_child (caller->group, name);
  if (group->class_name == NULL && class_name != NULL)
    group->class_name = g_strdup (class_name);
  push_call (walk, scope, group);
  return group;
}

GraftGroup *
graft_torch_scope_walk_place (GraftTorchScopeWalk *walk, GraftNode *node)
{
  g_autoptr(GPtrArray) scopes = graft_torch_parse_string_list (graft_node_get_metadata (node, GRAFT_TORCH_NAME_SCOPES_KEY));
  g_autoptr(GPtrArray) classes = NULL;
  gboolean moved;
  guint depth = 0;

  /* The root module's empty scope first and the FX node's own name last;
   * anything else is not what the exporter writes. */
  if (scopes == NULL || scopes->len < 2 || ((char *) g_ptr_array_index (scopes, 0))[0] != '\0')
    return NULL;
  classes = graft_torch_parse_string_list (graft_node_get_metadata (node, GRAFT_TORCH_CLASS_HIERARCHY_KEY));
  if (classes != NULL && classes->len != scopes->len)
    g_clear_pointer (&classes, g_ptr_array_unref);
  g_ptr_array_remove_index (scopes, scopes->len - 1);
  g_ptr_array_remove_index (scopes, 0);
  for (guint i = 0; i < scopes->len; i++)
    if (graft_group_component_for_scope (g_ptr_array_index (scopes, i), parent_scope (scopes, i))[0] == '\0')
      return NULL;
  moved = move_fused_node_to_weight_module (node, scopes);

  /* Calls still open are those the node shares with the previous one. */
  while (depth < scopes->len && depth + 1 < walk->stack->len
         && strcmp (g_array_index (walk->stack, ModuleCall, depth + 1).scope, g_ptr_array_index (scopes, depth)) == 0)
    depth++;
  g_array_set_size (walk->stack, depth + 1);
  for (guint i = depth; i < scopes->len; i++)
    {
      const char *class_name = NULL;

      /* classes[0] is the root module's. */
      if (classes != NULL && !(moved && i + 1 == scopes->len))
        class_name = g_ptr_array_index (classes, i + 1);
      open_call (walk, g_ptr_array_index (scopes, i), parent_scope (scopes, i), class_name);
    }
  return g_array_index (walk->stack, ModuleCall, walk->stack->len - 1).group;
}
