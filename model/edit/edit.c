#include "edit/edit.h"
#include "edit/edit-private.h"
#include "ir/graph-copy.h"
#include "ir/graph-surgery.h"
#include "edit/address.h"
#include "analysis/baked-shape.h"

#include <string.h>

G_DEFINE_QUARK (graft-edit-error-quark, graft_edit_error)

struct _GraftEdit {
  GObject parent_instance;

  char *description;
  const GraftEditOperation *operation;
  GVariant *params;        /* as given, a{sv} */
  GVariant *recorded;      /* params with addresses, from the last apply */

  GraftGraph *snapshot;    /* the graph before apply, while applied */
  GVariant *opsets_snapshot; /* the model's opset imports before apply, while applied */
  GraftFunction *function; /* the function whose body was edited, while applied */
  GraftGraph *function_snapshot;
  GPtrArray *notes;
  GArray *changed_dims;    /* GraftDimCheckDim: input dims the last apply changed */
};

G_DEFINE_FINAL_TYPE (GraftEdit, graft_edit, G_TYPE_OBJECT)

static void
graft_edit_finalize (GObject *object)
{
  GraftEdit *self = GRAFT_EDIT (object);

  g_free (self->description);
  g_clear_pointer (&self->snapshot, graft_graph_free);
  g_clear_pointer (&self->opsets_snapshot, g_variant_unref);
  g_clear_pointer (&self->function_snapshot, graft_graph_free);
  g_clear_pointer (&self->params, g_variant_unref);
  g_clear_pointer (&self->recorded, g_variant_unref);
  g_ptr_array_unref (self->notes);
  g_array_unref (self->changed_dims);
  G_OBJECT_CLASS (graft_edit_parent_class)->finalize (object);
}

static void
graft_edit_class_init (GraftEditClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = graft_edit_finalize;
}

static void
graft_edit_init (GraftEdit *self)
{
  self->notes = g_ptr_array_new_with_free_func (g_free);
  self->changed_dims = g_array_new (FALSE, FALSE, sizeof (GraftDimCheckDim));
}

/* Each key of operation's required ("input:s axis:x") is in params, of its type. */
static gboolean
check_required (const GraftEditOperation *operation, GVariant *params, GError **error)
{
  g_auto(GStrv) entries = g_strsplit (operation->required ? operation->required : "", " ", -1);

  for (guint i = 0; entries[i] != NULL; i++)
    {
      const char *colon = strchr (entries[i], ':');
      g_autofree char *key = colon ? g_strndup (entries[i], colon - entries[i]) : NULL;
      const char *type = colon ? colon + 1 : NULL;
      g_autoptr(GVariant) value = NULL;

      if (key == NULL)
        continue;
      value = g_variant_lookup_value (params, key, NULL);
      /* A string list may be one string. */
      if (value != NULL && (g_variant_is_of_type (value, G_VARIANT_TYPE (type))
                            || (strcmp (type, "as") == 0 && g_variant_is_of_type (value, G_VARIANT_TYPE_STRING))))
        continue;
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "%s needs the parameter '%s' (%s)", operation->id,
                   key, strcmp (type, "s") == 0 ? "a string" : strcmp (type, "x") == 0 ? "an integer" : "a list");
      return FALSE;
    }
  return TRUE;
}

static GraftEdit *
new_known_operation (const char *id, GVariant *params)
{
  g_autoptr(GError) error = NULL;
  GraftEdit *self = graft_edit_new_operation (id, params, &error);

  g_assert_no_error (error);
  return self;
}

GraftEdit *
graft_edit_new_make_dim_dynamic (const char *input, int axis, const char *symbol)
{
  return new_known_operation ("make-dim-dynamic", graft_edit_params_new ("input", g_variant_new_string (input),
                                                                         "axis", g_variant_new_int64 (axis),
                                                                         "symbol", g_variant_new_string (symbol), NULL));
}

GraftEdit *
graft_edit_new_extract (const char *const *inputs, const char *const *outputs)
{
  return new_known_operation ("extract", graft_edit_params_new ("inputs", g_variant_new_strv (inputs, -1),
                                                                "outputs", g_variant_new_strv (outputs, -1), NULL));
}

