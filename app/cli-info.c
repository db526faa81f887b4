/* graft-cli info: being written; see app/cli.h. */
#include "cli.h"

int
graft_cli_info (int argc, char **argv)
{
  graft_cli_print_error ("'info' is not available in this build yet");
  return 1;
}
