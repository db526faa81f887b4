/* Loads each file given N times through graft_model_load and prints the
 * best wall time in milliseconds: "<path> <ms> <nodes> <tensors>". Used by
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
      double best = -1;
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
          double ms = (double) (t1 - t0) / 1000.0;
          if (best < 0 || ms < best)
            best = ms;
          nodes = graft_graph_count_nodes_recursive (graft_model_get_graph (model));
          tensors = graft_model_get_tensors (model)->len;
        }
      printf ("%s %.2f %u %u\n", argv[i], best, nodes, tensors);
    }
  return 0;
}
