#include "lint/deploy-target.h"

#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/model-error.h"
#include "deploy-targets-resources.h"

#define TARGETS_PATH "/org/graft/Graft/model/targets"

static void
condition_free (GraftTargetCondition *condition)
{
  while (condition != NULL)
    {
      GraftTargetCondition *next = condition->otherwise;
      g_strfreev (condition->subjects);
      g_strfreev (condition->values);
      g_free (condition);
      condition = next;
    }
}

static void
target_op_free (GraftTargetOp *op)
{
  g_ptr_array_unref (op->conditions);
  g_free (op->note);
  g_free (op);
}

void
graft_deploy_target_free (GraftDeployTarget *target)
{
  if (target == NULL)
    return;
  g_free (target->name);
  g_free (target->title);
  g_free (target->version);
  g_strfreev (target->sources);
  g_clear_pointer (&target->dtypes, g_array_unref);
  g_clear_pointer (&target->ops, g_hash_table_unref);
  g_clear_pointer (&target->aliases, g_hash_table_unref);
  g_free (target);
}

static gboolean
fail (GError **error, const char *file, guint line, const char *format, ...) G_GNUC_PRINTF (4, 5);

static gboolean
fail (GError **error, const char *file, guint line, const char *format, ...)
{
  va_list args;
  g_autofree char *message = NULL;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED, "%s:%u: %s", file, line, message);
  return FALSE;
}

/* "A" or "A-B" into [min, max]. */
static gboolean
parse_range (const char *text, gint64 *min, gint64 *max)
{
  g_auto(GStrv) parts = g_strsplit (text, "-", 2);
  guint64 a, b;

  if (!g_ascii_string_to_unsigned (parts[0], 10, 0, G_MAXINT, &a, NULL))
    return FALSE;
  b = a;
  if (parts[1] != NULL && !g_ascii_string_to_unsigned (parts[1], 10, a, G_MAXINT, &b, NULL))
    return FALSE;
  *min = (gint64) a;
  *max = (gint64) b;
  return TRUE;
}

static gboolean
parse_dtypes (char **names, const char *file, guint line, GError **error)
{
  for (guint i = 0; names[i] != NULL; i++)
    if (graft_dtype_from_string (names[i]) == GRAFT_DTYPE_UNDEFINED)
      return fail (error, file, line, "unknown dtype '%s'", names[i]);
  return TRUE;
}

static const struct {
  const char *word;
  GraftConditionKind kind;
  gboolean needs_value;      /* "word:SUBJECT=VALUE" rather than "word:SUBJECT" */
} condition_words[] = {
  { "rank", GRAFT_CONDITION_RANK, TRUE },
  { "const", GRAFT_CONDITION_CONST, FALSE },
  { "static", GRAFT_CONDITION_STATIC, FALSE },
  { "dtype", GRAFT_CONDITION_DTYPE, TRUE },
  { "attr", GRAFT_CONDITION_ATTR, TRUE },
  { "absent", GRAFT_CONDITION_ABSENT, FALSE },
  { "ones", GRAFT_CONDITION_ONES, FALSE },
  { "no-output", GRAFT_CONDITION_NO_OUTPUT, FALSE },
  { "max-inputs", GRAFT_CONDITION_MAX_INPUTS, FALSE },
};

