/* replace-pattern: finds every non-overlapping match of a small op
 * pattern (in the edited graph and, unless "subgraphs" is false, in the
 * If/Loop/Scan bodies inside it) and replaces each by one custom-domain
 * op (a TensorRT-style plugin: "op", "attributes", "opset") or by a
 * replacement subgraph ("replacement").
 *
 * A pattern is a list of steps, one node each, in an order where a step
 * reads only earlier steps: "m=MatMul(x,w)", "a=Add(m,b)", "Relu(a)".
 * NAME= is optional; an argument is an earlier step (".K" for its output
 * K), "*" (any value), "" (an omitted input) or a variable: the first use
 * binds it to the value read there, later uses must read the same value.
 * ";ATTR=VALUE" after a step requires that attribute. The last step is the
 * match's root; every other step must feed a later one, and what a
 * non-root step computes must not be read outside the match (otherwise
 * removing it would change the rest of the graph).
 *
 * The custom op reads the variables (in the order they first appear) and
 * gives the root's outputs. A replacement is written like a pattern, its
 * arguments naming the pattern's variables and its own earlier steps; its
 * last step gives the root's outputs, so every consumer follows. */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"
#include "edit/pattern-edits.h"
#include "onnx/op-schemas.h"

#include <string.h>

typedef enum {
  ARGUMENT_STEP,      /* an earlier step's output */
  ARGUMENT_VARIABLE,
  ARGUMENT_ANY,
  ARGUMENT_OMITTED,
} ArgumentKind;

typedef struct {
  ArgumentKind kind;
  guint index;        /* the step, or the variable */
  guint output;       /* with ARGUMENT_STEP: which output of the step */
} Argument;

typedef struct {
  char *text;         /* as written, for messages */
  char *name;         /* NULL when unnamed */
  char *domain;
  char *op_type;
  GArray *arguments;  /* Argument */
  GStrv attributes;   /* "ATTR=VALUE"; NULL when none */
} Step;

typedef struct {
  GPtrArray *steps;      /* Step* */
  GPtrArray *variables;  /* char*, in order of first appearance */
} Pattern;

static void
step_free (Step *step)
{
  g_free (step->text);
  g_free (step->name);
  g_free (step->domain);
  g_free (step->op_type);
  g_array_unref (step->arguments);
  g_strfreev (step->attributes);
  g_free (step);
}

static void
pattern_clear (Pattern *pattern)
{
  g_clear_pointer (&pattern->steps, g_ptr_array_unref);
  g_clear_pointer (&pattern->variables, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Pattern, pattern_clear)

/* Splits the list's strings at whitespace outside brackets, so that one
 * string can hold a whole pattern ("m=MatMul(x,w) Relu(m)") and an
 * attribute may read "axes=[1, 2]". */
static GPtrArray *
split_steps (const char *const *texts)
{
  GPtrArray *steps = g_ptr_array_new_with_free_func (g_free);

  for (guint i = 0; texts != NULL && texts[i] != NULL; i++)
    {
      g_autoptr(GString) current = g_string_new (NULL);
      int depth = 0;

      for (const char *c = texts[i];; c++)
        {
          if (*c == '\0' || (depth == 0 && g_ascii_isspace (*c)))
            {
              if (current->len > 0)
                g_ptr_array_add (steps, g_strdup (current->str));
              g_string_truncate (current, 0);
              if (*c == '\0')
                break;
              continue;
            }
          depth += (*c == '(' || *c == '[') - (*c == ')' || *c == ']');
          g_string_append_c (current, *c);
        }
    }
  return steps;
}

static gint
find_step (GPtrArray *steps, const char *name)
{
  for (guint i = 0; i < steps->len; i++)
    if (g_strcmp0 (((Step *) g_ptr_array_index (steps, i))->name, name) == 0)
      return (gint) i;
  return -1;
}

static gboolean
parse_argument (Pattern *pattern, Step *step, const char *text, gboolean variables_known, GError **error)
{
  g_autofree char *name = g_strstrip (g_strdup (text));
  char *dot = strrchr (name, '.');
  Argument argument = { ARGUMENT_VARIABLE, 0, 0 };
  guint64 output = 0;
  gint index;
  guint position;

  if (strpbrk (name, " \t\n()=;") != NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "'%s' in '%s' is not an argument (an earlier step, a variable, * or nothing)", name, step->text);
      return FALSE;
    }
  if (*name == '\0')
    argument.kind = ARGUMENT_OMITTED;
  else if (strcmp (name, "*") == 0)
    argument.kind = ARGUMENT_ANY;
  else if ((index = find_step (pattern->steps, name)) >= 0
           || (dot != NULL && g_ascii_string_to_unsigned (dot + 1, 10, 0, G_MAXINT32, &output, NULL)
               && (*dot = '\0', index = find_step (pattern->steps, name)) >= 0))
    {
      argument.kind = ARGUMENT_STEP;
      argument.index = index;
      argument.output = output;
    }
  else
    {
      if (dot != NULL && *dot == '\0')
        *dot = '.';
      if (!g_ptr_array_find_with_equal_func (pattern->variables, name, g_str_equal, &position))
        {
          if (variables_known)
            {
              g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                           "'%s' in '%s' is neither an earlier step nor a variable of the pattern", name, step->text);
              return FALSE;
            }
          position = pattern->variables->len;
          g_ptr_array_add (pattern->variables, g_strdup (name));
        }
      argument.index = position;
    }
  g_array_append_val (step->arguments, argument);
  return TRUE;
}

