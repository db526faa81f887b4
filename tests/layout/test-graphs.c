#include "test-graphs.h"

static GraftValue *
shaped_value (GraftGraph *graph, const char *name, gint64 channels)
{
  GraftValue *value = graft_graph_ensure_value (graph, name);
  gint64 dims[4] = { 1, channels, 8, 8 };

  value->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&value->shape, 4, dims);
  return value;
}

GraftGraph *
test_graph_new_blocks (guint n_stages, guint n_blocks, guint n_ops)
{
  GraftGraph *graph = graft_graph_new ("blocks");
  GraftValue *current = shaped_value (graph, "x", 16);

  graft_graph_add_input (graph, current);
  for (guint s = 0; s < n_stages; s++)
    for (guint b = 0; b < n_blocks; b++)
      {
        GraftValue *block_input = current;

        for (guint k = 0; k < n_ops; k++)
          {
            g_autofree char *name = g_strdup_printf ("/stage%u/block%u/Op%u", s, b, k);
            g_autofree char *out_name = g_strdup_printf ("%s_out", name);
            GraftNode *node = graft_graph_add_node (graph, NULL, k == 0 ? "Conv" : "Relu", name);
            GraftValue *out = shaped_value (graph, out_name, 16);

            graft_node_add_input (node, current);
            if (k == 0)
              {
                g_autofree char *weight_name = g_strdup_printf ("%s.weight", name);
                gint64 dims[4] = { 16, 16, 3, 3 };
                gint64 kernel[2] = { 3, 3 };
                GraftValue *weight = graft_graph_ensure_value (graph, weight_name);
                GraftTensor *tensor = graft_tensor_new (weight_name, GRAFT_DTYPE_FLOAT32, 4, dims);

                weight->dtype = GRAFT_DTYPE_FLOAT32;
                graft_shape_init_fixed (&weight->shape, 4, dims);
                graft_graph_add_initializer (graph, weight, tensor);
                graft_node_add_input (node, weight);
                graft_node_add_attribute (node, graft_attribute_new_ints ("kernel_shape", kernel, 2));
              }
            graft_node_add_output (node, out);
            current = out;
          }
        {
          g_autofree char *name = g_strdup_printf ("/stage%u/block%u/Add", s, b);
          g_autofree char *out_name = g_strdup_printf ("%s_out", name);
          GraftNode *add = graft_graph_add_node (graph, NULL, "Add", name);
          GraftValue *out = shaped_value (graph, out_name, 16);

          graft_node_add_input (add, current);
          graft_node_add_input (add, block_input);
          graft_node_add_output (add, out);
          current = out;
        }
      }
  {
    GraftNode *last = graft_graph_add_node (graph, NULL, "Softmax", "/head/Softmax");
    GraftValue *y = shaped_value (graph, "y", 16);

    graft_node_add_input (last, current);
    graft_node_add_output (last, y);
    graft_graph_add_output (graph, y);
  }
  graft_graph_build_groups_from_names (graph);
  return graph;
}