/* One alternative: "rank:X=4", "const:W,B", "attr:mode=DCR|CRD". */
static GraftTargetCondition *
parse_one_condition (const char *text, const char *file, guint line, GError **error)
{
  const char *colon = strchr (text, ':');
  g_autofree char *word = colon ? g_strndup (text, colon - text) : NULL;
  g_autofree char *subject = NULL;
  const char *equals;
  GraftTargetCondition *condition;
  guint k;

  for (k = 0; word != NULL && k < G_N_ELEMENTS (condition_words); k++)
    if (strcmp (condition_words[k].word, word) == 0)
      break;
  if (word == NULL || k == G_N_ELEMENTS (condition_words))
    {
      fail (error, file, line, "unknown condition '%s' (rank, const, static, dtype, attr, absent, ones, no-output, "
            "max-inputs)", text);
      return NULL;
    }
  equals = strchr (colon + 1, '=');
  if ((equals != NULL) != condition_words[k].needs_value || colon[1] == '\0' || (equals && equals[1] == '\0'))
    {
      fail (error, file, line, "condition '%s' should read %s:%s", text, word,
            condition_words[k].needs_value ? "SUBJECT=VALUE" : "SUBJECT");
      return NULL;
    }
  subject = equals ? g_strndup (colon + 1, equals - colon - 1) : g_strdup (colon + 1);
  condition = g_new0 (GraftTargetCondition, 1);
  condition->kind = condition_words[k].kind;
  condition->subjects = g_strsplit (subject, ",", -1);
  if (condition->kind == GRAFT_CONDITION_RANK && !parse_range (equals + 1, &condition->min, &condition->max))
    {
      condition_free (condition);
      fail (error, file, line, "'%s': the rank should be N or A-B", text);
      return NULL;
    }
  if ((condition->kind == GRAFT_CONDITION_NO_OUTPUT || condition->kind == GRAFT_CONDITION_MAX_INPUTS)
      && !parse_range (subject, &condition->min, &condition->max))
    {
      condition_free (condition);
      fail (error, file, line, "'%s': expected a number", text);
      return NULL;
    }
  if (condition->kind == GRAFT_CONDITION_DTYPE || condition->kind == GRAFT_CONDITION_ATTR)
    condition->values = g_strsplit (equals + 1, "|", -1);
  if (condition->kind == GRAFT_CONDITION_DTYPE && !parse_dtypes (condition->values, file, line, error))
    {
      condition_free (condition);
      return NULL;
    }
  return condition;
}

/* "C1/C2/…": alternatives, chained through otherwise. */
static GraftTargetCondition *
parse_condition (const char *text, const char *file, guint line, GError **error)
{
  g_auto(GStrv) alternatives = g_strsplit (text, "/", -1);
  GraftTargetCondition *first = NULL, *last = NULL;

  for (guint i = 0; alternatives[i] != NULL; i++)
    {
      GraftTargetCondition *condition = parse_one_condition (alternatives[i], file, line, error);
      if (condition == NULL)
        {
          condition_free (first);
          return NULL;
        }
      if (last != NULL)
        last->otherwise = condition;
      else
        first = condition;
      last = condition;
    }
  return first;
}

/* "op [DOMAIN::]OP[@A-B] CONDITION... [-- NOTE]" (words already split off "op"). */
static gboolean
parse_op (GraftDeployTarget *target, const char *rest, const char *file, guint line, GError **error)
{
  const char *dashes = strstr (rest, " -- ");
  g_autofree char *head = dashes ? g_strndup (rest, dashes - rest) : g_strdup (rest);
  g_auto(GStrv) words = NULL;
  g_autofree char *name = NULL;
  g_autofree char *full = NULL;
  char *at;
  GraftTargetOp *op;
  GPtrArray *versions;

  if (g_str_has_prefix (head, "-- "))
    return fail (error, file, line, "an op line needs an op name");
  words = g_strsplit_set (g_strstrip (head), " \t", -1);
  if (words[0] == NULL || words[0][0] == '\0')
    return fail (error, file, line, "an op line needs an op name");
  name = g_strdup (words[0]);
  op = g_new0 (GraftTargetOp, 1);
  op->conditions = g_ptr_array_new_with_free_func ((GDestroyNotify) condition_free);
  op->note = dashes ? g_strstrip (g_strdup (dashes + 4)) : NULL;
  at = strchr (name, '@');
  if (at != NULL)
    {
      gint64 min, max;
      *at = '\0';
      if (!parse_range (at + 1, &min, &max))
        {
          target_op_free (op);
          return fail (error, file, line, "'%s': the opset range should be @A or @A-B", words[0]);
        }
      op->min_version = (int) min;
      op->max_version = (int) max;
    }
  if (strstr (name, "::") == NULL)
    full = g_strconcat (target->graph == GRAFT_TARGET_GRAPH_ATEN ? "aten" : "onnx", "::", name, NULL);
  else
    {
      g_auto(GStrv) parts = g_strsplit (name, "::", 2);
      full = g_strconcat (graft_canonical_domain (parts[0]), "::", parts[1], NULL);
    }
  op->op = g_intern_string (full);
  for (guint i = 1; words[i] != NULL; i++)
    {
      GraftTargetCondition *condition;
      if (words[i][0] == '\0')
        continue;
      condition = parse_condition (words[i], file, line, error);
      if (condition == NULL)
        {
          target_op_free (op);
          return FALSE;
        }
      g_ptr_array_add (op->conditions, condition);
    }
  versions = g_hash_table_lookup (target->ops, op->op);
  if (versions == NULL)
    {
      versions = g_ptr_array_new_with_free_func ((GDestroyNotify) target_op_free);
      g_hash_table_insert (target->ops, (gpointer) op->op, versions);
    }
  g_ptr_array_add (versions, op);
  return TRUE;
}