/* "[NAME=]OP(ARG,...)[;ATTR=VALUE...]"; the variables of a replacement
 * are the pattern's (variables_known), a pattern's are found here. */
static Step *
parse_step (Pattern *pattern, const char *text, gboolean variables_known, GError **error)
{
  Step *step = g_new0 (Step, 1);
  const char *open = strchr (text, '(');
  const char *close = open ? strchr (open, ')') : NULL;
  const char *equals = strchr (text, '=');
  g_autofree char *op = NULL, *arguments = NULL, *domain = NULL;
  const char *separator;
  int depth = 0;

  step->text = g_strdup (text);
  step->arguments = g_array_new (FALSE, FALSE, sizeof (Argument));
  for (const char *c = text; *c != '\0'; c++)
    depth += (*c == '(') - (*c == ')');
  if (depth != 0)
    {
      /* "MatMul(x,w Add(m,b)": the split joined two steps. */
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "pattern step '%s' is not [NAME=]OP(ARG,...)[;ATTR=VALUE...]: a '%c' is missing", text,
                   depth > 0 ? ')' : '(');
      step_free (step);
      return NULL;
    }
  if (open == NULL || close == NULL || (close[1] != '\0' && close[1] != ';'))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "pattern step '%s' is not [NAME=]OP(ARG,...)[;ATTR=VALUE...]", text);
      step_free (step);
      return NULL;
    }
  if (equals != NULL && equals < open)
    {
      step->name = g_strstrip (g_strndup (text, equals - text));
      text = equals + 1;
    }
  op = g_strstrip (g_strndup (text, open - text));
  separator = strstr (op, "::");
  domain = separator ? g_strndup (op, separator - op) : g_strdup ("");
  step->domain = g_strdup (graft_canonical_domain (domain));
  step->op_type = g_strdup (separator ? separator + 2 : op);
  if (close[1] == ';')
    step->attributes = g_strsplit (close + 2, ";", -1);
  if (*step->op_type == '\0' || (step->name != NULL && (*step->name == '\0' || find_step (pattern->steps, step->name) >= 0)))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   *step->op_type ? "pattern step '%s': its name is empty or already taken" : "pattern step '%s' has no op",
                   step->text);
      step_free (step);
      return NULL;
    }
  arguments = g_strndup (open + 1, close - open - 1);
  if (*g_strstrip (arguments) != '\0')
    {
      g_auto(GStrv) parts = g_strsplit (arguments, ",", -1);
      for (guint i = 0; parts[i] != NULL; i++)
        if (!parse_argument (pattern, step, parts[i], variables_known, error))
          {
            step_free (step);
            return NULL;
          }
    }
  return step;
}

/* Every step but the last must feed a later one: the match grows back
 * from the last step along the arguments. */
static gboolean
check_connected (GPtrArray *steps, const char *what, GError **error)
{
  g_autofree gboolean *read = g_new0 (gboolean, steps->len);

  for (guint i = 0; i < steps->len; i++)
    {
      Step *step = g_ptr_array_index (steps, i);
      for (guint j = 0; j < step->arguments->len; j++)
        {
          Argument *argument = &g_array_index (step->arguments, Argument, j);
          if (argument->kind == ARGUMENT_STEP)
            read[argument->index] = TRUE;
        }
    }
  for (guint i = 0; i + 1 < steps->len; i++)
    if (!read[i])
      {
        g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                     "%s step '%s' feeds no later step (the last step is the one whose outputs are replaced)", what,
                     ((Step *) g_ptr_array_index (steps, i))->text);
        return FALSE;
      }
  return TRUE;
}

static gboolean
parse_steps (Pattern *pattern, GPtrArray *into, const char *const *texts, gboolean replacement, GError **error)
{
  g_autoptr(GPtrArray) parts = split_steps (texts);

  if (parts->len == 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   replacement ? "the replacement has no steps" : "replace-pattern needs a 'pattern': steps like \"m=MatMul(x,w) Relu(m)\"");
      return FALSE;
    }
  for (guint i = 0; i < parts->len; i++)
    {
      /* A replacement's steps refer to each other, so they are looked up
       * in their own list while parsing. */
      GPtrArray *saved = pattern->steps;
      Step *step;

      pattern->steps = into;
      step = parse_step (pattern, g_ptr_array_index (parts, i), replacement, error);
      pattern->steps = saved;
      if (step == NULL)
        return FALSE;
      g_ptr_array_add (into, step);
    }
  return check_connected (into, replacement ? "replacement" : "pattern", error);
}

/* Commutative steps whose input order is searched both ways (2^N
 * attempts per candidate root at most); any beyond take the order that
 * matches their own arguments. */
#define MAX_SEARCHED_ORDERS 8

/* The state of one match attempt: the node each step matched and the
 * value each variable read; which commutative steps read their inputs
 * swapped in this attempt. */
typedef struct {
  GraftNode **nodes;
  GraftValue **values;
  gboolean *bound;
  const gint *order_bit;  /* per step: its bit in swapped, or -1 (not searched) */
  guint32 swapped;
} Match;

static gboolean
commutative (const Step *step)
{
  static const char *const ops[] = { "Add", "Mul", "Max", "Min", "Sum", "And", "Or", "Xor", "Equal", NULL };

  return strcmp (step->domain, "onnx") == 0 && step->arguments->len == 2 && g_strv_contains (ops, step->op_type);
}

