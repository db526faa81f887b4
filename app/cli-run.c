/* graft-cli run: being written; see app/cli.h. */
#include "cli.h"

int
graft_cli_run (int argc, char **argv)
{
  graft_cli_print_error ("'run' is not available in this build yet");
  return 1;
}