static gboolean
parse_directive (GraftDeployTarget *target, GPtrArray *sources, const char *key, const char *value,
                 const char *file, guint line, GError **error)
{
  if (strcmp (key, "name") == 0)
    target->name = g_strdup (value);
  else if (strcmp (key, "title") == 0)
    target->title = g_strdup (value);
  else if (strcmp (key, "version") == 0)
    target->version = g_strdup (value);
  else if (strcmp (key, "source") == 0)
    g_ptr_array_add (sources, g_strdup (value));
  else if (strcmp (key, "graph") == 0)
    {
      if (strcmp (value, "onnx") != 0 && strcmp (value, "aten") != 0)
        return fail (error, file, line, "graph is onnx or aten, not '%s'", value);
      if (g_hash_table_size (target->ops) > 0)
        return fail (error, file, line, "graph must come before the op lines");
      target->graph = strcmp (value, "aten") == 0 ? GRAFT_TARGET_GRAPH_ATEN : GRAFT_TARGET_GRAPH_ONNX;
    }
  else if (strcmp (key, "fallback") == 0)
    {
      if (strcmp (value, "cpu") != 0 && strcmp (value, "none") != 0)
        return fail (error, file, line, "fallback is cpu or none, not '%s'", value);
      target->host_fallback = strcmp (value, "cpu") == 0;
    }
  else if (strcmp (key, "alias") == 0)
    {
      g_auto(GStrv) words = g_strsplit_set (value, " \t", -1);
      g_autoptr(GPtrArray) ops = g_ptr_array_new ();
      for (guint i = 0; words[i] != NULL; i++)
        if (words[i][0] != '\0')
          g_ptr_array_add (ops, words[i]);
      if (ops->len != 2 || strstr (ops->pdata[0], "::") == NULL || strstr (ops->pdata[1], "::") == NULL)
        return fail (error, file, line, "alias takes FROM TO (two DOMAIN::OP), not '%s'", value);
      g_hash_table_insert (target->aliases, (gpointer) g_intern_string (ops->pdata[0]),
                           (gpointer) g_intern_string (ops->pdata[1]));
    }
  else if (strcmp (key, "static-shapes") == 0)
    target->static_shapes = TRUE;
  else if (strcmp (key, "max-rank") == 0)
    {
      guint64 rank;
      if (!g_ascii_string_to_unsigned (value, 10, 1, 64, &rank, NULL))
        return fail (error, file, line, "max-rank takes a number from 1 to 64, not '%s'", value);
      target->max_rank = (int) rank;
    }
  else if (strcmp (key, "opsets") == 0)
    {
      gint64 min, max;
      if (!parse_range (value, &min, &max))
        return fail (error, file, line, "opsets takes A-B, not '%s'", value);
      target->min_opset = (int) min;
      target->max_opset = (int) max;
    }
  else if (strcmp (key, "dtypes") == 0)
    {
      g_auto(GStrv) names = g_strsplit_set (value, " \t", -1);
      target->dtypes = g_array_new (FALSE, FALSE, sizeof (GraftDType));
      for (guint i = 0; names[i] != NULL; i++)
        {
          GraftDType dtype = graft_dtype_from_string (names[i]);
          if (names[i][0] == '\0')
            continue;
          if (dtype == GRAFT_DTYPE_UNDEFINED)
            return fail (error, file, line, "unknown dtype '%s'", names[i]);
          g_array_append_val (target->dtypes, dtype);
        }
    }
  else
    return fail (error, file, line, "unknown directive '%s'", key);
  return TRUE;
}

GraftDeployTarget *
graft_deploy_target_parse (const char *text, gsize length, const char *file, GError **error)
{
  g_autoptr(GraftDeployTarget) target = g_new0 (GraftDeployTarget, 1);
  g_autoptr(GPtrArray) sources = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *copy = g_strndup (text, length);
  g_auto(GStrv) lines = g_strsplit (copy, "\n", -1);

  target->ops = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_ptr_array_unref);
  target->aliases = g_hash_table_new (NULL, NULL);
  target->host_fallback = TRUE;
  for (guint i = 0; lines[i] != NULL; i++)
    {
      char *line = g_strstrip (lines[i]);
      char *space;

      if (line[0] == '\0' || line[0] == '#')
        continue;
      space = line + strcspn (line, " \t");
      if (*space != '\0')
        *space++ = '\0';
      space = g_strstrip (space);
      if (strcmp (line, "op") == 0)
        {
          if (!parse_op (target, space, file, i + 1, error))
            return NULL;
        }
      else if (!parse_directive (target, sources, line, space, file, i + 1, error))
        return NULL;
    }
  if (target->name == NULL || target->title == NULL || sources->len == 0 || target->version == NULL)
    {
      fail (error, file, 1, "a target needs name, title, source and version");
      return NULL;
    }
  g_ptr_array_add (sources, NULL);
  target->sources = (char **) g_ptr_array_free (g_steal_pointer (&sources), FALSE);
  return g_steal_pointer (&target);
}