/* node has the attribute name with the value text (read as that attribute's type). */
static gboolean
attribute_matches (GraftModel *model, GraftNode *node, const char *assignment)
{
  const char *equals = strchr (assignment, '=');
  g_autofree char *name = equals ? g_strndup (assignment, equals - assignment) : g_strdup (assignment);
  GraftAttribute *have = graft_node_get_attribute (node, name);
  g_autoptr(GraftAttribute) want = NULL;
  g_autofree char *have_text = NULL, *want_text = NULL;

  if (have == NULL || equals == NULL)
    return have != NULL;
  if ((want = graft_edit_build_attribute (model, node, name, NULL, equals + 1, NULL)) == NULL)
    return FALSE;
  have_text = graft_attribute_format_value (have, G_MAXUINT);
  want_text = graft_attribute_format_value (want, G_MAXUINT);
  return strcmp (have_text, want_text) == 0;
}

static gboolean match_step (GraftModel *model, Pattern *pattern, guint index, GraftNode *node, Match *match);

static gboolean
match_argument (GraftModel *model, Pattern *pattern, const Argument *argument, GraftValue *value, GraftNode *reader,
                Match *match)
{
  switch (argument->kind)
    {
    case ARGUMENT_OMITTED:
      return value == NULL;
    case ARGUMENT_ANY:
      return value != NULL;
    case ARGUMENT_VARIABLE:
      if (value == NULL)
        return FALSE;
      if (match->bound[argument->index])
        return match->values[argument->index] == value;
      match->bound[argument->index] = TRUE;
      match->values[argument->index] = value;
      return TRUE;
    case ARGUMENT_STEP:
    default:
      return value != NULL && value->producer != NULL && value->producer->graph == reader->graph
             && value->producer_index == argument->output
             && match_step (model, pattern, argument->index, value->producer, match);
    }
}

static void
match_copy (Match *to, const Match *from, Pattern *pattern)
{
  memcpy (to->nodes, from->nodes, pattern->steps->len * sizeof (GraftNode *));
  memcpy (to->values, from->values, pattern->variables->len * sizeof (GraftValue *));
  memcpy (to->bound, from->bound, pattern->variables->len * sizeof (gboolean));
}

static Match *
match_new (Pattern *pattern)
{
  Match *match = g_new0 (Match, 1);

  match->nodes = g_new0 (GraftNode *, pattern->steps->len);
  match->values = g_new0 (GraftValue *, pattern->variables->len);
  match->bound = g_new0 (gboolean, pattern->variables->len);
  return match;
}

static void
match_free (Match *match)
{
  g_free (match->nodes);
  g_free (match->values);
  g_free (match->bound);
  g_free (match);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Match, match_free)

/* Reads the arguments in the order given, or swapped. */
static gboolean
match_arguments (GraftModel *model, Pattern *pattern, const Step *step, GraftNode *node, gboolean swapped, Match *match)
{
  for (guint i = 0; i < step->arguments->len; i++)
    {
      const Argument *argument = &g_array_index (step->arguments, Argument, swapped ? 1 - i : i);
      if (!match_argument (model, pattern, argument, g_ptr_array_index (node->inputs, i), node, match))
        return FALSE;
    }
  return TRUE;
}

static gboolean
match_step (GraftModel *model, Pattern *pattern, guint index, GraftNode *node, Match *match)
{
  const Step *step = g_ptr_array_index (pattern->steps, index);
  g_autoptr(Match) saved = NULL;

  if (match->nodes[index] != NULL)
    return match->nodes[index] == node;
  if (node->op_type != g_intern_string (step->op_type) || strcmp (node->domain, step->domain) != 0
      || node->inputs->len != step->arguments->len)
    return FALSE;
  for (guint i = 0; i < pattern->steps->len; i++)
    if (match->nodes[i] == node)
      return FALSE;   /* one node per step */
  for (guint i = 0; step->attributes != NULL && step->attributes[i] != NULL; i++)
    if (!attribute_matches (model, node, step->attributes[i]))
      return FALSE;
  match->nodes[index] = node;
  if (!commutative (step))
    return match_arguments (model, pattern, step, node, FALSE, match);
  /* Add(m, b) matches both Add(MatMul, bias) and Add(bias, MatMul).
   * find_matches() tries every order of the first MAX_SEARCHED_ORDERS
   * commutative steps (a choice that fits here may fail at a later step:
   * "a=Add(x,y) Mul(a,x)"); a step beyond them takes the order that
   * matches its own arguments. */
  if (match->order_bit != NULL && match->order_bit[index] >= 0)
    return match_arguments (model, pattern, step, node, (match->swapped >> match->order_bit[index]) & 1, match);
  saved = match_new (pattern);
  match_copy (saved, match, pattern);
  if (match_arguments (model, pattern, step, node, FALSE, match))
    return TRUE;
  match_copy (match, saved, pattern);
  return match_arguments (model, pattern, step, node, TRUE, match);
}

/* What a step other than the root computes is read only inside the
 * match; none of the match's nodes is taken by an earlier match. When it
 * is not so, reason (may be NULL) gets why, for the preview. */