GraftEdit *
graft_edit_new_operation (const char *id, GVariant *params, GError **error)
{
  const GraftEditOperation *operation = graft_edit_operation_lookup (id);
  g_autoptr(GVariant) owned = g_variant_ref_sink (params ? params : g_variant_new_array (G_VARIANT_TYPE ("{sv}"), NULL, 0));
  GraftEdit *self;

  if (operation == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "no edit operation is called '%s'", id);
      return NULL;
    }
  if (!g_variant_is_of_type (owned, G_VARIANT_TYPE_VARDICT))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the parameters of '%s' are not a dictionary", id);
      return NULL;
    }
  if (!check_required (operation, owned, error))
    return NULL;
  /* An edit of the main graph has no scope to record. */
  if (operation->flags & GRAFT_EDIT_MAIN_GRAPH)
    {
      GVariantDict dict;

      g_variant_dict_init (&dict, owned);
      g_variant_dict_remove (&dict, "graph");
      g_variant_dict_remove (&dict, "function");
      g_variant_unref (owned);
      owned = g_variant_ref_sink (g_variant_dict_end (&dict));
    }
  self = g_object_new (GRAFT_TYPE_EDIT, NULL);
  self->operation = operation;
  self->params = g_variant_ref (owned);
  self->description = operation->describe (owned);
  return self;
}

const char *
graft_edit_get_operation_id (GraftEdit *self)
{
  return self->operation->id;
}

GVariant *
graft_edit_get_params (GraftEdit *self)
{
  return self->params;
}

GVariant *
graft_edit_get_recorded_params (GraftEdit *self)
{
  return self->recorded;
}

char *
graft_edit_suggest_dim_symbol (const GraftValue *input, int axis)
{
  static const char *const image_4d[] = { "batch", "channels", "height", "width" };
  static const char *const image_5d[] = { "batch", "channels", "depth", "height", "width" };
  int rank = input != NULL ? input->shape.rank : -1;

  if (axis == 0)
    return g_strdup ("batch");
  if (rank == 4 && axis < 4)
    return g_strdup (image_4d[axis]);
  if (rank == 5 && axis < 5)
    return g_strdup (image_5d[axis]);
  if (axis == 1)
    return g_strdup ("sequence");
  return g_strdup_printf ("dim%d", axis);
}

gboolean
graft_edit_runs_long (GraftEdit *self)
{
  return (self->operation->flags & GRAFT_EDIT_SLOW) != 0;
}

const char *
graft_edit_get_description (GraftEdit *self)
{
  return self->description;
}

gboolean
graft_edit_is_applied (GraftEdit *self)
{
  return self->snapshot != NULL;
}

GPtrArray *
graft_edit_get_notes (GraftEdit *self)
{
  return self->notes;
}

/* Which input dims this edit is about to change, with their sizes now. */
static void
record_changed_dims (GraftEdit *self, GraftGraph *graph)
{
  g_autoptr(GArray) dims = graft_edit_operation_changed_dims (self->operation, graph, self->params);

  g_array_set_size (self->changed_dims, 0);
  g_array_append_vals (self->changed_dims, dims->data, dims->len);
}

GArray *
graft_edit_get_changed_dims (GraftEdit *self)
{
  return self->changed_dims;
}

GraftDimCheck *
graft_edit_verify (GraftEdit *self, GraftModel *model, GError **error)
{
  if (self->snapshot == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "'%s' is not applied", self->description);
      return NULL;
    }
  return graft_dim_check_run (model, (GraftDimCheckDim *) self->changed_dims->data, self->changed_dims->len, error);
}


static gboolean
run (GraftEdit *self, GraftModel *model, GError **error)
{
  GraftEditScope scope;

  return graft_edit_scope_resolve (model, self->params, &scope, NULL, error)
         && self->operation->apply (&scope, self->params, self->notes, error);
}

