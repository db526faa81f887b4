/* graft-cli render: being written; see app/cli.h. */
#include "cli.h"

int
graft_cli_render (int argc, char **argv)
{
  graft_cli_print_error ("'render' is not available in this build yet");
  return 1;
}