static gboolean
match_is_closed (Pattern *pattern, Match *match, GHashTable *taken, char **reason)
{
  g_autoptr(GHashTable) inside = g_hash_table_new (NULL, NULL);
  guint root = pattern->steps->len - 1;

  for (guint i = 0; i < pattern->steps->len; i++)
    {
      if (g_hash_table_contains (taken, match->nodes[i]))
        {
          if (reason != NULL)
            *reason = g_strdup_printf ("node '%s' is part of an earlier match", match->nodes[i]->name);
          return FALSE;
        }
      g_hash_table_add (inside, match->nodes[i]);
    }
  for (guint i = 0; i < pattern->variables->len; i++)
    if (match->values[i]->producer != NULL && g_hash_table_contains (inside, match->values[i]->producer))
      {
        /* a variable reading what the match computes would lose its producer */
        if (reason != NULL)
          *reason = g_strdup_printf ("variable '%s' would read '%s', which the match computes",
                                     (const char *) g_ptr_array_index (pattern->variables, i), match->values[i]->name);
        return FALSE;
      }
  for (guint i = 0; i < root; i++)
    for (guint j = 0; j < match->nodes[i]->outputs->len; j++)
      {
        GraftValue *out = g_ptr_array_index (match->nodes[i]->outputs, j);
        if (out == NULL)
          continue;
        if (out->is_graph_output)
          {
            if (reason != NULL)
              *reason = g_strdup_printf ("'%s' (of node '%s') is a graph output", out->name, match->nodes[i]->name);
            return FALSE;
          }
        for (guint k = 0; k < out->consumers->len; k++)
          if (!g_hash_table_contains (inside, g_ptr_array_index (out->consumers, k)))
            {
              if (reason != NULL)
                *reason = g_strdup_printf ("'%s' (of node '%s') is also read by node '%s', outside the match",
                                           out->name, match->nodes[i]->name,
                                           ((GraftNode *) g_ptr_array_index (out->consumers, k))->name);
              return FALSE;
            }
      }
  return TRUE;
}

static GraftPatternMatch *
pattern_match_new (Pattern *pattern, GraftGraph *graph, Match *match, char *reason)
{
  GraftPatternMatch *found = g_new0 (GraftPatternMatch, 1);

  found->graph = graph;
  found->nodes = g_ptr_array_new ();
  for (guint i = 0; i < pattern->steps->len; i++)
    g_ptr_array_add (found->nodes, match->nodes[i]);
  found->reason = reason;
  return found;
}

static void
pattern_match_free (GraftPatternMatch *found)
{
  g_ptr_array_unref (found->nodes);
  g_free (found->reason);
  g_free (found);
}

static void
match_reset (Match *match, Pattern *pattern, guint32 swapped)
{
  memset (match->nodes, 0, pattern->steps->len * sizeof (GraftNode *));
  memset (match->values, 0, pattern->variables->len * sizeof (GraftValue *));
  memset (match->bound, 0, pattern->variables->len * sizeof (gboolean));
  match->swapped = swapped;
}

/* The bit of each searched commutative step; returns how many there are. */
static guint
number_orders (Pattern *pattern, gint *order_bit)
{
  guint n = 0;

  for (guint i = 0; i < pattern->steps->len; i++)
    order_bit[i] = commutative (g_ptr_array_index (pattern->steps, i)) && n < MAX_SEARCHED_ORDERS ? (gint) n++ : -1;
  return n;
}

/* A match rooted at node that is closed (match_is_closed()), trying the
 * input orders of the commutative steps; when the ops fit only as a match
 * that is not closed, open (may be NULL) gets the first such one and
 * reason why. */
static Match *
match_at (GraftModel *model, Pattern *pattern, const gint *order_bit, guint n_orders, GraftNode *node,
          GHashTable *taken, Match **open, char **reason)
{
  const Step *root_step = g_ptr_array_index (pattern->steps, pattern->steps->len - 1);
  g_autoptr(Match) match = NULL;

  /* Most nodes fail here: no need to try their orders. */
  if (node->op_type != g_intern_string (root_step->op_type) || node->inputs->len != root_step->arguments->len)
    return NULL;
  match = match_new (pattern);
  match->order_bit = order_bit;
  for (guint32 swapped = 0; swapped < (1u << n_orders); swapped++)
    {
      char *why = NULL;

      match_reset (match, pattern, swapped);
      if (!match_step (model, pattern, pattern->steps->len - 1, node, match))
        continue;
      if (match_is_closed (pattern, match, taken, open ? &why : NULL))
        return g_steal_pointer (&match);
      if (open != NULL && *open == NULL)
        {
          *open = match_new (pattern);
          match_copy (*open, match, pattern);
          *reason = why;
        }
      else
        g_free (why);
    }
  return NULL;
}

/* The matches in graph, in node order of their roots, none overlapping;
 * skipped (may be NULL) gets the candidates whose ops fit but which are
 * not closed (GraftPatternMatch*, with the reason). */
static GPtrArray *
find_matches (GraftModel *model, Pattern *pattern, GraftGraph *graph, GPtrArray *skipped)
{
  GPtrArray *matches = g_ptr_array_new_with_free_func ((GDestroyNotify) match_free);
  g_autoptr(GHashTable) taken = g_hash_table_new (NULL, NULL);
  g_autofree gint *order_bit = g_new (gint, pattern->steps->len);
  guint n_orders = number_orders (pattern, order_bit);

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      g_autoptr(Match) open = NULL;
      char *reason = NULL;
      Match *match = match_at (model, pattern, order_bit, n_orders, g_ptr_array_index (graph->nodes, i), taken,
                               skipped ? &open : NULL, &reason);

      if (match == NULL)
        {
          if (open != NULL)
            g_ptr_array_add (skipped, pattern_match_new (pattern, graph, open, reason));
          continue;
        }
      for (guint j = 0; j < pattern->steps->len; j++)
        g_hash_table_add (taken, match->nodes[j]);
      g_ptr_array_add (matches, match);
    }
  return matches;
}

