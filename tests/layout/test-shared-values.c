/* Constants and shape values read far apart are listed at each reader, not
 * drawn as long edges (layout/shared-values.h), on transformers exported
 * by torch.onnx.export: the TorchScript-based exporter puts three Gather
 * indices of `layers.0` in front of all 24 layers; the dynamo exporter and
 * HuggingFace's BERT and GPT-2 (random weights) are checked alongside.
 *
 * "Long" is measured in ranks: an edge's extent along the layout direction
 * over the rank pitch (the median box height plus the gap between ranks).
 * An edge carrying a static value (one computed from initializers,
 * Constant nodes and tensor shapes only, classified here on its own) read
 * in several modules, or a constant read away from its own, may run a few
 * ranks (BERT's position ids run 12 down its embeddings); none may run
 * from one layer to a far one. The zoo's HuggingFace exports are checked
 * too when `make zoo` has made them. Collapsed and
 * expanded, the layers must come out alike: every "layers.N" box as tall
 * as layers.1's. */
#include <string.h>

#include "../test-python.h"
#include "ir/graph.h"
#include "layout/layout.h"
#include "loader.h"

/* The rank pitch's multiple an edge of a static value may span. */
#define MAX_STATIC_EDGE_RANKS 16

static char *
exported_model (const char *name)
{
  g_autofree char *python = graft_test_python ();
  const char *source = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *script = g_build_filename (source, "tests", "fixtures", "make-onnx-models.py", NULL);
  g_autofree char *dir = g_build_filename (source, "tests", "fixtures-generated", "models", NULL);
  g_autofree char *file = g_strconcat (name, ".onnx", NULL);
  const char *argv[] = { python, script, dir, name, NULL };
  g_autoptr (GError) error = NULL;

  if (!graft_test_spawn (argv, &error))
    g_error ("make-onnx-models.py %s: %s", name, error->message);
  return g_build_filename (dir, file, NULL);
}

static gboolean
is_shape_op (const GraftNode *node)
{
  return strcmp (node->op_type, "Shape") == 0 || strcmp (node->op_type, "Size") == 0;
}

typedef enum {
  RUNTIME,   /* depends on data */
  SHAPE,     /* computed from constants and tensor shapes */
  CONSTANT,  /* computed from constants alone */
} Origin;

/* What value is computed from, by the producers' chain. */
static Origin
origin_of (GHashTable *memo, GraftValue *value)
{
  gpointer known;
  Origin origin = CONSTANT;

  if (value->initializer != NULL)
    return CONSTANT;
  if (value->producer == NULL)
    return RUNTIME;
  if (g_hash_table_lookup_extended (memo, value, NULL, &known))
    return GPOINTER_TO_INT (known);
  if (is_shape_op (value->producer))
    origin = SHAPE;
  else
    for (guint i = 0; origin != RUNTIME && i < value->producer->inputs->len; i++)
      {
        GraftValue *input = g_ptr_array_index (value->producer->inputs, i);

        if (input != NULL)
          origin = MIN (origin, origin_of (memo, input));
      }
  g_hash_table_insert (memo, value, GINT_TO_POINTER (origin));
  return origin;
}

/* Readers in more than one module (by their scopes, as the file says). */
static gboolean
read_in_several_modules (GraftValue *value)
{
  for (guint i = 1; i < value->consumers->len; i++)
    if (((GraftNode *) g_ptr_array_index (value->consumers, i))->group
        != ((GraftNode *) g_ptr_array_index (value->consumers, 0))->group)
      return TRUE;
  return FALSE;
}

/* A reader in another module than the producer's. */
static gboolean
read_away (GraftValue *value)
{
  for (guint i = 0; i < value->consumers->len; i++)
    if (((GraftNode *) g_ptr_array_index (value->consumers, i))->group != value->producer->group)
      return TRUE;
  return FALSE;
}

/* A shape value read in several modules, or a constant read away from
 * its own: drawn at its readers, never as a long edge. */
static gboolean
is_checked (GHashTable *memo, GraftValue *value)
{
  Origin origin = origin_of (memo, value);

  return (origin >= SHAPE && read_in_several_modules (value))
         || (origin == CONSTANT && value->producer != NULL && read_away (value));
}

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

static double
rank_pitch (GraftScene *scene)
{
  g_autoptr (GArray) heights = g_array_new (FALSE, FALSE, sizeof (double));

  for (guint i = 0; i < graft_scene_get_n_nodes (scene); i++)
    g_array_append_val (heights, graft_scene_get_node (scene, i)->rect.height);
  g_array_sort (heights, compare_doubles);
  /* 30: the gap between ranks when shapes are shown (layout.c). */
  return g_array_index (heights, double, heights->len / 2) + 30;
}

/* Edges of static values read in several modules, longer than
 * MAX_STATIC_EDGE_RANKS ranks. */
static guint
count_long_static_edges (GraftScene *scene, double *longest_ranks)
{
  g_autoptr (GHashTable) memo = g_hash_table_new (NULL, NULL);
  double pitch = rank_pitch (scene);
  guint n_long = 0;

  *longest_ranks = 0;
  for (guint i = 0; i < graft_scene_get_n_edges (scene); i++)
    {
      GraftSceneEdge *edge = graft_scene_get_edge (scene, i);
      double ranks;

      if (edge->value == NULL || !is_checked (memo, edge->value))
        continue;
      ranks = edge->bounds.height / pitch;
      *longest_ranks = MAX (*longest_ranks, ranks);
      if (ranks > MAX_STATIC_EDGE_RANKS)
        {
          if (n_long < 3)
            g_test_message ("long edge of %s: %.0f ranks", edge->value->name, ranks);
          n_long++;
        }
    }
  return n_long;
}

