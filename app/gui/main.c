#include <glib/gi18n.h>

#include "application.h"

int
main (int argc, char *argv[])
{
  g_autoptr(GraftApplication) app = NULL;

  g_set_application_name ("Graft");
  app = graft_application_new ();
  return g_application_run (G_APPLICATION (app), argc, argv);
}