typedef struct {
  GraftEditScope *scope;
  GVariant *params;
  Pattern pattern;
  GPtrArray *replacement;  /* Step*, or NULL for the custom op */
  char *domain;            /* the custom op's */
  char *op_type;
  GPtrArray *added;        /* GraftNode*: the new nodes, to check them */
} Rewrite;

/* A new node of step in graph, named name, its attributes set. */
static GraftNode *
add_node (Rewrite *rewrite, GraftGraph *graph, const char *domain, const char *op_type, const char *name,
          const char *const *attributes, GError **error)
{
  GraftNode *node = graft_graph_add_node (graph, domain, op_type, name);
  g_autoptr(GVariant) params = g_variant_ref_sink (graft_edit_params_new (
    "attributes", attributes ? g_variant_new_strv (attributes, -1) : NULL, NULL));

  g_ptr_array_add (rewrite->added, node);
  return graft_edit_add_attributes (rewrite->scope->model, node, params, error) ? node : NULL;
}

static GraftValue *
argument_value (Rewrite *rewrite, Match *match, GPtrArray *made, const Argument *argument)
{
  GraftNode *producer;

  switch (argument->kind)
    {
    case ARGUMENT_VARIABLE:
      return match->values[argument->index];
    case ARGUMENT_STEP:
      producer = g_ptr_array_index (made, argument->index);
      return argument->output < producer->outputs->len ? g_ptr_array_index (producer->outputs, argument->output) : NULL;
    case ARGUMENT_OMITTED:
    case ARGUMENT_ANY:
    default:
      return NULL;
    }
}

/* The ONNX schema's input count (shape inference does not look at
 * inputs an op does not have: "Relu(x,w)" would pass it). */
static gboolean
check_input_count (Rewrite *rewrite, Step *step, GraftNode *node, GError **error)
{
  const GraftOnnxSchema *schema = graft_onnx_schema_lookup (
    node->domain, node->op_type, graft_model_get_opset (rewrite->scope->model, node->domain));
  g_auto(GStrv) names = schema ? g_strsplit (schema->inputs, " ", -1) : NULL;
  guint least = 0, most = 0;
  g_autofree char *counted = NULL;

  if (schema == NULL)
    return TRUE;
  for (guint i = 0; names[i] != NULL; i++)
    {
      if (*names[i] == '\0')
        continue;
      if (g_str_has_suffix (names[i], "..."))
        most = G_MAXUINT;
      else if (most != G_MAXUINT)
        most++;
      least += !g_str_has_suffix (names[i], "?") && !g_str_has_suffix (names[i], "...");
    }
  if (node->inputs->len >= least && node->inputs->len <= most)
    return TRUE;
  counted = most == G_MAXUINT ? g_strdup_printf ("at least %u", least)
            : least == most   ? g_strdup_printf ("%u", least)
                              : g_strdup_printf ("%u to %u", least, most);
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
               "replacement step '%s' gives %s %u inputs; it takes %s (%s)", step->text, node->op_type,
               node->inputs->len, counted, schema->inputs);
  return FALSE;
}

/* Builds the replacement's nodes for one match; the last one gives outputs. */
static gboolean
build_replacement (Rewrite *rewrite, GraftGraph *graph, Match *match, const char *root_name, GPtrArray *outputs,
                   GPtrArray *made, GError **error)
{
  guint n = rewrite->replacement->len;

  for (guint i = 0; i < n; i++)
    {
      Step *step = g_ptr_array_index (rewrite->replacement, i);
      g_autofree char *hint = g_strdup_printf ("%s/%s", root_name, step->name ? step->name : step->op_type);
      g_autofree char *name = i + 1 == n ? g_strdup (root_name) : graft_edit_unique_node_name (graph, hint);
      GraftNode *node = add_node (rewrite, graph, step->domain, step->op_type, name,
                                  (const char *const *) step->attributes, error);

      if (node == NULL)
        return FALSE;
      g_ptr_array_add (made, node);
      for (guint j = 0; j < step->arguments->len; j++)
        {
          const Argument *argument = &g_array_index (step->arguments, Argument, j);
          GraftValue *value = argument_value (rewrite, match, made, argument);
          if (argument->kind == ARGUMENT_STEP && value == NULL)
            {
              g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                           "replacement step '%s' reads an output its step does not have", step->text);
              return FALSE;
            }
          graft_node_add_input (node, value);
        }
      if (!check_input_count (rewrite, step, node, error))
        return FALSE;
      if (i + 1 == n)
        for (guint j = 0; j < outputs->len; j++)
          graft_node_add_output (node, g_ptr_array_index (outputs, j));
      else
        graft_node_add_output (node, graft_graph_new_anonymous_value (graph, name));
    }
  return TRUE;
}

/* Replaces one match in graph; the root's outputs keep their values, so
 * their consumers and graph outputs follow. */