/* Puts back the function body the last apply edited. */
static void
restore_function (GraftEdit *self)
{
  if (self->function_snapshot == NULL)
    return;
  graft_graph_free (self->function->body);
  self->function->body = g_steal_pointer (&self->function_snapshot);
  self->function = NULL;
}

/* Replaces the nodes (or values) that params names under keys, one (s)
 * or a list (as), by their addresses in graph. */
static gboolean
record_addresses (GVariantDict *dict, GVariant *params, GStrv keys, GraftGraph *graph, gboolean nodes,
                  GError **error)
{
  for (guint i = 0; keys[i] != NULL; i++)
    {
      g_autofree const char **names = *keys[i] ? graft_edit_param_strv (params, keys[i]) : NULL;
      g_autoptr(GVariant) single = *keys[i] ? g_variant_lookup_value (params, keys[i], G_VARIANT_TYPE_STRING) : NULL;
      GVariantBuilder addresses;

      if (names == NULL)
        continue;
      g_variant_builder_init (&addresses, G_VARIANT_TYPE ("av"));
      for (guint j = 0; names[j] != NULL; j++)
        {
          GraftNode *node;
          GraftValue *value;

          /* An omitted optional input stays omitted. */
          if (!nodes && *names[j] == '\0')
            {
              g_variant_builder_add (&addresses, "v", g_variant_new_string (""));
              continue;
            }
          node = nodes ? graft_edit_find_node (graph, names[j], error) : NULL;
          value = nodes ? NULL : graft_edit_find_value (graph, names[j], error);

          if (node == NULL && value == NULL)
            {
              g_variant_builder_clear (&addresses);
              return FALSE;
            }
          g_variant_builder_add (&addresses, "v", node ? graft_node_address_new (node) : graft_value_address_new (value));
        }
      if (single != NULL)
        {
          g_autoptr(GVariant) list = g_variant_ref_sink (g_variant_builder_end (&addresses));
          g_autoptr(GVariant) first = g_variant_get_child_value (list, 0);
          g_autoptr(GVariant) address = g_variant_get_variant (first);
          g_variant_dict_insert_value (dict, keys[i], address);
        }
      else
        g_variant_dict_insert_value (dict, keys[i], g_variant_builder_end (&addresses));
    }
  return TRUE;
}

/* Replaces each node and value the parameters name by its address in
 * scope's graph as it is now. */
static GVariant *
record_params (GraftEdit *self, GraftModel *model, GError **error)
{
  GraftEditScope scope;
  g_autoptr(GVariant) path = NULL;
  g_auto(GStrv) node_keys = g_strsplit (self->operation->node_params, " ", -1);
  g_auto(GStrv) value_keys = g_strsplit (self->operation->value_params, " ", -1);
  GVariantDict dict;

  if (!graft_edit_scope_resolve (model, self->params, &scope, &path, error))
    return NULL;
  g_variant_dict_init (&dict, self->params);
  if (path != NULL)
    {
      g_variant_dict_remove (&dict, "graph");
      g_variant_dict_insert_value (&dict, "graph_path", path);
    }
  if (!record_addresses (&dict, self->params, node_keys, scope.graph, TRUE, error)
      || !record_addresses (&dict, self->params, value_keys, scope.graph, FALSE, error))
    {
      g_variant_dict_clear (&dict);
      return NULL;
    }
  return g_variant_ref_sink (g_variant_dict_end (&dict));
}

gboolean
graft_edit_apply (GraftEdit *self, GraftModel *model, GError **error)
{
  return graft_edit_apply_with_snapshot (self, model, NULL, error);
}

