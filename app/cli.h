/* graft-cli subcommands. Each returns the process exit status:
 * 0 success, 1 the input could not be handled (one line on stderr says
 * why), 2 bad usage. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include "runtime/runtime.h"
#include "debug/value-check.h"

int graft_cli_info (int argc, char **argv);
int graft_cli_render (int argc, char **argv);
int graft_cli_run (int argc, char **argv);
int graft_cli_lint (int argc, char **argv);
int graft_cli_edit (int argc, char **argv);
int graft_cli_diff (int argc, char **argv);
int graft_cli_debug (int argc, char **argv);

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
/* The same, starting from the shapes model declares for its inputs (a
 * torch.export program's; nothing for other formats). */
GHashTable *graft_cli_parse_input_shapes_of (GraftModel *model, GPtrArray *shape_specs, GPtrArray *dynamic_specs,
                                             GError **error);

/* Prints "graft-cli: <message>" on stderr as one line. */
void graft_cli_print_error (const char *format, ...) G_GNUC_PRINTF (1, 2);

/* Tensors for rt's inputs (input name → GraftRtTensor*, owned): files given
 * as [NAME=]FILE (.npy or .pb; by name, stored name or position), seeded
 * random data of the declared shapes for the rest when random (symbolic
 * dims from NAME=VALUE specs); each checked against its declared type. */
GHashTable *graft_cli_make_inputs (GraftRuntime *rt, char **files, char **dim_specs, gboolean random, gint64 seed,
                                   GError **error);

/* run --validate's report: text (the sources of NaN/Inf with their
 * inputs' ranges, then every value holding some) or JSON with the outputs'
 * ranges (output_values: GraftValue*, outputs: their tensors, or NULL). */
void graft_cli_print_value_check (GraftValueCheck *check, GPtrArray *output_values, GPtrArray *outputs, gboolean json);

/* A member of the object being built: a string (NULL: null), a number, a
 * boolean, a double (NaN and Inf: null). */
void graft_cli_json_string (JsonBuilder *b, const char *member, const char *value);
void graft_cli_json_int (JsonBuilder *b, const char *member, gint64 value);
void graft_cli_json_bool (JsonBuilder *b, const char *member, gboolean value);
void graft_cli_json_double (JsonBuilder *b, const char *member, double v);
/* Prints the built document, indented, and a newline on stdout. */
void graft_cli_json_print (JsonBuilder *b);

/* NAME=VALUE specs of symbolic dims into values (char* → gint64*, both
 * g_free'd). */
gboolean graft_cli_parse_dims (char **dims, GHashTable *values, GError **error);

/* info --cost: the cost report of model (analysis/cost.h) at fixed input
 * shapes (given_shapes: name → GraftShape*, dims: symbol → gint64*; other
 * symbolic dims are 1, said so), as text (groups to depth 2, the top
 * nodes by FLOPs) or JSON; with run, measured time and peak memory too. */
int graft_cli_print_cost (GraftModel *model, GHashTable *given_shapes, GHashTable *dims, gboolean run, gboolean json,
                          int top);