static gboolean
replace_match (Rewrite *rewrite, GraftGraph *graph, Match *match, GError **error)
{
  guint root = rewrite->pattern.steps->len - 1;
  g_autoptr(GHashTable) set = g_hash_table_new (NULL, NULL);
  g_autoptr(GPtrArray) outputs = g_ptr_array_new ();
  g_autoptr(GPtrArray) made = g_ptr_array_new ();
  g_autoptr(GPtrArray) interior = g_ptr_array_new ();
  g_autofree char *root_name = g_strdup (match->nodes[root]->name);
  GraftGroup *group = match->nodes[root]->group;

  for (guint i = 0; i < rewrite->pattern.steps->len; i++)
    {
      g_hash_table_add (set, match->nodes[i]);
      for (guint j = 0; i != root && j < match->nodes[i]->outputs->len; j++)
        if (g_ptr_array_index (match->nodes[i]->outputs, j) != NULL)
          g_ptr_array_add (interior, g_ptr_array_index (match->nodes[i]->outputs, j));
    }
  for (guint i = 0; i < match->nodes[root]->outputs->len; i++)
    g_ptr_array_add (outputs, g_ptr_array_index (match->nodes[root]->outputs, i));
  graft_graph_remove_nodes_keeping_values (graph, set, outputs);
  for (guint i = 0; i < interior->len; i++)
    graft_graph_remove_value (graph, g_ptr_array_index (interior, i));
  if (rewrite->replacement != NULL)
    {
      if (!build_replacement (rewrite, graph, match, root_name, outputs, made, error))
        return FALSE;
    }
  else
    {
      g_autofree const char **attributes = graft_edit_param_strv (rewrite->params, "attributes");
      GraftNode *node = add_node (rewrite, graph, rewrite->domain, rewrite->op_type, root_name, attributes, error);
      if (node == NULL)
        return FALSE;
      g_ptr_array_add (made, node);
      for (guint i = 0; i < rewrite->pattern.variables->len; i++)
        graft_node_add_input (node, match->values[i]);
      for (guint i = 0; i < outputs->len; i++)
        graft_node_add_output (node, g_ptr_array_index (outputs, i));
    }
  for (guint i = 0; i < made->len; i++)
    graft_graph_move_node_to_group (graph, g_ptr_array_index (made, i), group);
  graft_graph_update_group_counts (graph);
  return TRUE;
}

/* The graphs to search: graph, then (when subgraphs) the bodies inside it, depth first. */
static void
collect_graphs (GraftGraph *graph, gboolean subgraphs, GPtrArray *graphs)
{
  g_ptr_array_add (graphs, graph);
  for (guint i = 0; subgraphs && i < graph->nodes->len; i++)
    {
      g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (g_ptr_array_index (graph->nodes, i));
      for (guint j = 0; bodies != NULL && j < bodies->len; j++)
        collect_graphs (g_ptr_array_index (bodies, j), TRUE, graphs);
    }
}

/* Runs inference once and fails when it rejects a new node (its
 * attributes, its input types); fixes declared types the rewrite made wrong. */
static gboolean
check_added (Rewrite *rewrite, GPtrArray *notes, GError **error)
{
  GraftShapeInferenceReport report = { 0 };
  g_autoptr(GraftInference) inference = NULL;
  g_autoptr(GHashTable) prefixes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  gboolean ok = TRUE;

  if (rewrite->scope->function != NULL)
    return TRUE;
  for (guint i = 0; i < rewrite->added->len; i++)
    {
      GraftNode *node = g_ptr_array_index (rewrite->added, i);
      g_hash_table_add (prefixes, g_strdup_printf ("node '%s' (%s): ", node->name, node->op));
    }
  inference = graft_shape_inference_run (rewrite->scope->model, &report);
  for (guint i = 0; ok && report.problems != NULL && i < report.problems->len; i++)
    {
      const char *problem = g_ptr_array_index (report.problems, i);
      const char *colon = strstr (problem, "): ");
      g_autofree char *prefix = colon ? g_strndup (problem, colon + 3 - problem) : NULL;

      if (prefix != NULL && g_hash_table_contains (prefixes, prefix))
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the replacement does not fit: %s", problem);
          ok = FALSE;
        }
    }
  graft_shape_inference_report_clear (&report);
  if (ok)
    graft_edit_refresh_declared_types (inference, rewrite->scope->model, rewrite->scope->graph, notes);
  return ok;
}

static char *
pattern_text (Pattern *pattern)
{
  g_autoptr(GString) text = g_string_new (NULL);

  for (guint i = 0; i < pattern->steps->len; i++)
    g_string_append_printf (text, "%s%s", i ? " " : "", ((Step *) g_ptr_array_index (pattern->steps, i))->text);
  return g_string_free (g_steal_pointer (&text), FALSE);
}

