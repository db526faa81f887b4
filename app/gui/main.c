#include <glib/gi18n.h>

#include "application.h"
#include "runtime/runtime.h"
#include "renderer-choice.h"

int
main (int argc, char *argv[])
{
  g_autoptr(GraftApplication) app = NULL;

  graft_runtime_quiet_blas ();
  g_set_application_name ("Graft");
  /* Before GApplication starts its D-Bus thread: the choice sets
   * GSK_RENDERER, and the environment is not thread-safe. Without a
   * display (graft --version on a server) there is nothing to choose. */
  if (gtk_init_check ())
    graft_renderer_choose (gdk_display_get_default ());
  app = graft_application_new ();
  return g_application_run (G_APPLICATION (app), argc, argv);
}
