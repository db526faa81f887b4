/* Loads each file given N times through graft_model_load and prints the
 * best wall times in milliseconds: "<path> <lazy_ms> <full_ms> <nodes>
 * <tensors>". lazy: the load as Graft does it (weights stay slices of the
 * mapped file until something reads them); full: the same load followed by
 * reading every weight's bytes (a checksum over them, so nothing is
 * skipped), which is what torch.jit.load does eagerly. Used by
 * tests/bench/bench-torchscript. */
#include <stdio.h>
#include <stdlib.h>
#include "loader.h"

int
main (int argc, char **argv)
{
  if (argc < 3)
    {
      fprintf (stderr, "usage: %s REPEAT FILE...\n", argv[0]);
      return 2;
    }
  int repeat = atoi (argv[1]);
  for (int i = 2; i < argc; i++)
    {
      double best = -1, best_full = -1;
      guint nodes = 0, tensors = 0;
      for (int r = 0; r < MAX (repeat, 1); r++)
        {
          g_autoptr(GError) error = NULL;
          gint64 t0 = g_get_monotonic_time ();
          g_autoptr(GraftModel) model = graft_model_load (argv[i], NULL, NULL, NULL, &error);
          gint64 t1 = g_get_monotonic_time ();
          if (model == NULL)
            {
              fprintf (stderr, "%s\n", error->message);
              return 1;
            }
          GPtrArray *all = graft_model_get_tensors (model);
          guint64 checksum = 0;
          for (guint t = 0; t < all->len; t++)
            {
              GBytes *bytes = graft_tensor_get_data (g_ptr_array_index (all, t), &error);  /* the tensor's */
              gsize size = 0;
              const guint8 *data = bytes != NULL ? g_bytes_get_data (bytes, &size) : NULL;
              if (bytes == NULL)
                {
                  fprintf (stderr, "%s\n", error->message);
                  return 1;
                }
              /* one byte per page is a read of every page */
              for (gsize k = 0; k < size; k += 4096)
                checksum += data[k];
            }
          gint64 t2 = g_get_monotonic_time ();
          if (checksum == G_MAXUINT64)
            fprintf (stderr, "checksum %" G_GUINT64_FORMAT "\n", checksum);
          double ms = (double) (t1 - t0) / 1000.0, full_ms = (double) (t2 - t0) / 1000.0;
          if (best < 0 || ms < best)
            best = ms;
          if (best_full < 0 || full_ms < best_full)
            best_full = full_ms;
          nodes = graft_graph_count_nodes_recursive (graft_model_get_graph (model));
          tensors = graft_model_get_tensors (model)->len;
        }
      printf ("%s %.2f %.2f %u %u\n", argv[i], best, best_full, nodes, tensors);
    }
  return 0;
}