static gboolean
prepare (Rewrite *rewrite, GError **error)
{
  g_autofree const char **pattern = graft_edit_param_strv (rewrite->params, "pattern");
  g_autofree const char **replacement = graft_edit_param_strv (rewrite->params, "replacement");
  const char *op = graft_edit_param_string (rewrite->params, "op");

  rewrite->pattern.steps = g_ptr_array_new_with_free_func ((GDestroyNotify) step_free);
  rewrite->pattern.variables = g_ptr_array_new_with_free_func (g_free);
  if (!parse_steps (&rewrite->pattern, rewrite->pattern.steps, pattern, FALSE, error))
    return FALSE;
  if ((op == NULL) == (replacement == NULL))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "replace-pattern needs either an 'op' (\"domain::Op\", a custom op) or a 'replacement' (steps)");
      return FALSE;
    }
  if (replacement != NULL)
    {
      rewrite->replacement = g_ptr_array_new_with_free_func ((GDestroyNotify) step_free);
      return parse_steps (&rewrite->pattern, rewrite->replacement, replacement, TRUE, error);
    }
  if (!graft_edit_split_op (op, &rewrite->domain, &rewrite->op_type, error))
    return FALSE;
  if (strcmp (graft_canonical_domain (rewrite->domain), "onnx") == 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "'%s' is an ONNX op: a pattern is replaced by a custom-domain op (\"com.example::%s\") or by a "
                   "'replacement' subgraph", op, rewrite->op_type);
      return FALSE;
    }
  return TRUE;
}

static gboolean
replace_pattern (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  Rewrite rewrite = { scope, params, { NULL, NULL }, NULL, NULL, NULL, g_ptr_array_new () };
  g_autoptr(GPtrArray) graphs = g_ptr_array_new ();
  g_autofree char *text = NULL;
  guint n_total = 0;
  gboolean ok = prepare (&rewrite, error);

  if (ok)
    {
      text = pattern_text (&rewrite.pattern);
      collect_graphs (scope->graph, graft_edit_param_bool (params, "subgraphs", TRUE), graphs);
    }
  for (guint g = 0; ok && g < graphs->len; g++)
    {
      GraftGraph *graph = g_ptr_array_index (graphs, g);
      g_autoptr(GPtrArray) matches = find_matches (scope->model, &rewrite.pattern, graph, NULL);
      g_autofree char *where = NULL;

      for (guint i = 0; ok && i < matches->len; i++)
        ok = replace_match (&rewrite, graph, g_ptr_array_index (matches, i), error);
      if (ok && matches->len > 0)
        ok = graft_edit_toposort (graph, error);
      if (!ok || matches->len == 0)
        continue;
      n_total += matches->len;
      where = graft_edit_describe_graph (graph);
      g_ptr_array_add (notes, g_strdup_printf ("%s: %u %s of '%s' replaced", where, matches->len,
                                               matches->len == 1 ? "match" : "matches", text));
    }
  if (ok && n_total == 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the pattern '%s' matches nothing in %s%s",
                   text, scope->graph->parent_node ? "this subgraph" : "the graph",
                   graphs->len > 1 ? " nor in the subgraphs inside it" : "");
      ok = FALSE;
    }
  if (ok && rewrite.replacement == NULL)
    {
      GraftNode *first = g_ptr_array_index (rewrite.added, 0);
      g_ptr_array_add (notes, g_strdup_printf ("each match is now one %s node reading %u values", first->op,
                                               rewrite.pattern.variables->len));
      graft_edit_import_domain (scope, first, params, notes);
    }
  ok = ok && check_added (&rewrite, notes, error);
  pattern_clear (&rewrite.pattern);
  g_clear_pointer (&rewrite.replacement, g_ptr_array_unref);
  g_free (rewrite.domain);
  g_free (rewrite.op_type);
  g_ptr_array_unref (rewrite.added);
  return ok;
}

static char *
describe_replace_pattern (GVariant *params)
{
  g_autofree const char **pattern = graft_edit_param_strv (params, "pattern");
  g_autofree char *text = pattern ? g_strjoinv (" ", (char **) pattern) : g_strdup ("");
  const char *op = graft_edit_param_string (params, "op");

  return g_strdup_printf ("Replace pattern %s by %s", text, op ? op : "a subgraph");
}

const GraftEditOperation graft_edit_ops_pattern[] = {
  { .id = "replace-pattern", .node_params = "", .value_params = "", .apply = replace_pattern,
    .describe = describe_replace_pattern,
    .option = "--replace-pattern", .argument = "PATTERN=>DOMAIN::OP[;ATTR=V...] or PATTERN=>STEPS",
    .parse = graft_edit_parse_replace_pattern,
    .help = "replace every match of PATTERN (steps like \"m=MatMul(x,w) a=Add(m,b) Relu(a)\": a step reads earlier "
            "steps or variables; ';ATTR=V' requires an attribute), also inside If/Loop bodies, by one custom op reading "
            "the variables, or by STEPS written the same way; fails when nothing matches",
    .target = GRAFT_EDIT_TARGET_NODE, .label = "Replace _Pattern…", .rank = 13, .dialog = "pattern" },
  { NULL },
};

/* ---------- the preview and suggestions (pattern-edits.h) ---------- */

static gboolean
parse_pattern (Pattern *pattern, const char *text, GError **error)
{
  const char *texts[] = { text, NULL };

  pattern->steps = g_ptr_array_new_with_free_func ((GDestroyNotify) step_free);
  pattern->variables = g_ptr_array_new_with_free_func (g_free);
  return parse_steps (pattern, pattern->steps, texts, FALSE, error);
}

