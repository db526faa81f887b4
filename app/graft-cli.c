/* graft-cli: the headless side of Graft. No GTK is linked here. */
#include <stdio.h>
#include <string.h>
#include <locale.h>
#include "cli.h"
#include "graft-config.h"

typedef struct {
  const char *name;
  int (*run) (int argc, char **argv);
  const char *summary;
} GraftCliCommand;

static const GraftCliCommand commands[] = {
  { "info", graft_cli_info, "FILE [--json] [--cost [--run] [--dim NAME=V]]  describe a model, or what it costs" },
  { "render", graft_cli_render, "FILE -o OUT.{svg,png,pdf} [--expand-all] [--shape IN=1x3x224x224]...  draw the graph" },
  { "run", graft_cli_run, "MODEL [--input NAME=FILE]... [--random] [-o DIR] [--validate [--json]]  run a model" },
  { "lint", graft_cli_lint, "FILE [--json] [--onnx-export] [--target NAME|onnx[:OPSET]]  list problems; per deployment target: nodes and partitions (exit 1 on errors)" },
  { "edit", graft_cli_edit, "IN -o OUT [--dynamic IN:AXIS=NAME]... [--shape IN=1x3x224x224]... "
                            "[--bypass NODE]... [--delete NODE]... [--extract IN,..:OUT,..]  rewrite and save as ONNX" },
  { "diff", graft_cli_diff, "A B | MODEL --reference DIR [--json] [--input NAME=FILE]... [--random] [--shape NAME=DIMS] [--dim NAME=V]  compare two models, or values with .npy files (exit 1 if they differ)" },
  { "debug", graft_cli_debug, "reduce MODEL -o SMALL.onnx (--fails-in graft | --nan | --mismatch REF | --command CMD)  "
                              "find the smallest failing subgraph" },
  { "convert", graft_cli_convert, "IN.pt -o OUT.onnx [--opset N] [--shape IN=1x3x224x224]... [--dynamic IN:AXIS=NAME]...  TorchScript to ONNX" },
};

void
graft_cli_print_error (const char *format, ...)
{
  va_list args;
  g_autofree char *message = NULL;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  /* One line: the CLI contract says errors are a single line on stderr. */
  g_strdelimit (message, "\n", ' ');
  fprintf (stderr, "graft-cli: %s\n", message);
}

static void
print_usage (FILE *out)
{
  fprintf (out, "Usage: graft-cli COMMAND [OPTIONS]\n\nCommands:\n");
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    fprintf (out, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf (out, "\nRun 'graft-cli COMMAND --help' for a command's options.\n");
}

int
main (int argc, char **argv)
{
  graft_runtime_quiet_blas ();
  setlocale (LC_ALL, "");
  /* Numbers in JSON and file formats must not depend on the locale. */
  setlocale (LC_NUMERIC, "C");

  if (argc < 2 || strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0)
    {
      print_usage (argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
  if (strcmp (argv[1], "--version") == 0)
    {
      printf ("graft-cli %s\n", GRAFT_VERSION);
      return 0;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (argv[1], commands[i].name) == 0)
      {
        graft_cli_escape_control_output ();
        int status = commands[i].run (argc - 1, argv + 1);
        fflush (stdout);
        fflush (stderr);
        return status;
      }

  graft_cli_print_error ("unknown command '%s' (try --help)", argv[1]);
  return 2;
}
