/* The real window against files users break (issue 20): a model rewritten
 * in place while it is shown (no SIGBUS, an offer to reload), and several
 * windows opening, expanding, running and closing models at once (also
 * run under ASan: no report, no leaked window). */
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>
#include <unistd.h>
#include "gui-fixtures.h"
#include "window-harness.h"
#include "../test-scratch.h"

static char *
sample_path (void)
{
  return g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
}

typedef struct {
  GraftWindow *window;
  const char *text;
} Waiting;

static gboolean
window_says (gpointer data)
{
  Waiting *w = data;
  return harness_find_label (GTK_WIDGET (w->window), w->text) != NULL;
}

static void
test_rewritten_while_shown (void)
{
  g_autofree char *sample = sample_path ();
  g_autofree char *dir = graft_test_scratch_dir ("graft-gui-rewrite-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "model.onnx", NULL);
  g_autofree char *contents = NULL;
  gsize length;
  GraftWindow *window = harness_window_new ();

  g_assert_true (g_file_get_contents (sample, &contents, &length, NULL));
  g_assert_true (g_file_set_contents (path, contents, (gssize) length, NULL));
  harness_open (window, path);
  g_autoptr(GHashTable) opened = harness_window_state (window);
  g_assert_cmpstr (g_hash_table_lookup (opened, "state"), ==, "model");

  /* A training script saving again: same inode, cut, then partly written. */
  FILE *f = fopen (path, "r+");
  g_assert_nonnull (f);
  g_assert_cmpint (ftruncate (fileno (f), 0), ==, 0);
  g_assert_cmpuint (fwrite (contents, 1, length / 2, f), ==, length / 2);
  fclose (f);
  Waiting w = { window, "changed on disk" };
  harness_wait_for (window_says, &w);
  harness_screenshot (window, "hostile-changed-on-disk");

  /* The shown model still reads its weights (statistics, a run). */
  harness_activate (window, "win.select-node::/stem/stem.0/Conv");
  harness_activate (window, "win.show-run");
  harness_activate (window, "win.run");
  g_autoptr(GHashTable) ran = harness_window_state (window);
  g_test_message ("after the rewrite: run-status %s", (char *) g_hash_table_lookup (ran, "run-status"));
  g_assert_cmpstr (g_hash_table_lookup (ran, "state"), ==, "model");

  /* Reload reads the new (half) file: an error dialog over the model
   * still shown, not a crash. */
  harness_activate (window, "win.reload");
  g_autoptr(GHashTable) reloaded = harness_window_state (window);
  const char *dialog = g_hash_table_lookup (reloaded, "dialog-0");
  g_test_message ("after reload: state %s, dialog %s", (char *) g_hash_table_lookup (reloaded, "state"), dialog);
  harness_screenshot (window, "hostile-reload-truncated");
  g_assert_nonnull (dialog);
  g_assert_nonnull (strstr (dialog, "model.onnx"));
  g_autoptr(GPtrArray) dialogs = harness_list_dialogs (window);
  for (guint i = 0; i < dialogs->len; i++)
    gtk_window_destroy (dialogs->pdata[i]);

  /* The whole file back: Reload shows it again. */
  g_assert_true (g_file_set_contents (path, contents, (gssize) length, NULL));
  harness_activate (window, "win.reload");
  g_autoptr(GHashTable) again = harness_window_state (window);
  g_assert_cmpstr (g_hash_table_lookup (again, "state"), ==, "model");
  harness_window_close (window);
  g_unlink (path);
  g_rmdir (dir);
}

/* Three windows at once, each opening, expanding, running and closing,
 * interleaved so that their loads, layouts and runs overlap. */
static void
test_windows_concurrently (void)
{
  g_autofree char *sample = sample_path ();
  GraftWindow *windows[3];

  for (guint round = 0; round < 2; round++)
    {
      for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
        {
          windows[i] = harness_window_new ();
          graft_window_open_path (windows[i], sample);   /* not settled: the loads overlap */
        }
      for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
        harness_settle (windows[i]);
      for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
        {
          gtk_widget_activate_action (GTK_WIDGET (windows[i]), "win.expand-all", NULL);
          gtk_widget_activate_action (GTK_WIDGET (windows[i]), "win.show-run", NULL);
          gtk_widget_activate_action (GTK_WIDGET (windows[i]), "win.run", NULL);
        }
      /* One window closes while the others still lay out and run. */
      harness_window_close (windows[0]);
      for (guint i = 1; i < G_N_ELEMENTS (windows); i++)
        {
          harness_settle (windows[i]);
          g_autoptr(GHashTable) state = harness_window_state (windows[i]);
          g_test_message ("window %u: %s, run %s", i, (char *) g_hash_table_lookup (state, "state"),
                          (char *) g_hash_table_lookup (state, "run-status"));
          g_assert_cmpstr (g_hash_table_lookup (state, "state"), ==, "model");
        }
      for (guint i = 1; i < G_N_ELEMENTS (windows); i++)
        harness_window_close (windows[i]);
    }
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/hostile/rewritten-while-shown", test_rewritten_while_shown);
  g_test_add_func ("/gui/hostile/windows-concurrently", test_windows_concurrently);
  return g_test_run ();
}