gboolean
graft_edit_apply_with_snapshot (GraftEdit *self, GraftModel *model, GraftGraph *given, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GraftGraph) prepared = given;
  GraftGraph *snapshot;
  GraftEditScope scope;
  g_autoptr(GVariant) recorded = NULL;
  g_autoptr(GError) record_error = NULL;
  gboolean done;

  if (self->snapshot != NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "'%s' is already applied", self->description);
      return FALSE;
    }
  if (graph == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the model has no graph to edit");
      return FALSE;
    }
  if (!graft_edit_scope_resolve (model, self->params, &scope, NULL, error))
    return FALSE;
  /* Addresses are taken before the change; when a target is missing the
   * operation's own error says it best, so that one is reported. */
  recorded = record_params (self, model, &record_error);
  snapshot = prepared != NULL ? g_steal_pointer (&prepared) : graft_graph_copy (graph, NULL);
  g_clear_pointer (&self->opsets_snapshot, g_variant_unref);
  self->opsets_snapshot = graft_model_save_opsets (model);
  self->function = scope.function;
  if (scope.function != NULL)
    self->function_snapshot = graft_graph_copy (scope.function->body, NULL);
  g_ptr_array_set_size (self->notes, 0);
  record_changed_dims (self, graph);
  done = run (self, model, error);
  if (done && recorded == NULL)
    {
      g_propagate_error (error, g_steal_pointer (&record_error));
      done = FALSE;
    }
  if (!done)
    {
      graft_model_set_graph (model, snapshot);
      graft_model_restore_opsets (model, self->opsets_snapshot);
      g_clear_pointer (&self->opsets_snapshot, g_variant_unref);
      restore_function (self);
      g_ptr_array_set_size (self->notes, 0);
      return FALSE;
    }
  self->snapshot = snapshot;
  g_clear_pointer (&self->recorded, g_variant_unref);
  self->recorded = g_steal_pointer (&recorded);
  return TRUE;
}

gboolean
graft_edit_undo (GraftEdit *self, GraftModel *model, GError **error)
{
  if (self->snapshot == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "'%s' is not applied", self->description);
      return FALSE;
    }
  graft_model_set_graph (model, g_steal_pointer (&self->snapshot));
  graft_model_restore_opsets (model, self->opsets_snapshot);
  g_clear_pointer (&self->opsets_snapshot, g_variant_unref);
  restore_function (self);
  return TRUE;
}

GraftModel *
graft_edit_apply_to_copy (GraftEdit *self, GraftModel *model, GError **error)
{
  g_autoptr(GraftModel) copy = graft_model_copy (model);

  if (!graft_edit_apply (self, copy, error))
    return NULL;
  /* The snapshot of a function body belongs to the copy's function. */
  if (self->function != NULL)
    {
      graft_edit_undo (self, copy, NULL);
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "'%s' edits a function body: it cannot be applied on a copy of the model", self->description);
      return NULL;
    }
  return g_steal_pointer (&copy);
}

GraftValue *
graft_edit_find_input (GraftGraph *graph, const char *name, GError **error)
{
  g_autoptr(GString) names = g_string_new (NULL);

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      if (input->initializer != NULL)
        continue;
      if (strcmp (input->name, name) == 0)
        return input;
      g_string_append_printf (names, "%s'%s'", names->len ? ", " : "", input->name);
    }
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the graph has no input '%s' (inputs: %s)", name,
               names->len ? names->str : "none");
  return NULL;
}

GraftValue *
graft_edit_find_value (GraftGraph *graph, const char *name, GError **error)
{
  GraftValue *value = name ? graft_graph_lookup_value (graph, name) : NULL;

  if (name == NULL)
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the edit names no value");
  else if (value == NULL)
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the %s has no value named '%s'",
                 graph->parent_node ? "subgraph" : "graph", name);
  return value;
}

GraftNode *
graft_edit_find_node (GraftGraph *graph, const char *name, GError **error)
{
  GraftNode *node = name ? graft_graph_find_node (graph, name) : NULL;
  guint matches = 0;

  if (name == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the edit names no node");
      return NULL;
    }
  if (node != NULL)
    return node;
  for (guint i = 0; i < graph->nodes->len; i++)
    matches += strcmp (((GraftNode *) g_ptr_array_index (graph->nodes, i))->name, name) == 0;
  if (matches > 1)
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND,
                 "%u nodes are named '%s'; the name does not say which one", matches, name);
  else
    g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the %s has no node named '%s'",
                 graph->parent_node ? "subgraph" : "graph", name);
  return NULL;
}