GraftPatternPreview *
graft_pattern_preview_new (GraftModel *model, GraftGraph *graph, const char *pattern_text, gboolean subgraphs,
                           GError **error)
{
  g_auto(Pattern) pattern = { NULL, NULL };
  g_autoptr(GPtrArray) graphs = g_ptr_array_new ();
  GraftPatternPreview *preview;

  g_return_val_if_fail (graph != NULL && pattern_text != NULL, NULL);
  if (!parse_pattern (&pattern, pattern_text, error))
    return NULL;
  preview = g_new0 (GraftPatternPreview, 1);
  preview->matches = g_ptr_array_new_with_free_func ((GDestroyNotify) pattern_match_free);
  preview->skipped = g_ptr_array_new_with_free_func ((GDestroyNotify) pattern_match_free);
  preview->n_steps = pattern.steps->len;
  preview->n_variables = pattern.variables->len;
  collect_graphs (graph, subgraphs, graphs);
  for (guint g = 0; g < graphs->len; g++)
    {
      GraftGraph *searched = g_ptr_array_index (graphs, g);
      g_autoptr(GPtrArray) matches = find_matches (model, &pattern, searched, preview->skipped);

      for (guint i = 0; i < matches->len; i++)
        g_ptr_array_add (preview->matches, pattern_match_new (&pattern, searched, g_ptr_array_index (matches, i), NULL));
    }
  return preview;
}

void
graft_pattern_preview_free (GraftPatternPreview *preview)
{
  if (preview == NULL)
    return;
  g_ptr_array_unref (preview->matches);
  g_ptr_array_unref (preview->skipped);
  g_free (preview);
}

gboolean
graft_pattern_check_replacement (const char *pattern_text, const char *replacement, GError **error)
{
  g_auto(Pattern) pattern = { NULL, NULL };
  g_autoptr(GPtrArray) steps = g_ptr_array_new_with_free_func ((GDestroyNotify) step_free);
  const char *texts[] = { replacement, NULL };

  return parse_pattern (&pattern, pattern_text, error) && parse_steps (&pattern, steps, texts, TRUE, error);
}

/* The names a suggestion gives its steps and variables. */
typedef struct {
  GHashTable *step_names;   /* GraftNode* → char* */
  GHashTable *variables;    /* GraftValue* → char* */
  GHashTable *used;         /* every name given */
  GString *text;
  guint n_steps;
  guint max_steps;
} Suggestion;

/* "matmul" → "m", then "m2", "m3" … when taken. */
static char *
suggest_name (Suggestion *suggestion, const char *stem)
{
  char *name = g_strdup (stem);

  for (guint n = 2; g_hash_table_contains (suggestion->used, name); n++)
    {
      g_free (name);
      name = g_strdup_printf ("%s%u", stem, n);
    }
  g_hash_table_add (suggestion->used, name);
  return name;
}

/* node's input i is a step of its own when its producer is in node's
 * graph, is no Constant (a constant reads better as a variable) and only
 * node reads its one output. */
static GraftNode *
suggested_producer (GraftNode *node, GraftValue *value)
{
  GraftNode *producer = value ? value->producer : NULL;

  if (producer == NULL || producer->graph != node->graph || producer->outputs->len != 1
      || value->is_graph_output || value->consumers->len != 1 || strcmp (producer->op_type, "Constant") == 0)
    return NULL;
  return producer;
}

static void
suggest_step (Suggestion *suggestion, GraftNode *node, gboolean root)
{
  g_autoptr(GString) arguments = g_string_new (NULL);

  suggestion->n_steps++;
  /* Producers first: a step reads only earlier ones. */
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftNode *producer = suggested_producer (node, g_ptr_array_index (node->inputs, i));
      if (producer != NULL && suggestion->n_steps < suggestion->max_steps
          && !g_hash_table_contains (suggestion->step_names, producer))
        suggest_step (suggestion, producer, FALSE);
    }
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);
      const char *name;

      if (value == NULL)
        name = "";
      else if (value->producer != NULL && g_hash_table_contains (suggestion->step_names, value->producer))
        name = g_hash_table_lookup (suggestion->step_names, value->producer);
      else if ((name = g_hash_table_lookup (suggestion->variables, value)) == NULL)
        {
          name = suggest_name (suggestion, value->initializer != NULL ? "w" : "x");
          g_hash_table_insert (suggestion->variables, value, (gpointer) name);
        }
      g_string_append_printf (arguments, "%s%s", i ? "," : "", name);
    }
  if (suggestion->text->len > 0)
    g_string_append_c (suggestion->text, ' ');
  if (!root)
    {
      g_autofree char *stem = g_ascii_strdown (node->op_type, 1);
      char *name = suggest_name (suggestion, stem);
      g_hash_table_insert (suggestion->step_names, node, name);
      g_string_append_printf (suggestion->text, "%s=", name);
    }
  if (strcmp (node->domain, "onnx") != 0)
    g_string_append_printf (suggestion->text, "%s::", node->domain);
  g_string_append_printf (suggestion->text, "%s(%s)", node->op_type, arguments->str);
}

char *
graft_pattern_suggest (GraftNode *node, guint max_steps)
{
  Suggestion suggestion = { 0 };

  g_return_val_if_fail (node != NULL, NULL);
  suggestion.step_names = g_hash_table_new (NULL, NULL);
  suggestion.variables = g_hash_table_new (NULL, NULL);
  suggestion.used = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  suggestion.text = g_string_new (NULL);
  suggestion.max_steps = MAX (max_steps, 1);
  suggest_step (&suggestion, node, TRUE);
  g_hash_table_unref (suggestion.step_names);
  g_hash_table_unref (suggestion.variables);
  g_hash_table_unref (suggestion.used);
  return g_string_free (suggestion.text, FALSE);
}
