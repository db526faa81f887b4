/* graft-cli subcommands. Each returns the process exit status:
 * 0 success, 1 the input could not be handled (one line on stderr says
 * why), 2 bad usage. */
#pragma once

#include <glib.h>

int graft_cli_info (int argc, char **argv);
int graft_cli_render (int argc, char **argv);
int graft_cli_run (int argc, char **argv);
int graft_cli_lint (int argc, char **argv);
int graft_cli_edit (int argc, char **argv);
int graft_cli_diff (int argc, char **argv);

/* From here on, stdout and stderr show control characters (terminal
 * escapes from names and metadata in the file) as visible \xNN escapes. */
void graft_cli_escape_control_output (void);

/* A name (or any text) from the file for a line of text output: newlines
 * and tabs too become \xNN, and bidi controls \uNNNN, so that a name can
 * neither start a fake line nor reverse the text after it. */
char *graft_cli_escape_name (const char *name);

int graft_cli_convert (int argc, char **argv);

/* --shape INPUT=1x3x224x224 and --dynamic INPUT:AXIS=NAME values as input
 * shapes for model/lower (name → GraftShape*), or NULL with an error. */
GHashTable *graft_cli_parse_input_shapes (GPtrArray *shape_specs, GPtrArray *dynamic_specs, GError **error);

/* Prints "graft-cli: <message>" on stderr as one line. */
void graft_cli_print_error (const char *format, ...) G_GNUC_PRINTF (1, 2);