/* Every layers.N box (N > 0) is as tall as layers.1's (layers.0 may hold
 * what the exporter put only there). */
static void
assert_layers_alike (GraftScene *scene)
{
  const GraftSceneGroup *first = NULL;
  guint n_layers = 0;

  for (guint i = 0; i < graft_scene_get_n_groups (scene); i++)
    {
      const GraftSceneGroup *group = graft_scene_get_group (scene, i);

      if (!g_str_has_prefix (group->title, "layers.") || strchr (group->title + 7, '.') != NULL)
        continue;
      n_layers++;
      if (strcmp (group->title, "layers.0") == 0)
        continue;
      if (first == NULL)
        first = group;
      /* Widths follow the titles ("layers.10 · TransformerEncoderLayer"). */
      g_assert_cmpfloat_with_epsilon (group->rect.height, first->rect.height, 1.0);
    }
  g_assert_cmpuint (n_layers, ==, 24);
}

static GraftScene *
compute (GraftLayout *layout)
{
  g_autoptr (GError) error = NULL;
  GraftScene *scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);

  g_assert_no_error (error);
  return scene;
}

static void
check_no_long_static_edges (const char *name, const char *path)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_autoptr (GraftLayout) layout = NULL;
  GraftGraph *graph;

  g_assert_no_error (error);
  graph = graft_model_get_graph (model);
  layout = graft_layout_new (graph);
  for (guint expand = 0; expand < 2; expand++)
    {
      g_autoptr (GraftScene) scene = NULL;
      double longest;
      guint n_long;

      if (expand)
        graft_layout_expand_all (layout);
      scene = compute (layout);
      n_long = count_long_static_edges (scene, &longest);
      g_test_message ("%s %s: %u edges, longest static edge %.1f ranks", name, expand ? "expanded" : "default",
                      graft_scene_get_n_edges (scene), longest);
      g_assert_cmpuint (n_long, ==, 0);
      if (g_str_has_prefix (name, "transformer24"))
        assert_layers_alike (scene);
    }
}

static void
test_no_long_static_edges (gconstpointer data)
{
  g_autofree char *path = exported_model (data);

  check_no_long_static_edges (data, path);
}

/* The zoo's HuggingFace exports (tests/zoo, made by `make zoo`), when
 * they are there. */
static void
test_zoo_no_long_static_edges (gconstpointer data)
{
  g_autofree char *path = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "fixtures-generated", "zoo", data,
                                            NULL);

  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_test_skip ("no zoo export here: make zoo writes it");
      return;
    }
  check_no_long_static_edges (data, path);
}

/* The three Gather indices of transformer24's layers.0 are shared by the
 * 24 layers: each Gather lists its own, and the Constants are not drawn. */
static void
test_transformer_constants_at_readers (void)
{
  g_autofree char *path = exported_model ("transformer24");
  g_autoptr (GError) error = NULL;
  g_autoptr (GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_autoptr (GraftLayout) layout = NULL;
  g_autoptr (GraftScene) scene = NULL;
  GraftGraph *graph;
  GraftValue *indices;
  GraftNode *reader = NULL;
  int index;
  gboolean listed = FALSE;

  g_assert_no_error (error);
  graph = graft_model_get_graph (model);
  indices = g_hash_table_lookup (graph->value_by_name, "/layers.0/self_attn/Constant_output_0");
  g_assert_nonnull (indices);
  g_assert_cmpuint (indices->consumers->len, ==, 24);
  layout = graft_layout_new (graph);
  g_assert_true (graft_layout_is_value_shared (layout, indices));
  graft_layout_expand_all (layout);
  scene = compute (layout);

  g_assert_cmpint (graft_scene_find_node (scene, indices->producer), ==, -1);
  for (guint i = 0; i < graft_scene_get_n_edges (scene); i++)
    g_assert_true (graft_scene_get_edge (scene, i)->value != indices);
  for (guint i = 0; i < indices->consumers->len; i++)
    if (strcmp (((GraftNode *) g_ptr_array_index (indices->consumers, i))->name, "/layers.7/self_attn/Gather") == 0)
      reader = g_ptr_array_index (indices->consumers, i);
  g_assert_nonnull (reader);
  index = graft_scene_find_node (scene, reader);
  g_assert_cmpint (index, >=, 0);
  for (char **line = graft_scene_get_node (scene, index)->lines; *line != NULL; line++)
    listed |= strcmp (*line, "indices = 0 · shared ×24") == 0;
  g_assert_true (listed);
}

int
main (int argc, char **argv)
{
  static const char *const models[] = { "transformer24", "transformer24_dynamo", "bert", "bert_dynamo",
                                        "gpt2", "gpt2_dynamo" };

  static const char *const zoo[] = { "hf_bert/ts.onnx", "hf_bert/dynamo.onnx", "hf_llama/dynamo.onnx",
                                     "hf_gpt2/dynamo.onnx" };

  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/shared-values/transformer24-constants", test_transformer_constants_at_readers);
  for (gsize i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *test_path = g_strdup_printf ("/shared-values/no-long-edges/%s", models[i]);

      g_test_add_data_func (test_path, models[i], test_no_long_static_edges);
    }
  for (gsize i = 0; i < G_N_ELEMENTS (zoo); i++)
    {
      g_autofree char *test_path = g_strdup_printf ("/shared-values/no-long-edges/zoo/%s", zoo[i]);

      g_test_add_data_func (test_path, zoo[i], test_zoo_no_long_static_edges);
    }
  return g_test_run ();
}