static int
compare_names (gconstpointer a, gconstpointer b)
{
  const GraftDeployTarget *ta = *(const GraftDeployTarget **) a;
  const GraftDeployTarget *tb = *(const GraftDeployTarget **) b;
  return strcmp (ta->name, tb->name);
}

/* The compiled-in files, parsed once. A file that does not parse is a
 * broken build: it is left out with a critical warning. */
static gpointer
load_targets (gpointer unused)
{
  GPtrArray *targets = g_ptr_array_new ();
  GResource *resource = graft_deploy_targets_get_resource ();
  g_auto(GStrv) names = g_resource_enumerate_children (resource, TARGETS_PATH, G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);

  for (guint i = 0; names != NULL && names[i] != NULL; i++)
    {
      g_autofree char *path = g_strconcat (TARGETS_PATH "/", names[i], NULL);
      g_autoptr(GBytes) bytes = NULL;
      g_autoptr(GError) error = NULL;
      GraftDeployTarget *target;

      if (!g_str_has_suffix (names[i], ".target"))
        continue;
      bytes = g_resource_lookup_data (resource, path, G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
      target = bytes ? graft_deploy_target_parse (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes),
                                                  names[i], &error)
                     : NULL;
      if (target == NULL)
        {
          g_critical ("deployment target %s: %s", names[i], error ? error->message : "missing");
          continue;
        }
      g_ptr_array_add (targets, target);
    }
  g_ptr_array_sort (targets, compare_names);
  return targets;
}

static GPtrArray *
all_targets (void)
{
  static GOnce once = G_ONCE_INIT;
  return g_once (&once, load_targets, NULL);
}

const GraftDeployTarget *const *
graft_deploy_targets (guint *n_targets)
{
  GPtrArray *targets = all_targets ();
  *n_targets = targets->len;
  return (const GraftDeployTarget *const *) targets->pdata;
}

const GraftDeployTarget *
graft_deploy_target_lookup (const char *name)
{
  GPtrArray *targets = all_targets ();
  for (guint i = 0; i < targets->len; i++)
    if (strcmp (((GraftDeployTarget *) g_ptr_array_index (targets, i))->name, name) == 0)
      return g_ptr_array_index (targets, i);
  return NULL;
}

char *
graft_deploy_target_list_names (void)
{
  GPtrArray *targets = all_targets ();
  GString *out = g_string_new (NULL);
  for (guint i = 0; i < targets->len; i++)
    g_string_append_printf (out, "%s%s", i ? ", " : "", ((GraftDeployTarget *) g_ptr_array_index (targets, i))->name);
  return g_string_free (out, FALSE);
}

/* op's rows, or those of the op an alias line names for it. */
static GPtrArray *
op_versions (const GraftDeployTarget *target, const char *op)
{
  const char *interned = g_intern_string (op);
  GPtrArray *versions = g_hash_table_lookup (target->ops, interned);
  const char *alias;

  if (versions == NULL && (alias = g_hash_table_lookup (target->aliases, interned)) != NULL)
    versions = g_hash_table_lookup (target->ops, alias);
  return versions;
}

const GraftTargetOp *
graft_deploy_target_find_op (const GraftDeployTarget *target, const char *op, gint64 opset)
{
  GPtrArray *versions = op_versions (target, op);
  for (guint i = 0; versions != NULL && i < versions->len; i++)
    {
      const GraftTargetOp *rule = g_ptr_array_index (versions, i);
      if (opset < 0 || rule->min_version == 0 || (opset >= rule->min_version && opset <= rule->max_version))
        return rule;
    }
  return NULL;
}

gboolean
graft_deploy_target_lists_op (const GraftDeployTarget *target, const char *op)
{
  return op_versions (target, op) != NULL;
}
